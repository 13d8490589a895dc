"""Sink positions in the consumer group Kafka Connect uses for a sink connector (``connect-NAME``).

Connect's sink tasks commit what they consumed to the group ``connect-`` + connector name
(``SinkUtils.consumerGroupId``; ``consumer.override.group.id`` replaces it). sparkcat keeps its
positions in the offsets store and Spark's checkpoint, and mirrors them into that group after each
batch, so ``kafka-consumer-groups``, lag monitors and a Connect worker taking the connector over
see them; a sink whose offsets store has nothing starts from the group's positions (a connector
coming from Connect). Driver only.

The group is written through a consumer of the group that never joins it (``GroupCommitters``), not the
AdminClient's AlterConsumerGroupOffsets: that is a coordinator-targeted admin request, which librdkafka 2.x can
abort the whole process on when the coordinator's connection drops mid-request (see
``sparkcat.kafka.group_members``). A consumer's commit goes through its own group handle's OffsetCommit, the path
every consumer takes. Generation -1 and no member id: the coordinator accepts it only while the group has no
members, as it accepts the AdminClient's (``UNKNOWN_MEMBER_ID`` while a Connect worker runs the connector).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from confluent_kafka import KafkaError

log = logging.getLogger(__name__)

TIMEOUT_S = 30.0
_RETRIABLE = frozenset({KafkaError.COORDINATOR_LOAD_IN_PROGRESS, KafkaError.COORDINATOR_NOT_AVAILABLE,
                        KafkaError.NOT_COORDINATOR, KafkaError._TIMED_OUT, KafkaError._TRANSPORT,
                        KafkaError._WAIT_COORD, KafkaError.REQUEST_TIMED_OUT,
                        KafkaError._DESTROY})  # the committer was closed between taking it and committing
#: One commit attempt's bound: how long a commit waits for the coordinator (librdkafka defers it up to
#: ``session.timeout.ms``) and for its answer (``socket.timeout.ms``); ``_retrying`` tries again within its timeout.
ATTEMPT_TIMEOUT_MS = 5000


def sink_group_id(connector: str, config: Mapping[str, str]) -> str:
    """``connect-NAME``, or the connector's ``consumer.override.group.id`` as Connect honours it.

    >>> sink_group_id("orders", {}), sink_group_id("orders", {"consumer.override.group.id": "g"})
    ('connect-orders', 'g')
    """
    return config.get("consumer.override.group.id") or f"connect-{connector}"


def commit_positions(consumer_conf: Mapping[str, Any], group: str, positions: Iterable[tuple[str, int, int]],
                     timeout_s: float = TIMEOUT_S) -> None:
    """Set the group's committed offset of each (topic, partition) to the next offset to read.

    Kafka refuses this while the group has live members (a Connect worker running the same
    connector): the error (``UNKNOWN_MEMBER_ID``) is the caller's to report.
    """
    from confluent_kafka import KafkaException, TopicPartition
    tps = [TopicPartition(t, p, o) for t, p, o in positions]
    if not tps:
        return
    try:  # a committer closed meanwhile (idle, or its connector deleted) is made again by the next attempt
        result = _retrying(lambda: COMMITTERS.get(consumer_conf, group).commit(tps), timeout_s)
    except KafkaException as exc:
        first = tps[0]
        raise RuntimeError(f"committing {first.topic}-{first.partition} to group {group}: {exc.args[0]}") from exc
    for tp in result or []:
        if tp.error is not None:
            raise RuntimeError(f"committing {tp.topic}-{tp.partition} to group {group}: {tp.error}")


@dataclass
class _Committer:
    """A consumer of one group that never subscribes: it only commits. Its lock keeps a close from running
    into a commit in flight (the mirror's thread and the offsets API's herder thread share it)."""

    consumer: Any
    lock: threading.Lock = field(default_factory=threading.Lock)
    closed: bool = False
    used_at: float = field(default_factory=time.monotonic)

    def commit(self, tps: list) -> Any:
        with self.lock:
            if self.closed:
                from confluent_kafka import KafkaError, KafkaException
                raise KafkaException(KafkaError(KafkaError._DESTROY, "the group's committer was closed"))
            self.used_at = time.monotonic()
            return self.consumer.commit(offsets=tps, asynchronous=False)

    def close(self) -> None:
        with self.lock:
            if not self.closed:
                self.closed = True
                self.consumer.close()


IDLE_CLOSE_S = 60.0  # a group's committer unused this long is closed (``GroupCommitters.close_idle``)


class GroupCommitters:
    """A clearly named cache: one committing consumer per (group, settings), kept for the sink's life.

    A consumer made per commit costs a client start and a coordinator look-up (about 65 ms against a local
    broker, against 6 ms for a commit on a kept one), on the mirror's single thread after every sink batch.
    Closed with ``drop(group)`` when the connector is deleted, ``drop_all`` when the driver stops, and
    ``close_idle`` once unused for ``IDLE_CLOSE_S`` (an idle sink commits nothing, and a kept consumer's threads
    cost about 0.01% of a core each: 2% with 200 sinks); a commit after a close makes a new one.
    """

    def __init__(self) -> None:
        self._by_key: dict[tuple[str, tuple[tuple[str, str], ...]], _Committer] = {}
        self._lock = threading.Lock()

    def get(self, consumer_conf: Mapping[str, Any], group: str) -> _Committer:
        from confluent_kafka import Consumer
        conf = {**consumer_conf, "group.id": group, "enable.auto.commit": False,
                "session.timeout.ms": ATTEMPT_TIMEOUT_MS, "socket.timeout.ms": ATTEMPT_TIMEOUT_MS}
        key = (group, tuple(sorted((str(k), str(v)) for k, v in conf.items())))
        with self._lock:
            committer = self._by_key.get(key)
            if committer is None or committer.closed:
                committer = self._by_key[key] = _Committer(Consumer(conf))
            committer.used_at = time.monotonic()  # taken now: not idle for ``close_idle`` until IDLE_CLOSE_S again
            return committer

    def drop(self, group: str) -> None:
        """Close the committers of ``group`` (its connector was deleted)."""
        with self._lock:
            gone = [self._by_key.pop(k) for k in [k for k in self._by_key if k[0] == group]]
        for committer in gone:
            committer.close()

    def open_groups(self) -> set[str]:
        """The groups with a committer open now (its consumer's threads and connections alive)."""
        with self._lock:
            return {group for group, _ in self._by_key}

    def close_idle(self, idle_s: float | None = None) -> int:
        """Close the committers unused for ``idle_s`` (``IDLE_CLOSE_S``); how many."""
        idle_s = IDLE_CLOSE_S if idle_s is None else idle_s
        now = time.monotonic()
        with self._lock:
            idle = [k for k, c in self._by_key.items() if now - c.used_at >= idle_s]
            gone = [self._by_key.pop(k) for k in idle]
        for committer in gone:
            committer.close()
        return len(gone)

    def drop_all(self) -> None:
        """Close every committer (the driver stops)."""
        with self._lock:
            gone, self._by_key = list(self._by_key.values()), {}
        for committer in gone:
            committer.close()


COMMITTERS = GroupCommitters()


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
