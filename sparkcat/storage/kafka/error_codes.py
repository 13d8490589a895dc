"""Which librdkafka errors say the Kafka stores are unavailable for now (retried) and which say this writer was
fenced, as opposed to a refusal of what was asked (reported with its reason)."""

from __future__ import annotations

from confluent_kafka import KafkaError

__all__ = ["FENCED_CODES", "UNAVAILABLE_CODES", "unavailable"]

#: A newer writer with the same transactional id took over.
FENCED_CODES = frozenset({KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH})
#: Errors of reaching the cluster, not of what was asked: the store is unavailable for now. Besides
#: transport and timeouts, the broker errors Kafka's Java client treats as retriable while partition
#: leadership moves (a broker restarted or crashed): OFFSET_NOT_AVAILABLE, for one, is what a new
#: leader answers until its high watermark caught up (found by the chaos soak, bench/soak.py).
UNAVAILABLE_CODES = frozenset({
    KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN, KafkaError._TIMED_OUT, KafkaError._MSG_TIMED_OUT,
    KafkaError._WAIT_COORD, KafkaError._RESOLVE, KafkaError.REQUEST_TIMED_OUT, KafkaError.NETWORK_EXCEPTION,
    KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_NOT_AVAILABLE, KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    KafkaError.LEADER_NOT_AVAILABLE, KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.NOT_ENOUGH_REPLICAS,
    KafkaError.NOT_ENOUGH_REPLICAS_AFTER_APPEND, KafkaError.UNKNOWN_LEADER_EPOCH, KafkaError.FENCED_LEADER_EPOCH,
    KafkaError._UNKNOWN_PARTITION, KafkaError.CONCURRENT_TRANSACTIONS, KafkaError.OFFSET_NOT_AVAILABLE,
    KafkaError.REPLICA_NOT_AVAILABLE, KafkaError.KAFKA_STORAGE_ERROR, KafkaError.NOT_CONTROLLER,
    KafkaError.PREFERRED_LEADER_NOT_AVAILABLE, KafkaError.ELIGIBLE_LEADERS_NOT_AVAILABLE,
    KafkaError.LISTENER_NOT_FOUND, KafkaError.UNSTABLE_OFFSET_COMMIT, KafkaError.THROTTLING_QUOTA_EXCEEDED})


def unavailable(err: KafkaError) -> bool:
    """Whether ``err`` says the cluster could not be reached or answer in time (retriable), not a refusal.

    >>> unavailable(KafkaError(KafkaError._TRANSPORT)), unavailable(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED))
    (True, False)
    >>> unavailable(KafkaError(KafkaError.OFFSET_NOT_AVAILABLE))  # a new partition leader catching up
    True
    """
    return err.code() in UNAVAILABLE_CODES
