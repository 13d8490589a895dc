"""Reading and writing topics in tests, with assign() only: no consumer group to join, so reads start at once."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


def create_topic(bootstrap: str, topic: str, partitions: int = 1) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(topic, partitions, 1)])
    for f in futures.values():
        try:
            f.result(timeout=30)
        except Exception as e:  # already there is fine
            if "TOPIC_ALREADY_EXISTS" not in str(e):
                raise


def produce(bootstrap: str, topic: str, values: list[bytes], partition: int | None = None) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
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


def read_topic_with_timestamps(bootstrap: str, topic: str, timeout_s: float = 20.0, isolation: str = "read_committed"
                               ) -> list[tuple[int, int, bytes | None, bytes | None, int]]:
    """Every record now in ``topic`` as (partition, offset, key, value, timestamp), reading each partition to EOF.

    ``read_committed`` (librdkafka's default, and sparkcat's): records of open or aborted transactions
    are left out; ``read_uncommitted`` shows them too.
    """
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"test-{uuid.uuid4().hex}",
                  "enable.partition.eof": True, "enable.auto.commit": False, "isolation.level": isolation})
    try:
        md = c.list_topics(topic, timeout=10).topics.get(topic)
        if md is None or md.error is not None:
            return []
        parts = sorted(md.partitions)
        c.assign([TopicPartition(topic, p, 0) for p in parts])
        pending, out = set(parts), []
        deadline = time.monotonic() + timeout_s
        while pending and time.monotonic() < deadline:
            msg = c.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    pending.discard(msg.partition())
                    continue
                raise RuntimeError(str(msg.error()))
            out.append((msg.partition(), msg.offset(), msg.key(), msg.value(), msg.timestamp()[1]))
        return out
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
