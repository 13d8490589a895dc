"""Sink positions in the consumer group Kafka Connect uses for a sink connector (``connect-NAME``).

Connect's sink tasks commit what they consumed to the group ``connect-`` + connector name
(``SinkUtils.consumerGroupId``; ``consumer.override.group.id`` replaces it). sparkcat keeps its
positions in the offsets store and Spark's checkpoint, and mirrors them into that group after each
batch, so ``kafka-consumer-groups``, lag monitors and a Connect worker taking the connector over
see them; a sink whose offsets store has nothing starts from the group's positions (a connector
coming from Connect). Driver only: the admin client is passed in.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from confluent_kafka import KafkaError

log = logging.getLogger(__name__)

TIMEOUT_S = 30.0
_RETRIABLE = frozenset({KafkaError.COORDINATOR_LOAD_IN_PROGRESS, KafkaError.COORDINATOR_NOT_AVAILABLE,
                        KafkaError.NOT_COORDINATOR, KafkaError._TIMED_OUT, KafkaError._TRANSPORT})


def sink_group_id(connector: str, config: Mapping[str, str]) -> str:
    """``connect-NAME``, or the connector's ``consumer.override.group.id`` as Connect honours it.

    >>> sink_group_id("orders", {}), sink_group_id("orders", {"consumer.override.group.id": "g"})
    ('connect-orders', 'g')
    """
    return config.get("consumer.override.group.id") or f"connect-{connector}"


def commit_positions(admin: Any, group: str, positions: Iterable[tuple[str, int, int]],
                     timeout_s: float = TIMEOUT_S) -> None:
    """Set the group's committed offset of each (topic, partition) to the next offset to read.

    Kafka refuses this while the group has live members (a Connect worker running the same
    connector): the KafkaException is the caller's to report.
    """
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    tps = [TopicPartition(t, p, o) for t, p, o in positions]
    if not tps:
        return

    def alter() -> list:
        futures = admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(group, tps)],
                                                     request_timeout=timeout_s)
        return [f.result(timeout=timeout_s + 5) for f in futures.values()]
    for result in _retrying(alter, timeout_s):
        for tp in result.topic_partitions:
            if tp.error is not None:
                raise RuntimeError(f"committing {tp.topic}-{tp.partition} to group {group}: {tp.error}")


def _retrying(call: Callable[[], Any], timeout_s: float = TIMEOUT_S) -> Any:
    """``call()``, again while the group coordinator is loading or moving (a broker that just started)."""
    from confluent_kafka import KafkaError, KafkaException
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return call()
        except KafkaException as exc:
            err = exc.args[0] if exc.args else None
            if not isinstance(err, KafkaError) or err.code() not in _RETRIABLE or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def committed_positions(consumer_conf: Mapping[str, str], group: str,
                        partitions: Iterable[tuple[str, int]]) -> list[tuple[str, int, int]]:
    """(topic, partition, next offset) of each of ``partitions`` the group has committed.

    Asked through a consumer of the group that never joins it (``committed``), not the AdminClient's
    ListConsumerGroupOffsets: librdkafka 2.x crashes the process (SIGSEGV in ``rd_kafka_cgrp_op``) when an
    AdminClient's OffsetFetch response says the coordinator is still loading, as on a broker just started.
    """
    from confluent_kafka import Consumer, TopicPartition
    wanted = [TopicPartition(t, p) for t, p in partitions]
    if not wanted:
        return []
    consumer = Consumer({**consumer_conf, "group.id": group, "enable.auto.commit": False})
    try:
        got = _retrying(lambda: consumer.committed(wanted, timeout=TIMEOUT_S))
    finally:
        consumer.close()
    return [(tp.topic, tp.partition, tp.offset) for tp in got if tp.error is None and tp.offset >= 0]
