"""kill -9 of the whole driver in the middle of exactly-once sinks, then a restart: every record once.

One driver process runs five sink connectors with ``exactly.once.support=required``, each held by a
test-only kill point (``sparkcat.spark.kill_points``) in its batch 1, then the whole session is
SIGKILLed at once (JVM, driver Python, pyspark's daemon and workers):

- ``copy-mid-write``: a kafka copy whose task 0 has produced part of its rows, transaction open
  (task 1 of the same batch has committed);
- ``copy-before-commit``: a copy whose task 0 produced all rows and its positions, not committed;
- ``copy-batch-written``: a copy whose transactions all committed, the driver not yet done with the
  batch (no offsets put by the herder, no ``commits/1`` in Spark's checkpoint);
- ``delta-after-commit``: Kafka into Delta, batch 1 committed to Delta, not to Spark's checkpoint;
- ``delta-before-commit``: the same topic into another table, batch 1 read and counted, not written.

The restarted driver (in this process) replays batch 1 of each; the copies' targets, read
read_committed, and the Delta tables then hold every source record exactly once. 100,000 records per
connector (not the issue's 1M): three batches per connector, the kill lands in the middle one, and five
connectors share one driver start, one kill and one restart, which keeps the test near three minutes on
the shared 2 cores.
"""

from __future__ import annotations

import struct
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from sparkcat.spark.kill_points import HOLD_DIR_ENV, HOLD_ENV
from tests.driver_process import kill_session, start_driver_process
from tests.integration.connectors.test_kafka_sink import kafka_worker, start_driver
from tests.kafka_helpers import create_topic, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

N = 100_000
PER_TASK = "20000"  # batch.max.records: 40,000 records per batch over two tasks, two Arrow batches per task
COPY_POINTS = {"mid": "copy-mid-write@1:0", "precommit": "copy-before-commit@1:0", "written": "copy-batch-written@1"}


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


def test_sigkilled_driver_at_each_kill_point_restarts_to_exactly_once(spark, broker, tmp_path, unique_name):
    bootstrap = broker.bootstrap
    sources = {k: f"{unique_name}-{k}" for k in [*COPY_POINTS, "delta"]}
    for topic in sources.values():
        fill(bootstrap, topic)
    table = tmp_path / "delta-table"
    common = {"tasks.max": "2", "batch.max.records": PER_TASK, "trigger.interval.ms": "200",
              "exactly.once.support": "required"}
    connectors = {f"copy-{k}": {"connector.class": "kafka", "topics": sources[k], **common} for k in COPY_POINTS}
    connectors["delta"] = {"connector.class": "delta", "topics": sources["delta"], "table.path": str(table),
                           "value.converter": "org.apache.kafka.connect.converters.ByteArrayConverter", **common}
    connectors["delta-pre"] = {**connectors["delta"], "table.path": str(tmp_path / "delta-pre")}
    holds = [f"copy-{k}={point}" for k, point in COPY_POINTS.items()] + ["delta=delta-after-commit@1",
                                                                         "delta-pre=delta-before-commit@1"]
    markers = tmp_path / "held"
    markers.mkdir()
    worker = kafka_worker(broker, tmp_path, unique_name)
    fields = {k: getattr(worker, k) for k in ("state_dir", "bootstrap_servers", "config_topic", "offset_topic",
                                              "status_topic", "file_allowed_dirs", "plugin_packages")}
    log = tmp_path / "driver.log"
    child = start_driver_process(fields, connectors, log, {HOLD_ENV: ",".join(holds), HOLD_DIR_ENV: str(markers)})
    expected = [f"copy-{k}-{p.split('@')[0]}" for k, p in COPY_POINTS.items()] + [
        "delta-delta-after-commit", "delta-pre-delta-before-commit"]
    try:
        wait_until(lambda: all((markers / m).exists() for m in expected) or child.poll() is not None,
                   timeout_s=300, message="every connector held at its kill point")
        assert child.poll() is None, log.read_text()[-3000:]
    finally:
        kill_session(child)
    checkpoints = tmp_path / "state" / "checkpoints"
    for ck in (c for c in checkpoints.iterdir() if not c.name.startswith("_")):  # (not the config stream's)
        # every connector's query died inside batch 1: planned, never committed
        assert (ck / "offsets" / "1").exists() and not (ck / "commits" / "1").exists(), ck
    # Before the restart: the held copies' aborted or open rows exist (read_uncommitted sees them).
    open_rows = {k: len(sequence_numbers(bootstrap, f"{sources[k]}.copy", "read_uncommitted")) for k in COPY_POINTS}
    committed_before = {k: len(sequence_numbers(bootstrap, f"{sources[k]}.copy")) for k in COPY_POINTS}
    assert open_rows["mid"] > committed_before["mid"] and open_rows["precommit"] > committed_before["precommit"]

    driver = start_driver(spark, worker)
    try:
        for k in COPY_POINTS:
            wait_until(lambda k=k: len(sequence_numbers(bootstrap, f"{sources[k]}.copy")) >= N, timeout_s=240,
                       message=f"copy-{k} complete after the restart")
        for t in (table, tmp_path / "delta-pre"):
            wait_until(lambda t=t: spark.read.format("delta").load(str(t)).count() >= N, timeout_s=240,
                       message=f"{t.name} complete after the restart")
        for name in connectors:
            wait_until(lambda name=name: sum(o["kafka_offset"] for _p, o in driver.stores.offsets.partitions(name))
                       >= N,
                       timeout_s=60, message=f"{name}'s positions at the end")
    finally:
        driver.stop()
    for k in COPY_POINTS:
        assert_exactly_once(f"copy-{k}", sequence_numbers(bootstrap, f"{sources[k]}.copy"))
    # The batch that committed before the kill was skipped on replay, not written again.
    assert len(sequence_numbers(bootstrap, f"{sources['written']}.copy", "read_uncommitted")) == N
    for t in (table, tmp_path / "delta-pre"):
        rows = spark.read.format("delta").load(str(t)).select("value").collect()
        assert_exactly_once(t.name, [struct.unpack(">q", bytes(r.value)[:8])[0] for r in rows])
