"""The kafka copy sink's frame writer on a real broker and Spark: what each micro-batch reports, headers and
timestamps as the interceptor leaves them, and a failed write failing the batch with its tasks named."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from pyspark.errors import StreamingQueryException

from sparkcat.connectors.kafka_sink import KafkaSinkConnector
from sparkcat.spark.kafka_copy_writer import TIMESTAMP_HEADER
from sparkcat.spark.kafka_input import assign_tasks
from sparkcat.spark.plan import TASK_FAILURE_MARK, QueryPlan
from sparkcat.spark.queries import start_query
from tests.broker import free_port
from tests.integration.spark.test_sink_input import Batches, wait_until
from tests.kafka_helpers import create_topic

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

TASK = "sparkcat.connectors.kafka_sink:KafkaSinkTask"
TS0 = 1_600_000_000_000


def copy_plan(name: str, ck: Path, bootstrap: str, tasks: int, **config: str) -> QueryPlan:
    conf = {"name": name, "connector.class": "kafka", **config}
    connector = KafkaSinkConnector()
    connector.start(conf)
    return QueryPlan(connector=name, connector_type="sink",
                     connector_class="sparkcat.connectors.kafka_sink:KafkaSinkConnector", task_class=TASK,
                     connector_config=conf, task_configs=connector.task_configs(tasks), checkpoint_dir=str(ck),
                     bootstrap_servers=bootstrap, trigger_interval_ms=200)


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


def test_batches_report_tasks_records_and_next_offsets_and_keep_headers_and_timestamps(spark, broker, tmp_path,
                                                                                        unique_name):
    src = f"{unique_name}-src"
    create_topic(broker.bootstrap, src, partitions=3)
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(90):
        # the source's own header of the reserved name is copied unchanged: only sparkcat's own is taken
        headers = [(TIMESTAMP_HEADER, b"mine"), ("h", b"x")] if i == 7 else None
        p.produce(src, key=f"k{i}".encode(), value=f"v{i}".encode(), partition=i % 3, timestamp=TS0 + i,
                  headers=headers)
    assert p.flush(30) == 0
    batches = Batches()
    plan = copy_plan("cw", tmp_path / "ck", broker.bootstrap, 2, topics=src)
    query = start_query(spark, plan, batches)
    try:
        wait_until(lambda: batches.records() >= 90, query)
    finally:
        query.stop()
    owners = assign_tasks([(src, 0), (src, 1), (src, 2)], [0, 1])
    per_task: dict[int, int] = {}
    offsets: dict[int, int] = {}
    for result in batches.results:
        for t, r in result.tasks.items():
            assert r.worker_id.endswith(":driver")  # the driver runs each batch's write
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


def test_a_failed_write_fails_the_batch_naming_its_tasks_and_commits_nothing(spark, broker, tmp_path, unique_name):
    src = f"{unique_name}-src"
    create_topic(broker.bootstrap, src, partitions=2)
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(10):
        p.produce(src, value=f"v{i}".encode(), partition=i % 2)
    assert p.flush(30) == 0
    batches = Batches()
    nobody = f"127.0.0.1:{free_port()}"  # a target cluster that is not there
    plan = copy_plan("dead", tmp_path / "ck", broker.bootstrap, 2, topics=src, **{
        "target.bootstrap.servers": nobody, "target.topic.create": "false",
        "producer.override.max.block.ms": "2000", "producer.override.delivery.timeout.ms": "3000",
        "producer.override.request.timeout.ms": "1000", "producer.override.linger.ms": "0"})
    query = start_query(spark, plan, batches)
    with pytest.raises(StreamingQueryException) as failed:
        query.awaitTermination(120)
    text = str(failed.value)
    assert f"{TASK_FAILURE_MARK} dead-0:" in text and f"{TASK_FAILURE_MARK} dead-1:" in text
    assert batches.results == []  # nothing reported, so nothing reaches the offsets store: replayed on restart
