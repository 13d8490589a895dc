"""kill -9 of the whole driver at random moments under exactly-once sinks, then a restart: every record once.

One driver process runs an exactly-once kafka copy (sparkcat's JVM writer: a Kafka transaction per
task with its Connect offsets) and a Kafka-fed Delta append (Delta's streaming sink), each over
``N`` records fed in small batches. The whole session (JVM, driver Python, pyspark's daemon and
workers) is SIGKILLed at a random moment while the copy's target grows, started again on the same
worker and checkpoints, and killed again, ``KILLS`` times: no hook in the product says where a batch
is, so the kills fall mid-transaction, between a task's commit and Spark's, or between batches. The
last driver runs in this process to the end; the copy's target, read read_committed, and the Delta
table then hold every source record exactly once.
"""

from __future__ import annotations

import struct
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from tests.driver_process import kill_while, seeded_random, start_driver_process
from tests.integration.connectors.test_kafka_sink import kafka_worker, start_driver
from tests.kafka_helpers import create_topic, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

N = 100_000
PER_TASK = "2500"  # batch.max.records: 5,000 records per batch over two tasks, so a kill lands inside the load
KILLS = 3


def fill(bootstrap: str, topic: str) -> None:
    """``N`` records over 2 partitions; each value starts with its sequence number (8 bytes, big-endian)."""
    create_topic(bootstrap, topic, partitions=2)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "compression.type": "lz4"})
    for i in range(N):
        while True:
            try:
                p.produce(topic, struct.pack(">q", i) + b"x" * 40, key=str(i % 97).encode(), partition=i % 2)
                break
            except BufferError:
                p.poll(0.1)
    assert p.flush(60) == 0


def sequence_numbers(bootstrap: str, topic: str, isolation: str = "read_committed") -> list[int]:
    """Every record's sequence number, reading each partition from 0 to its end (``assign`` only)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"t-{uuid.uuid4().hex}", "enable.auto.commit": False,
                  "enable.partition.eof": True, "isolation.level": isolation})
    try:
        parts = list(c.list_topics(topic, timeout=10).topics[topic].partitions)
        c.assign([TopicPartition(topic, p, 0) for p in parts])
        out, pending = [], set(parts)
        while pending:
            msg = c.poll(5)
            assert msg is not None, f"{topic}: no end of partition in sight"
            if msg.error():
                assert msg.error().code() == KafkaError._PARTITION_EOF, msg.error()
                pending.discard(msg.partition())
                continue
            out.append(struct.unpack(">q", msg.value()[:8])[0])
        return out
    finally:
        c.close()


def assert_exactly_once(name: str, values: list[int]) -> None:
    dupes = len(values) - len(set(values))
    assert dupes == 0, f"{name}: {dupes} duplicate(s)"
    assert set(values) == set(range(N)), f"{name}: {N - len(set(values))} record(s) missing"


def high_water(bootstrap: str, topic: str) -> int:
    """Records written to ``topic`` so far, committed or not (the sum of its partitions' end offsets)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"t-{uuid.uuid4().hex}"})
    try:
        parts = c.list_topics(topic, timeout=10).topics.get(topic)
        if parts is None or not parts.partitions:
            return 0
        return sum(c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in parts.partitions)
    finally:
        c.close()


def test_sigkilled_driver_at_random_moments_restarts_to_exactly_once(spark, broker, tmp_path, unique_name):
    bootstrap = broker.bootstrap
    sources = {k: f"{unique_name}-{k}" for k in ("copy", "delta")}
    for topic in sources.values():
        fill(bootstrap, topic)
    target, table = f"{sources['copy']}.copy", tmp_path / "delta-table"
    common = {"tasks.max": "2", "batch.max.records": PER_TASK, "trigger.interval.ms": "200",
              "exactly.once.support": "required"}
    connectors = {"copy": {"connector.class": "kafka", "topics": sources["copy"], **common},
                  "delta": {"connector.class": "delta", "topics": sources["delta"], "table.path": str(table),
                            "value.converter": "org.apache.kafka.connect.converters.ByteArrayConverter", **common}}
    worker = kafka_worker(broker, tmp_path, unique_name)
    fields = {k: getattr(worker, k) for k in ("state_dir", "bootstrap_servers", "config_topic", "offset_topic",
                                              "status_topic", "file_allowed_dirs", "plugin_packages")}
    rng, seed = seeded_random()
    kills = []
    for round_ in range(KILLS):
        log = tmp_path / f"driver-{round_}.log"
        before = high_water(bootstrap, target)
        child = start_driver_process(fields, connectors, log, {})
        delay = kill_while(child, log, lambda before=before: high_water(bootstrap, target) > before + 2000, rng)
        committed = len(sequence_numbers(bootstrap, target))
        kills.append((committed, round(delay, 2)))
        assert committed < N, f"kill {round_} (seed {seed}) came after the whole copy: {kills}"

    driver = start_driver(spark, worker)
    try:
        wait_until(lambda: len(sequence_numbers(bootstrap, target)) >= N, timeout_s=240,
                   message="the copy complete after the restarts")
        wait_until(lambda: spark.read.format("delta").load(str(table)).count() >= N, timeout_s=240,
                   message="the Delta table complete after the restarts")
        for name in connectors:
            wait_until(lambda name=name: sum(o["kafka_offset"] for _p, o in driver.stores.offsets.partitions(name))
                       >= N, timeout_s=60, message=f"{name}'s positions at the end")
    finally:
        driver.stop()
    what = f"seed {seed}, committed copy records and delay at each kill {kills}"
    assert_exactly_once(f"copy ({what})", sequence_numbers(bootstrap, target))
    rows = spark.read.format("delta").load(str(table)).select("value").collect()
    assert_exactly_once(f"delta ({what})", [struct.unpack(">q", bytes(r.value)[:8])[0] for r in rows])
