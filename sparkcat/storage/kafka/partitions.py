"""Reading every partition of a multi-partition internal topic (Connect's offsets and status topics).

Kafka Connect creates its offsets topic with 25 partitions and its status topic with 5; a key
always lands in the same partition, so reading partitions one after another keeps each key's
records in order, which is all a last-record-per-key view needs.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from confluent_kafka import OFFSET_BEGINNING, Consumer, IsolationLevel, KafkaError, KafkaException, Message, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from sparkcat.errors import StorageError
from sparkcat.storage.log import LogRecord

# Answers for a partition whose topic was created a moment ago and has no leader in metadata yet.
NOT_READY_CODES = frozenset({KafkaError._UNKNOWN_PARTITION, KafkaError.UNKNOWN_TOPIC_OR_PART,
                             KafkaError.LEADER_NOT_AVAILABLE, KafkaError.NOT_LEADER_FOR_PARTITION,
                             KafkaError._UNKNOWN_TOPIC,
                             # a topic created a moment ago: the client may know a leader epoch the broker
                             # has not applied yet (seen in CI as "Leader epoch is newer than broker epoch")
                             KafkaError.UNKNOWN_LEADER_EPOCH, KafkaError.FENCED_LEADER_EPOCH,
                             # ListOffsets before any leader is known: "Failed to query partition leaders: No
                             # leaders found" (a driver's first read of a topic it just created, on a loaded
                             # machine); and a new leader whose high watermark is still catching up
                             KafkaError._NOENT, KafkaError.OFFSET_NOT_AVAILABLE})
_TRANSIENT_CODES = frozenset({KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN, KafkaError._TIMED_OUT})


def watermarks(consumer: Consumer, tp: TopicPartition, timeout_s: float) -> tuple[int, int]:
    """(low, high) watermark of ``tp``; waits while a topic created a moment ago has no leader yet."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            low, high = consumer.get_watermark_offsets(tp, timeout=timeout_s)
            return max(0, low), max(0, high)
        except KafkaException as exc:
            err = exc.args[0] if exc.args else None
            if not isinstance(err, KafkaError) or err.code() not in NOT_READY_CODES or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def stable_ends(admin: AdminClient, topic: str, count: int, timeout_s: float) -> dict[int, int]:
    """Every partition's last stable offset (read_committed end) in one ListOffsets request per broker.

    Waits while a topic created a moment ago has partitions without a leader yet.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        futures = admin.list_offsets({TopicPartition(topic, p): OffsetSpec.latest() for p in range(count)},
                                     isolation_level=IsolationLevel.READ_COMMITTED, request_timeout=timeout_s)
        try:
            return {tp.partition: max(0, f.result(timeout=timeout_s + 5).offset) for tp, f in futures.items()}
        except KafkaException as exc:
            err = exc.args[0] if exc.args else None
            if not isinstance(err, KafkaError) or err.code() not in NOT_READY_CODES or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def read_partitions(consumer: Consumer, admin: AdminClient, topic: str, count: int, cursor: dict[int, int],
                    timeout_s: float, to_record: Callable[[Message], LogRecord],
                    error: Callable[[str, KafkaError | str], StorageError]) -> tuple[list[LogRecord], dict[int, int]]:
    """Records of every partition after ``cursor`` ({partition: next offset}) up to its end now, and the new cursor.

    One ListOffsets round finds the partitions with something after their cursor (most of
    Connect's 25 offsets partitions are empty); only those are fetched, together, each until its
    end-of-partition event.
    """
    ends = stable_ends(admin, topic, count, timeout_s)
    assign = [TopicPartition(topic, p, cursor.get(p, OFFSET_BEGINNING)) for p in range(count)
              if cursor.get(p, 0) < ends.get(p, 0)]
    if not assign:
        return [], cursor
    per_partition = poll_to_ends(consumer, assign, cursor, timeout_s, to_record, error)
    records: list[LogRecord] = []
    after = dict(cursor)
    for p in sorted(per_partition):
        records += per_partition[p]
        after[p] = per_partition[p][-1].offset + 1
    return records, after


def poll_to_ends(consumer: Consumer, assign: list[TopicPartition], start: dict[int, int], timeout_s: float,
                 to_record: Callable[[Message], LogRecord],
                 error: Callable[[str, KafkaError | str], StorageError]) -> dict[int, list[LogRecord]]:
    """Fetch the ``assign``ed partitions, each until its end-of-partition event: {partition: records}.

    Records before a partition's ``start`` offset are dropped; the consumer is unassigned afterwards.
    """
    per_partition: dict[int, list[LogRecord]] = {}
    consumer.assign(assign)
    try:
        pending = {tp.partition for tp in assign}
        deadline = time.monotonic() + timeout_s
        while pending:
            msg = consumer.poll(min(1.0, max(0.0, deadline - time.monotonic())))
            if msg is None:
                if time.monotonic() > deadline:
                    raise error("reading", f"no progress for {timeout_s}s")
                continue
            err = msg.error()
            if err is None:
                if msg.offset() >= start.get(msg.partition(), 0):
                    per_partition.setdefault(msg.partition(), []).append(to_record(msg))
                deadline = time.monotonic() + timeout_s
            elif err.code() == KafkaError._PARTITION_EOF:
                pending.discard(msg.partition())
            elif err.fatal() or err.code() not in _TRANSIENT_CODES:
                raise error("reading", err)
    finally:
        consumer.unassign()
    return per_partition
