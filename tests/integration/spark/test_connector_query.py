"""Connector queries end to end: a real local[2] Spark, a real Apache Kafka broker, real files."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest
from pyspark.errors import StreamingQueryException

from sparkcat.connectors.file_sink import FileStreamSinkConnector
from sparkcat.connectors.increment import IncrementSourceConnector
from sparkcat.converters import converter_for
from sparkcat.spark.query_plan import QueryPlan
from sparkcat.spark.driver.queries import start_query
from sparkcat.storage.local.log import LocalLog
from sparkcat.storage.offsets import OffsetStore
from tests.integration.spark.query_helpers import WAIT_S, Batches, run_until, wait_until
from tests.kafka_helpers import create_topic, read_topic

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

INCREMENT_TASK = "sparkcat.connectors.increment:IncrementSourceTask"
FAILING_TASK = "tests.integration.spark.failing_task:FailingSourceTask"


# ---------------------------------------------------------------- helpers


def create_topics(bootstrap: str, *topics: str) -> None:
    """Single-partition topics, so a sequence's order is the partition's order."""
    for topic in topics:
        create_topic(bootstrap, topic)


def values_of(bootstrap: str, topic: str) -> list[bytes | None]:
    """Every value of a single-partition topic, in order."""
    return [value for _, _, _, value in sorted(read_topic(bootstrap, topic))]


def sequence_values(bootstrap: str, topic: str) -> list[int]:
    """The ``value`` field of each record of an increment topic (JsonConverter with schemas)."""
    decode = converter_for({}, is_key=False).from_bytes
    return [decode(v)["value"] for v in values_of(bootstrap, topic)]


def increment_plan(name: str, ck: Path, bootstrap: str, tasks_max: int, prefix: str, *,
                   store_dir: Path | None = None, task_class: str = INCREMENT_TASK,
                   task_overrides: dict[int, dict[str, str]] | None = None, **plan_fields: Any) -> QueryPlan:
    """The plan of an ``increment 1,100`` connector, as the herder would build it."""
    config = {"connector.class": "increment", "increments": "1,100", "topic.prefix": prefix,
              "records.per.poll": "20", "tasks.max": str(tasks_max)}
    connector = IncrementSourceConnector()
    connector.start(config)
    task_configs = connector.task_configs(tasks_max)
    for t, extra in (task_overrides or {}).items():
        task_configs[t].update(extra)
    store = {"backend": "local", "dir": str(store_dir), "name": "offsets"} if store_dir else {}
    return QueryPlan(connector=name, connector_type="source",
                     connector_class="sparkcat.connectors.increment:IncrementSourceConnector",
                     task_class=task_class, connector_config=config, task_configs=task_configs,
                     checkpoint_dir=str(ck), bootstrap_servers=bootstrap, offsets_store=store,
                     trigger_interval_ms=100, **plan_fields)


def open_store(directory: Path) -> OffsetStore:
    return OffsetStore(LocalLog(directory, "offsets"))


# ---------------------------------------------------------------- source connector to Kafka


def test_increment_to_kafka_writes_sequences_in_order(spark, broker, unique_name, tmp_path):
    prefix = f"{unique_name}-seq_"
    create_topics(broker.bootstrap, prefix + "1", prefix + "100")
    plan = increment_plan(unique_name, tmp_path / "ck", broker.bootstrap, 1, prefix, batch_max_records=30)
    batches = Batches()
    run_until(spark, plan, batches, lambda: batches.position(1) >= 60 and batches.position(100) >= 60)

    n = batches.position(1)
    assert sequence_values(broker.bootstrap, prefix + "1") == list(range(1, n + 1))
    assert sequence_values(broker.bootstrap, prefix + "100") == [100 * p for p in range(1, batches.position(100) + 1)]
    first = batches.results[0]
    assert first.batch_id == 0 and set(first.tasks) == {0}
    assert first.tasks[0].records == 30  # batch_max_records, split over the task's two partitions
    assert first.tasks[0].offsets == [({"increment": 1}, {"position": 15}), ({"increment": 100}, {"position": 15})]
    assert {t.worker_id for r in batches.results for t in r.tasks.values()} == {f"{socket.gethostname()}:driver"}


def test_values_carry_connects_json_envelope(spark, broker, unique_name, tmp_path):
    prefix = f"{unique_name}-seq_"
    create_topics(broker.bootstrap, prefix + "1", prefix + "100")
    plan = increment_plan(unique_name, tmp_path / "ck", broker.bootstrap, 2, prefix)
    plan.connector_config["value.converter.schemas.enable"] = "true"
    batches = Batches()
    run_until(spark, plan, batches, lambda: batches.position(1) >= 1)

    envelope = json.loads(values_of(broker.bootstrap, prefix + "1")[0])
    assert envelope == {
        "schema": {"type": "struct", "optional": False, "fields": [
            {"type": "int64", "optional": True, "field": "position"},
            {"type": "int64", "optional": True, "field": "value"},
            {"type": "int64", "optional": True, "field": "increment"}]},
        "payload": {"position": 1, "value": 1, "increment": 1}}


def test_restart_with_more_tasks_and_fresh_checkpoint_continues_exactly(spark, broker, unique_name, tmp_path):
    prefix = f"{unique_name}-seq_"
    create_topics(broker.bootstrap, prefix + "1", prefix + "100")
    store = open_store(tmp_path / "stores")
    first = Batches(store)
    plan1 = increment_plan(unique_name, tmp_path / "ck1", broker.bootstrap, 1, prefix, store_dir=tmp_path / "stores")
    run_until(spark, plan1, first, lambda: first.position(1) >= 40)
    stopped_at = store.get(unique_name)

    second = Batches(store)
    plan2 = increment_plan(unique_name, tmp_path / "ck2", broker.bootstrap, 2, prefix, store_dir=tmp_path / "stores")
    run_until(spark, plan2, second,
              lambda: second.position(1) >= first.position(1) + 40 and second.position(100) >= 80)

    assert stopped_at == {'{"increment":1}': {"position": first.position(1)},
                          '{"increment":100}': {"position": first.position(100)}}
    assert {t for r in second.results for t in r.tasks} == {0, 1}
    assert all(len(t.offsets) == 1 for r in second.results for t in r.tasks.values())
    final = store.get(unique_name)
    n1, n100 = final['{"increment":1}']["position"], final['{"increment":100}']["position"]
    assert sequence_values(broker.bootstrap, prefix + "1") == list(range(1, n1 + 1))
    assert sequence_values(broker.bootstrap, prefix + "100") == [100 * p for p in range(1, n100 + 1)]
    store.close()


def test_failing_task_is_named_excluded_and_resumed_exactly(spark, broker, unique_name, tmp_path):
    prefix = f"{unique_name}-seq_"
    create_topics(broker.bootstrap, prefix + "1", prefix + "100")
    store = open_store(tmp_path / "stores")
    fail = {0: {"fail.after.position": "60"}}

    def plan(**fields: Any) -> QueryPlan:
        return increment_plan(unique_name, tmp_path / "ck", broker.bootstrap, 2, prefix, task_class=FAILING_TASK,
                              store_dir=tmp_path / "stores", **fields)

    # Task 0 (increment 1) fails in its fourth batch: the query dies naming it.
    query = start_query(spark, plan(task_overrides=fail), Batches(store), None)
    with pytest.raises(StreamingQueryException) as failure:
        query.awaitTermination(WAIT_S)
    error = str(failure.value)
    assert f"sparkcat task failed: {unique_name}-0: ValueError: injected failure past position 60" in error
    assert f"{unique_name}-1:" not in error
    assert store.get(unique_name)['{"increment":1}'] == {"position": 60}

    # Same checkpoint, task 0 excluded: task 1 keeps going, task 0 stays where its last good batch ended.
    excluded = Batches(store)
    run_until(spark, plan(task_overrides=fail, excluded_tasks=[0]), excluded, lambda: excluded.position(100) >= 140)
    assert {t for r in excluded.results for t in r.tasks} == {1}
    assert store.get(unique_name)['{"increment":1}'] == {"position": 60}

    # Task 0 restarted (fixed config, same checkpoint): it resumes at position 61.
    resumed = Batches(store)
    run_until(spark, plan(), resumed, lambda: resumed.position(1) >= 120)
    n1 = store.get(unique_name)['{"increment":1}']["position"]
    assert sequence_values(broker.bootstrap, prefix + "1") == list(range(1, n1 + 1))
    n100 = store.get(unique_name)['{"increment":100}']["position"]
    # Task 1's part of the failed batch may have reached Kafka before the failure (at least once).
    assert set(sequence_values(broker.bootstrap, prefix + "100")) == {100 * p for p in range(1, n100 + 1)}
    store.close()


# ---------------------------------------------------------------- source connector to a sink task


def file_sink_plan(name: str, ck: Path, tasks_max: int, out: Path, store_dir: Path) -> QueryPlan:
    """Increment records straight into one file-sink task, skipping Kafka."""
    sink = FileStreamSinkConnector()
    sink.start({"file": str(out)})
    plan = increment_plan(name, ck, "", tasks_max, "seq_", store_dir=store_dir)
    plan.connector_config.update({"sink.connector.class": "file-sink", "sink.file": str(out)})
    plan.sink_class = "sparkcat.connectors.file_sink:FileStreamSinkConnector"
    plan.sink_task_class = "sparkcat.connectors.file_sink:FileStreamSinkTask"
    plan.sink_task_configs = sink.task_configs(1)
    return plan


def file_positions(out: Path) -> dict[int, list[int]]:
    """Positions per increment in file order."""
    seen: dict[int, list[int]] = {1: [], 100: []}
    for line in out.read_text().splitlines():
        value = json.loads(line)
        assert value["value"] == value["position"] * value["increment"]
        seen[value["increment"]].append(value["position"])
    return seen


def test_increment_to_file_sink_exactly_once_across_restarts(spark, unique_name, tmp_path):
    out, stores = tmp_path / "out.jsonl", tmp_path / "stores"
    store = open_store(stores)
    batches = Batches(store)

    # 1. One task; stopped without a gate, possibly in the middle of a batch.
    query = start_query(spark, file_sink_plan(unique_name, tmp_path / "ck", 1, out, stores), batches, None)
    try:
        wait_until(lambda: batches.position(1) >= 60, query)
    finally:
        query.stop()
    assert query.exception() is None  # a batch cut by stop() is not a failure

    # 2. Same checkpoint, two source tasks sharing the one sink task.
    run_until(spark, file_sink_plan(unique_name, tmp_path / "ck", 2, out, stores), batches,
              lambda: batches.position(1) >= 120 and batches.position(100) >= 120)
    assert {t for r in batches.results[-2:] for t in r.tasks} == {0, 1}

    # 3. A fresh checkpoint (batch ids restart at 0): continues from the offsets store, nothing skipped.
    run_until(spark, file_sink_plan(unique_name, tmp_path / "ck2", 1, out, stores), batches,
              lambda: batches.position(1) >= 180)

    seen = file_positions(out)
    final = store.get(unique_name)
    assert seen[1] == list(range(1, final['{"increment":1}']["position"] + 1))
    assert seen[100] == list(range(1, final['{"increment":100}']["position"] + 1))
    store.close()


# ---------------------------------------------------------------- sink connector from Kafka


def test_sink_connector_reads_kafka_into_file_sink_tasks(spark, broker, unique_name, tmp_path):
    from confluent_kafka import Producer

    from sparkcat.converters import JsonConverter
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    topic, out = f"{unique_name}-in", tmp_path / "sink.txt"
    create_topics(broker.bootstrap, topic)
    value_type = StructType([StructField("id", LongType()), StructField("name", StringType())])
    converter, producer = JsonConverter(), Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(50):
        producer.produce(topic, key=str(i).encode(), value=converter.to_bytes({"id": i, "name": f"n{i}"}, value_type))
    producer.flush(30)

    config = {"connector.class": "file-sink", "topics": topic, "file": str(out),
              "key.converter": "org.apache.kafka.connect.storage.StringConverter"}
    sink = FileStreamSinkConnector()
    sink.start(config)
    plan = QueryPlan(connector=unique_name, connector_type="sink",
                     connector_class="sparkcat.connectors.file_sink:FileStreamSinkConnector",
                     task_class="sparkcat.connectors.file_sink:FileStreamSinkTask", connector_config=config,
                     task_configs=sink.task_configs(1), checkpoint_dir=str(tmp_path / "ck"),
                     bootstrap_servers=broker.bootstrap, trigger_interval_ms=100, batch_max_records=20)
    batches = Batches()
    run_until(spark, plan, batches, lambda: sum(r.records for r in batches.results) >= 50)

    assert [json.loads(line) for line in out.read_text().splitlines()] == [{"id": i, "name": f"n{i}"}
                                                                          for i in range(50)]
    assert batches.results[0].records == 20  # max.records.per.task
    assert batches.results[-1].tasks[0].offsets == [({"kafka_topic": topic, "kafka_partition": 0},
                                                     {"kafka_offset": 50})]
