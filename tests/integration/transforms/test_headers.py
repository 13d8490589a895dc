"""Headers end to end: a source task's headers -> Kafka (SimpleHeaderConverter) -> a sink task's SinkRecords."""

from __future__ import annotations

import json

import pytest

from sparkcat.spark.query_plan import QueryPlan
from tests.integration.spark.query_helpers import Batches, run_until
from tests.integration.spark.test_connector_query import create_topics, increment_plan
from tests.integration.transforms.test_source_chain import read_with_headers

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

EXPECTED = [("raw", b"\x00\xff"), ("flag", b"true")]


def test_source_headers_reach_kafka_and_a_sink_task(spark, broker, unique_name, tmp_path):
    prefix = f"{unique_name}-seq_"
    create_topics(broker.bootstrap, prefix + "1", prefix + "100")
    plan = increment_plan(unique_name, tmp_path / "ck", broker.bootstrap, 1, prefix, batch_max_records=20,
                          task_class="tests.integration.transforms.header_tasks:HeaderIncrementTask")
    source = Batches()
    run_until(spark, plan, source, lambda: source.position(1) >= 10)

    records = read_with_headers(broker.bootstrap, prefix + "1")
    assert records and all(h == [("position", str(v["payload"]["position"]).encode()), *EXPECTED]
                           for _, v, h in records)

    out = tmp_path / "out"
    out.mkdir()
    config = {"topics": prefix + "1", "value.converter": "org.apache.kafka.connect.converters.ByteArrayConverter"}
    sink = QueryPlan(connector=f"{unique_name}-sink", connector_type="sink", connector_class="x:HeaderSink",
                     task_class="tests.integration.transforms.header_tasks:HeaderRecordingTask",
                     connector_config=config, task_configs=[{**config, "record.dir": str(out), "task.id": "0"}],
                     checkpoint_dir=str(tmp_path / "ck-sink"), bootstrap_servers=broker.bootstrap,
                     trigger_interval_ms=200)
    sunk = Batches()
    run_until(spark, sink, sunk, lambda: sunk.records() >= len(records))
    seen = sorted((r["offset"], r["headers"]) for p in out.glob("*.json") for r in json.loads(p.read_text())["records"])
    assert [h for _, h in seen][:len(records)] == [
        [["position", str(o + 1).encode().hex()], ["raw", "00ff"], ["flag", b"true".hex()]] for o, _ in
        seen[:len(records)]]
