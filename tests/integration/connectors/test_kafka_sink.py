"""The ``kafka`` sink connector on a real broker and Spark, through a Driver with Kafka stores.

Its input is Spark's Kafka source; its tasks get SinkRecords (raw bytes and headers) through ``put``.
"""

from __future__ import annotations

import collections
from pathlib import Path

import pytest
from confluent_kafka import Producer

from sparkcat.config.worker import WorkerConfig
from tests.broker import KafkaBroker
from tests.integration.runtime.test_driver import start_driver, status_of
from tests.kafka_helpers import (
    create_topic,
    ordered_producer_settings,
    read_topic,
    read_topic_with_timestamps,
    wait_until,
)

pytestmark = pytest.mark.integration

KAFKA_SINK = "kafka"
TS0 = 1_700_000_000_000


@pytest.fixture(params=["requested", "required"])
def delivery(request) -> dict[str, str]:
    """Both copy paths: Spark's Kafka writer (at-least-once) and Kafka transactions (exactly.once.support)."""
    return {"exactly.once.support": request.param}


def kafka_worker(broker, tmp_path: Path, name: str) -> WorkerConfig:
    return WorkerConfig(state_dir=str(tmp_path / "state"), bootstrap_servers=broker.bootstrap,
                        config_topic=f"{name}-configs", offset_topic=f"{name}-offsets",
                        status_topic=f"{name}-status", file_allowed_dirs=[str(tmp_path)],
                        plugin_packages=["sparkcat.connectors", "tests.integration.connectors"])


def produce_records(bootstrap: str, topic: str, partitions: int, count: int, start: int = 0) -> list[tuple]:
    """``count`` records spread over ``partitions`` with keys (some null), values (some tombstones), timestamps."""
    p = Producer(ordered_producer_settings(bootstrap))
    sent = []
    for i in range(start, start + count):
        part = i % partitions
        key = None if i % 11 == 0 else f"key-{i % 37}".encode()
        value = None if i % 13 == 0 else bytes([i % 256]) * (i % 50) + f"|value-{i}".encode()
        p.produce(topic, value=value, key=key, partition=part, timestamp=TS0 + i)
        sent.append((part, key, value, TS0 + i))
    assert p.flush(30) == 0
    return sent


def by_partition(records) -> dict[int, list[tuple]]:
    """(partition, key, value, timestamp) records as {partition: [(key, value, timestamp), ...]} in order."""
    out: dict[int, list[tuple]] = collections.defaultdict(list)
    for part, key, value, ts in records:
        out[part].append((key, value, ts))
    return dict(out)


def record_name(record: tuple) -> str:
    """A (key, value, timestamp) record by its ``value-N`` tail, as ``produce_records`` wrote it."""
    return f"ts {record[2] - TS0}" if record[1] is None else record[1].rsplit(b"|", 1)[-1].decode(errors="replace")


def index_runs(got: list[tuple], want: list[tuple]) -> str:
    """``got`` as runs of consecutive indexes into ``want`` (``?`` for a record not in it): "0-444, 445-499"."""
    index = {r: i for i, r in enumerate(want)}
    runs: list[list] = []
    for r in got:
        i = index.get(r, "?")
        if runs and i != "?" and runs[-1][1] != "?" and i == runs[-1][1] + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def partition_differences(got_records: list[tuple], wanted: list[tuple]) -> str:
    """Where ``got_records``' partitions differ from ``wanted``'s: per partition the counts, the first index that
    differs, the values there and the runs of indexes (a failure's own diagnosis: loss, duplicate or reordering)."""
    got, want = by_partition(got_records), by_partition(wanted)
    lines = []
    for part in sorted(set(got) | set(want)):
        g, w = got.get(part, []), want.get(part, [])
        if g == w:
            continue
        first = next((i for i, (a, b) in enumerate(zip(g, w)) if a != b), min(len(g), len(w)))
        there = [[record_name(r) for r in records[first:first + 3]] for records in (g, w)]
        lines.append(f"partition {part}: {len(g)} got, {len(w)} wanted; first difference at index {first}: "
                     f"got {there[0]}, wanted {there[1]}")
        kept = set(g)
        missing = [record_name(r) for r in w if r not in kept]
        if missing:
            lines.append(f"  {len(missing)} wanted record(s) missing: {missing[:3]} ... {missing[-3:]}")
        lines.append(f"  got, as runs of indexes into the wanted partition: {index_runs(g, w)}")
    return "\n".join(lines)


def read_with_ts(bootstrap: str, topic: str) -> list[tuple]:
    """Every record of ``topic`` as (partition, key, value, timestamp), in offset order per partition."""
    return [(p, k, v, ts) for p, _o, k, v, ts in sorted(read_topic_with_timestamps(bootstrap, topic, 30.0))]


def count_of(bootstrap: str, topic: str) -> int:
    return len(read_topic(bootstrap, topic))


def wait_for_markers(bootstrap: str, topic: str, markers: list[tuple], timeout_s: float = 120) -> None:
    """Wait until every marker record (partition, key, value, timestamp: written to the source after the
    records under test) is in ``topic``, whatever its partition there: the copy then got past the records
    before them, and a further (duplicate) batch of those would have shown."""
    wanted = {(k, v, ts) for _p, k, v, ts in markers}
    wait_until(lambda: wanted <= {(k, v, ts) for _p, k, v, ts in read_with_ts(bootstrap, topic)}, timeout_s=timeout_s,
               message=f"the {len(markers)} marker record(s) in {topic}")


def test_copy_keeps_keys_values_timestamps_and_partitions_without_loss(spark, broker, tmp_path, unique_name,
                                                                        delivery):
    src = f"{unique_name}-orders"
    create_topic(broker.bootstrap, src, partitions=3)
    sent = produce_records(broker.bootstrap, src, 3, 1500)
    driver = start_driver(spark, kafka_worker(broker, tmp_path, unique_name))
    try:
        driver.herder.put_connector_config("copy", {
            "connector.class": KAFKA_SINK, "topics": src, "tasks.max": "2",
            "trigger.interval.ms": "300", "batch.max.records": "400", **delivery})
        target = f"{src}.copy"
        wait_until(lambda: count_of(broker.bootstrap, target) >= len(sent), timeout_s=120, message="first copy")
        # Records arriving while the query runs are copied too, in later micro-batches.
        sent += produce_records(broker.bootstrap, src, 3, 700, start=1500)
        wait_until(lambda: count_of(broker.bootstrap, target) >= len(sent), timeout_s=120, message="second copy")
        status = status_of(driver, "copy")
        assert status["connector"]["state"] == "RUNNING"
        assert [t["state"] for t in status["tasks"]] == ["RUNNING", "RUNNING"]
        markers = produce_records(broker.bootstrap, src, 3, 3, start=2200)  # one a partition
        sent += markers
        wait_for_markers(broker.bootstrap, target, markers)
    finally:
        driver.stop()
    copied, source = read_with_ts(broker.bootstrap, target), read_with_ts(broker.bootstrap, src)
    assert by_partition(source) == by_partition(sent), partition_differences(source, sent)  # the test's own input
    # no loss, no duplicates; same partition, same order, same bytes and timestamps as the source
    assert by_partition(copied) == by_partition(source), partition_differences(copied, source)
    offsets = {(p["kafka_topic"], p["kafka_partition"]): o["kafka_offset"]
               for p, o in driver.stores.offsets.partitions("copy")}
    assert offsets == {(src, p): len(by_partition(sent)[p]) for p in range(3)}
    if delivery["exactly.once.support"] == "required":  # written in transactions: their commit markers take offsets
        from confluent_kafka import Consumer, TopicPartition
        c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": unique_name})
        ends = sum(c.get_watermark_offsets(TopicPartition(target, p), timeout=10)[1] for p in range(3))
        c.close()
        assert ends > len(sent)


def test_regex_subscription_target_with_fewer_partitions_and_other_cluster(spark, broker, tmp_path, unique_name):
    """topics.regex over two topics, a format without .copy, a target cluster of its own with a 1-partition topic."""
    a, b = f"{unique_name}-a", f"{unique_name}-b"
    create_topic(broker.bootstrap, a, partitions=2)
    create_topic(broker.bootstrap, b, partitions=4)
    sent_a = produce_records(broker.bootstrap, a, 2, 300)
    sent_b = produce_records(broker.bootstrap, b, 4, 500)
    with KafkaBroker(log_dir=tmp_path) as target_broker:
        create_topic(target_broker.bootstrap, f"mirror.{b}", partitions=1)  # fewer partitions than the source
        driver = start_driver(spark, kafka_worker(broker, tmp_path, unique_name))
        try:
            driver.herder.put_connector_config("mirror", {
                "connector.class": KAFKA_SINK, "topics.regex": f"{unique_name}-[ab]", "tasks.max": "3",
                "target.topic.format": "mirror.${topic}", "target.bootstrap.servers": target_broker.bootstrap,
                "trigger.interval.ms": "300"})
            wait_until(lambda: count_of(target_broker.bootstrap, f"mirror.{a}") >= 300
                       and count_of(target_broker.bootstrap, f"mirror.{b}") >= 500,
                       timeout_s=120, message="both topics mirrored")
            markers_a = produce_records(broker.bootstrap, a, 2, 2, start=300)  # one a partition
            markers_b = produce_records(broker.bootstrap, b, 4, 4, start=500)
            sent_a, sent_b = sent_a + markers_a, sent_b + markers_b
            wait_for_markers(target_broker.bootstrap, f"mirror.{a}", markers_a)
            wait_for_markers(target_broker.bootstrap, f"mirror.{b}", markers_b)
        finally:
            driver.stop()
        copied_a = read_with_ts(target_broker.bootstrap, f"mirror.{a}")
        copied_b = read_with_ts(target_broker.bootstrap, f"mirror.{b}")
    assert by_partition(copied_a) == by_partition(sent_a)  # created by the sink with the source's 2 partitions
    assert len(copied_b) == len(sent_b)
    assert {p for p, *_ in copied_b} == {0}
    # All of b landed in partition 0; each source partition's records keep their order within it.
    for part in range(4):
        ours = [(k, v, ts) for k, v, ts in by_partition(copied_b)[0] if (ts - TS0) % 4 == part]
        assert ours == by_partition(sent_b)[part]
    assert count_of(broker.bootstrap, f"mirror.{a}") == 0  # nothing went to the source cluster


def test_a_target_inside_the_subscription_fails_the_task_with_a_clear_trace(spark, broker, tmp_path, unique_name):
    src = f"{unique_name}-loop"
    create_topic(broker.bootstrap, src, partitions=1)
    produce_records(broker.bootstrap, src, 1, 10)
    driver = start_driver(spark, kafka_worker(broker, tmp_path, unique_name))
    try:
        driver.herder.put_connector_config("loop", {
            "connector.class": "kafka-sink", "topics.regex": f"{unique_name}-loop.*", "trigger.interval.ms": "300"})
        wait_until(lambda: [t["state"] for t in status_of(driver, "loop")["tasks"]] == ["FAILED"],
                   timeout_s=90, message="task FAILED")
        assert "would feed itself" in status_of(driver, "loop")["tasks"][0]["trace"]
    finally:
        driver.stop()
    assert count_of(broker.bootstrap, f"{src}.copy") == 0


def test_copies_headers_and_the_query_progress_counts_records(spark, broker, tmp_path, unique_name, delivery):
    src = f"{unique_name}-hdr"
    create_topic(broker.bootstrap, src, partitions=2)
    p = Producer(ordered_producer_settings(broker.bootstrap))
    for i in range(200):
        headers = [("trace", f"t-{i}".encode()), ("dup", b"1"), ("dup", b"2")] if i % 2 else None
        p.produce(src, value=f"v{i}".encode(), key=f"k{i}".encode(), partition=i % 2, headers=headers)
    assert p.flush(30) == 0
    driver = start_driver(spark, kafka_worker(broker, tmp_path, unique_name))
    try:
        driver.herder.put_connector_config("hdr", {"connector.class": KAFKA_SINK, "topics": src, "tasks.max": "2",
                                                   "trigger.interval.ms": "300", **delivery})
        wait_until(lambda: count_of(broker.bootstrap, f"{src}.copy") >= 200, timeout_s=120, message="copied")
        query = next(q for q in spark.streams.active if q.name == "hdr")
        wait_until(lambda: sum(pr.numInputRows for pr in query.recentProgress) >= 200,
                   timeout_s=30, message="the progress's input record count")
    finally:
        driver.stop()
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": unique_name, "enable.partition.eof": True})
    c.assign([TopicPartition(f"{src}.copy", part, 0) for part in (0, 1)])
    got, eof = {}, 0
    while eof < 2:
        msg = c.poll(5)
        assert msg is not None, "the copy ended early"
        if msg.error():
            eof += 1
            continue
        got[msg.value()] = msg.headers()
    c.close()
    assert len(got) == 200
    assert got[b"v3"] == [("trace", b"t-3"), ("dup", b"1"), ("dup", b"2")]  # order and repeats kept
    assert got[b"v4"] is None


def test_offsets_api_moves_where_a_stopped_sink_continues(spark, broker, tmp_path, unique_name, delivery):
    """PATCH offsets of a STOPPED sink: its query starts again from there (Spark's startingOffsets)."""
    from sparkcat.model.config_state import TargetState

    src = f"{unique_name}-moved"
    create_topic(broker.bootstrap, src, partitions=1)
    sent = produce_records(broker.bootstrap, src, 1, 100)
    driver = start_driver(spark, kafka_worker(broker, tmp_path, unique_name))
    target = f"{src}.copy"
    try:
        driver.herder.put_connector_config("moved", {"connector.class": KAFKA_SINK, "topics": src,
                                                     "trigger.interval.ms": "300", **delivery})
        wait_until(lambda: count_of(broker.bootstrap, target) >= 100, timeout_s=120, message="first copy")
        driver.herder.set_target_state("moved", TargetState.STOPPED)
        wait_until(lambda: status_of(driver, "moved")["connector"]["state"] == "STOPPED", timeout_s=60,
                   message="STOPPED")
        partition = {"kafka_topic": src, "kafka_partition": 0}
        assert driver.herder.connector_offsets("moved") == [(partition, {"kafka_offset": 100})]
        driver.herder.alter_connector_offsets("moved", [(partition, {"kafka_offset": 40})])
        assert driver.herder.connector_offsets("moved") == [(partition, {"kafka_offset": 40})]
        sent += produce_records(broker.bootstrap, src, 1, 20, start=100)
        driver.herder.set_target_state("moved", TargetState.STARTED)
        wait_until(lambda: count_of(broker.bootstrap, target) >= 180, timeout_s=120, message="copy from offset 40")
        markers = produce_records(broker.bootstrap, src, 1, 1, start=120)
        sent += markers
        wait_for_markers(broker.bootstrap, target, markers)
    finally:
        driver.stop()
    copied = read_with_ts(broker.bootstrap, target)
    assert copied == sent[:100] + sent[40:]  # the first 100, then offsets 40-120 from the moved position, in order
