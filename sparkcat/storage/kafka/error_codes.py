"""Which librdkafka errors say the Kafka stores are unavailable for now (retried) and which say this writer was
fenced, as opposed to a refusal of what was asked (reported with its reason)."""

from __future__ import annotations

from confluent_kafka import KafkaError

__all__ = ["FENCED_CODES", "UNAVAILABLE_CODES", "unavailable"]

#: A newer writer with the same transactional id took over.
FENCED_CODES = frozenset({KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH})
#: Errors of reaching the cluster, not of what was asked: the store is unavailable for now.
UNAVAILABLE_CODES = frozenset({
    KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN, KafkaError._TIMED_OUT, KafkaError._MSG_TIMED_OUT,
    KafkaError._WAIT_COORD, KafkaError._RESOLVE, KafkaError.REQUEST_TIMED_OUT, KafkaError.NETWORK_EXCEPTION,
    KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_NOT_AVAILABLE, KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    KafkaError.LEADER_NOT_AVAILABLE, KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.NOT_ENOUGH_REPLICAS,
    KafkaError.NOT_ENOUGH_REPLICAS_AFTER_APPEND, KafkaError.UNKNOWN_LEADER_EPOCH, KafkaError.FENCED_LEADER_EPOCH,
    KafkaError._UNKNOWN_PARTITION, KafkaError.CONCURRENT_TRANSACTIONS})


def unavailable(err: KafkaError) -> bool:
    """Whether ``err`` says the cluster could not be reached or answer in time (retriable), not a refusal.

    >>> unavailable(KafkaError(KafkaError._TRANSPORT)), unavailable(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED))
    (True, False)
    """
    return err.code() in UNAVAILABLE_CODES
