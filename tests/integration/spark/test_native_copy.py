"""The kafka copy as a native sink on a real broker and Spark (``sparkcat.spark.driver.native_queries``): what each
micro-batch reports from the query's progress, headers and timestamps kept, and both writers: Spark's Kafka
sink (at least once) and sparkcat's JVM transactional writer (exactly once, positions in its transactions)."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from sparkcat.connectors.kafka_copy import TIMESTAMP_HEADER
from sparkcat.connectors.kafka_sink import KafkaSinkConnector
from sparkcat.spark.driver.kafka_input import assign_tasks
from sparkcat.spark.driver.native_queries import NativeQueries
from sparkcat.spark.query_plan import QueryPlan
from sparkcat.storage.factory import open_offsets_store
from tests.integration.spark.query_helpers import Batches, wait_until
from tests.kafka_helpers import create_topic, ordered_producer_settings

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

TASK = "sparkcat.connectors.kafka_sink:KafkaSinkTask"
TS0 = 1_600_000_000_000


def copy_plan(name: str, ck: Path, bootstrap: str, tasks: int, offsets_topic: str = "", **config: str) -> QueryPlan:
    conf = {"name": name, "connector.class": "kafka", **config}
    connector = KafkaSinkConnector()
    connector.start(conf)
    store = {"backend": "kafka", "bootstrap.servers": bootstrap, "topic": offsets_topic} if offsets_topic else {}
    return QueryPlan(connector=name, connector_type="sink",
                     connector_class="sparkcat.connectors.kafka_sink:KafkaSinkConnector", task_class=TASK,
                     connector_config=conf, task_configs=connector.task_configs(tasks), checkpoint_dir=str(ck),
                     bootstrap_servers=bootstrap, trigger_interval_ms=200, offsets_store=store, group_id="g")


def fill(bootstrap: str, src: str) -> None:
    create_topic(bootstrap, src, partitions=3)
    p = Producer(ordered_producer_settings(bootstrap))
    for i in range(90):
        # the source's own header of the reserved name is copied unchanged: only sparkcat's own is taken
        headers = [(TIMESTAMP_HEADER, b"mine"), ("h", b"x")] if i == 7 else None
        p.produce(src, key=f"k{i}".encode(), value=f"v{i}".encode(), partition=i % 3, timestamp=TS0 + i,
                  headers=headers)
    assert p.flush(30) == 0


def read_all(bootstrap: str, topic: str, partitions: int, expect: int) -> list:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"r-{topic}", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out, deadline = [], time.monotonic() + 30
    while len(out) < expect and time.monotonic() < deadline:
        msg = c.poll(0.5)
        if msg is not None and not msg.error():
            out.append(msg)
    c.close()
    return out


def run_copy(spark, plan: QueryPlan, batches: Batches, records: int) -> None:
    native = NativeQueries(spark, batches)
    connector = KafkaSinkConnector()
    connector.start(plan.connector_config)
    query = native.start(plan, connector, lease_key="")
    assert query is not None, "the copy runs natively"
    try:
        wait_until(lambda: batches.records() >= records, query)
    finally:
        query.stop()
        native.finished(query)


@pytest.mark.parametrize("delivery", ["requested", "required"])
def test_batches_report_tasks_records_and_positions_and_keep_headers_and_timestamps(spark, broker, tmp_path,
                                                                                     unique_name, delivery):
    src = f"{unique_name}-src"
    fill(broker.bootstrap, src)
    offsets_topic = f"{unique_name}-offsets"
    create_topic(broker.bootstrap, offsets_topic, partitions=1)
    batches = Batches()
    plan = copy_plan("cw", tmp_path / "ck", broker.bootstrap, 2, offsets_topic, topics=src,
                     **{"exactly.once.support": delivery})
    run_copy(spark, plan, batches, 90)
    owners = assign_tasks([(src, 0), (src, 1), (src, 2)], [0, 1])
    per_task: dict[int, int] = {}
    offsets: dict[int, int] = {}
    for result in batches.results:
        assert result.positions_stored == (delivery == "required")  # in the writer's transactions
        for t, r in result.tasks.items():
            assert r.worker_id.endswith(":driver")  # local mode: the driver's executor
            per_task[t] = per_task.get(t, 0) + r.records
            for part, off in r.offsets:
                assert owners[(part["kafka_topic"], part["kafka_partition"])] == t
                offsets[part["kafka_partition"]] = off["kafka_offset"]
    assert offsets == {0: 30, 1: 30, 2: 30}
    assert per_task == {t: 30 * sum(1 for o in owners.values() if o == t) for t in (0, 1)}
    copied = read_all(broker.bootstrap, f"{src}.copy", 3, 90)
    assert len(copied) == 90
    by_value = {m.value(): m for m in copied}
    for i in range(90):
        m = by_value[f"v{i}".encode()]
        assert (m.partition(), m.key(), m.timestamp()[1]) == (i % 3, f"k{i}".encode(), TS0 + i)
    assert by_value[b"v7"].headers() == [(TIMESTAMP_HEADER, b"mine"), ("h", b"x")]
    assert by_value[b"v8"].headers() is None
    if delivery == "required":  # the positions are in the offsets topic, written by the JVM writer
        store = open_offsets_store({"backend": "kafka", "bootstrap.servers": broker.bootstrap, "topic": offsets_topic})
        try:
            stored = {json.loads(k)["kafka_partition"]: v["kafka_offset"] for k, v in store.get("cw").items()}
        finally:
            store.close()
        assert stored == {0: 30, 1: 30, 2: 30}


def test_a_failed_write_fails_the_query_and_reports_nothing(spark, broker, tmp_path, unique_name):
    src = f"{unique_name}-src"
    create_topic(broker.bootstrap, src, partitions=2)
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(10):
        p.produce(src, value=b"x" * 2000, partition=i % 2)
    assert p.flush(30) == 0
    batches = Batches()
    # the target refuses every record (max.message.bytes below the records' size): the write fails
    plan = copy_plan("big", tmp_path / "ck", broker.bootstrap, 2, topics=src, **{
        "target.topic.create": "false", "producer.override.compression.type": "none",
        "producer.override.delivery.timeout.ms": "5000", "producer.override.request.timeout.ms": "2000",
        "producer.override.linger.ms": "0"})
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(f"{src}.copy", 2, 1, config={"max.message.bytes": "1000"})])[f"{src}.copy"].result(30)
    native = NativeQueries(spark, batches)
    connector = KafkaSinkConnector()
    connector.start(plan.connector_config)
    query = native.start(plan, connector, lease_key="")
    from pyspark.errors import StreamingQueryException
    # The producer's own error fails the query: the broker's refusal, or (while it retries split batches) the
    # delivery timeout, which names the target partition; which of the two comes first is the broker's timing.
    refused = rf"RecordTooLargeException|TimeoutException: Expiring \d+ record\(s\) for {re.escape(src)}\.copy-"
    with pytest.raises(StreamingQueryException, match=refused):
        query.awaitTermination(120)
    native.finished(query)
    assert batches.results == []  # nothing reported, so nothing reaches the offsets store: replayed on restart


def test_real_time_mode_copies_records_as_they_arrive_and_reports_each_long_batch(spark, broker, tmp_path,
                                                                                 unique_name):
    src = f"{unique_name}-rt"
    create_topic(broker.bootstrap, src, partitions=2)
    batches = Batches()
    plan = copy_plan("rt", tmp_path / "ck", broker.bootstrap, 2, topics=src,
                     **{"trigger.mode": "realtime", "trigger.realtime.batch.duration.ms": "5000"})
    native = NativeQueries(spark, batches)
    connector = KafkaSinkConnector()
    connector.start(plan.connector_config)
    query = native.start(plan, connector, lease_key="")
    try:
        p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
        for i in range(200):  # records arriving while the first real-time batch runs
            p.produce(src, value=f"v{i}".encode(), partition=i % 2)
            p.poll(0)
            time.sleep(0.005)
        assert p.flush(30) == 0
        copied = read_all(broker.bootstrap, f"{src}.copy", 2, 200)
        assert sorted(m.value() for m in copied) == sorted(f"v{i}".encode() for i in range(200))
        wait_until(lambda: batches.records() >= 200, query)  # reported once its long batch ended
    finally:
        query.stop()
        native.finished(query)
    assert sum(r.records for r in batches.results) == 200


def test_real_time_mode_needs_a_core_per_partition(spark, broker, tmp_path, unique_name):
    src = f"{unique_name}-wide"
    cores = spark.sparkContext.defaultParallelism
    create_topic(broker.bootstrap, src, partitions=cores + 1)
    plan = copy_plan("wide", tmp_path / "ck", broker.bootstrap, 1, topics=src, **{"trigger.mode": "realtime"})
    connector = KafkaSinkConnector()
    connector.start(plan.connector_config)
    with pytest.raises(RuntimeError, match=f"trigger.mode=realtime needs a core per subscribed partition.*"
                                           f"{cores + 1} partition"):
        NativeQueries(spark, Batches()).start(plan, connector, lease_key="")
