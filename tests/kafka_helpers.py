"""Reading and writing topics in tests, with assign() only: no consumer group to join, so reads start at once."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from sparkcat.storage.kafka.partitions import watermarks


def create_topic(bootstrap: str, topic: str, partitions: int = 1) -> None:
    """Create ``topic`` (already there is fine) and return once every partition's leader answers.

    A partition is not served the moment the controller created it: a producer that writes at once
    gets NOT_LEADER_FOR_PARTITION and retries, which reorders records unless it is idempotent.
    """
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(topic, partitions, 1)])
    for f in futures.values():
        try:
            f.result(timeout=30)
        except Exception as e:  # already there is fine
            if "TOPIC_ALREADY_EXISTS" not in str(e):
                raise
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"test-{uuid.uuid4().hex}"})
    try:
        for p in range(partitions):  # sparkcat's own wait while a new partition's leader is not ready
            watermarks(c, TopicPartition(topic, p), 30.0)
    finally:
        c.close()


def produce(bootstrap: str, topic: str, values: list[bytes], partition: int | None = None) -> None:
    p = Producer(ordered_producer_settings(bootstrap))
    for v in values:
        if partition is None:
            p.produce(topic, value=v)
        else:
            p.produce(topic, value=v, partition=partition)
    assert p.flush(30) == 0


def read_topic(bootstrap: str, topic: str, timeout_s: float = 20.0,
               isolation: str = "read_committed") -> list[tuple[int, int, bytes | None, bytes | None]]:
    """Every record now in ``topic`` as (partition, offset, key, value); see ``read_topic_with_timestamps``."""
    return [r[:4] for r in read_topic_with_timestamps(bootstrap, topic, timeout_s, isolation)]


MISSING_TOPIC = (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC)


def ordered_producer_settings(bootstrap: str, **more: object) -> dict:
    """A test producer whose records land in the order they were produced, retries included (idempotent:
    a plain producer's retried request can land after later ones, and a test comparing orders then fails)."""
    return {"bootstrap.servers": bootstrap, "linger.ms": 5, "enable.idempotence": True, **more}


class IncompleteRead(AssertionError):
    """A topic could not be read to its end within the timeout: the test fails rather than check a prefix."""


def read_topic_with_timestamps(bootstrap: str, topic: str, timeout_s: float = 20.0, isolation: str = "read_committed"
                               ) -> list[tuple[int, int, bytes | None, bytes | None, int]]:
    """Every record now in ``topic`` as (partition, offset, key, value, timestamp).

    "Now": each partition is read up to its end offset when the read began (records written later are
    left out), or to its end (EOF) if that comes first, as when the last offset is a transaction marker.
    ``read_committed`` (librdkafka's default, and sparkcat's): records of open or aborted transactions
    are left out; ``read_uncommitted`` shows them too. A topic that does not exist has no records.
    Never a partial read: when a partition cannot be read that far within ``timeout_s`` (or the topic's
    metadata cannot be had), ``IncompleteRead`` says which partitions, their end offsets and what was read.
    """
    deadline = time.monotonic() + timeout_s
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"test-{uuid.uuid4().hex}",
                  "enable.partition.eof": True, "enable.auto.commit": False, "isolation.level": isolation})
    try:
        while True:
            md = c.list_topics(topic, timeout=max(1.0, min(10.0, deadline - time.monotonic()))).topics.get(topic)
            if md is None or (md.error is not None and md.error.code() in MISSING_TOPIC):
                return []
            if md.error is None:
                break
            if time.monotonic() >= deadline:  # e.g. LEADER_NOT_AVAILABLE just after the topic's creation
                raise IncompleteRead(f"could not read topic {topic!r} within {timeout_s}s: metadata error {md.error}")
            time.sleep(0.2)
        parts = sorted(md.partitions)
        ends = {p: watermarks(c, TopicPartition(topic, p), max(1.0, deadline - time.monotonic()))[1] for p in parts}
        c.assign([TopicPartition(topic, p, 0) for p in parts])
        pending, out = {p for p in parts if ends[p] > 0}, []
        while pending and time.monotonic() < deadline:
            msg = c.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    pending.discard(msg.partition())
                    continue
                raise RuntimeError(str(msg.error()))
            p, offset = msg.partition(), msg.offset()
            if offset >= ends[p] - 1:  # the last offset there was when the read began, or one written later
                pending.discard(p)
            if offset < ends[p]:
                out.append((p, offset, msg.key(), msg.value(), msg.timestamp()[1]))
        if pending:
            raise IncompleteRead(_incomplete(topic, timeout_s, ends, sorted(pending), out))
        return out
    finally:
        c.close()


def _incomplete(topic: str, timeout_s: float, ends: dict[int, int], pending: list[int], out: list[tuple]) -> str:
    """What a read that timed out expected (each pending partition's end offset) against what it got."""
    got = {p: (sum(1 for r in out if r[0] == p), max((r[1] + 1 for r in out if r[0] == p), default=0))
           for p in pending}
    return (f"could not read topic {topic!r} within {timeout_s}s: partitions {pending} have end offsets "
            f"{ {p: ends[p] for p in pending} }, read "
            f"{', '.join(f'{p}: {n} records, next offset {o}' for p, (n, o) in got.items())} "
            f"({len(out)} records from all partitions)")


def end_offsets(bootstrap: str, topic: str) -> dict[int, int]:
    """Each partition's end offset (high watermark) now: records at or past it are written later."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"test-{uuid.uuid4().hex}", "enable.auto.commit": False})
    try:
        md = c.list_topics(topic, timeout=10).topics.get(topic)
        if md is None or md.error is not None:
            raise AssertionError(f"no end offsets for topic {topic!r}: {md.error if md else 'no metadata'}")
        return {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in sorted(md.partitions)}
    finally:
        c.close()


def read_json_values(bootstrap: str, topic: str) -> list:
    return [json.loads(v) for _, _, _, v in sorted(read_topic(bootstrap, topic)) if v is not None]


def wait_until(condition: Callable[[], object], timeout_s: float = 90.0, interval_s: float = 0.5,
               message: str | Callable[[], str] = "condition") -> object:
    """Poll ``condition`` until it returns something truthy; fail with ``message`` on timeout.

    ``message`` may be a function, called only on timeout, to say what the state was then.
    """
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        last = condition()
        if last:
            return last
        time.sleep(interval_s)
    what = message() if callable(message) else message
    raise AssertionError(f"timed out after {timeout_s}s waiting for {what} (last: {last!r})")
