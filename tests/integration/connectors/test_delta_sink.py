"""The ``delta`` sink on a real local Spark with Delta Lake, a real Kafka broker, and tables read back twice.

Tables are read with delta-spark and with the ``deltalake`` package (delta-rs, no JVM), so a table
sparkcat writes is a table other Delta readers accept.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from pyspark.errors import StreamingQueryException

from sparkcat import plugins
from sparkcat.runtime.execution.plan_builder import class_path
from sparkcat.config.validation import embedded_sink_config
from sparkcat.spark.query_plan import QueryPlan
from sparkcat.spark.driver.queries import register_sources, start_query
from tests.integration.connectors.test_kafka_sink import kafka_worker, start_driver, status_of
from tests.integration.spark.query_helpers import Batches, Gate, wait_until
from tests.integration.spark.test_connector_query import increment_plan, open_store
from tests.kafka_helpers import create_topic
from tests.kafka_helpers import wait_until as wait_for
from tests.spark_fixture import REPO

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

KEYED_TASK = "tests.integration.connectors.keyed_source:KeyedSourceTask"


@pytest.fixture(scope="module")
def spark(spark):
    """conftest's shared local session (Delta extension and jars included), with sparkcat's sources."""
    register_sources(spark)
    return spark


def delta_plan(name: str, ck: Path, table: Path, tasks_max: int = 2, *, sink: dict[str, str] | None = None,
               store_dir: Path | None = None, **plan_fields: Any) -> QueryPlan:
    """An ``increment 1,100`` source whose ``sink.*`` keys name a Delta table, as the herder plans it."""
    plan = increment_plan(name, ck, "", tasks_max, "seq_", store_dir=store_dir, **plan_fields)
    plan.connector_config.update({"name": name, "sink.connector.class": "delta", "sink.table.path": str(table)})
    plan.connector_config.update({f"sink.{k}": v for k, v in (sink or {}).items()})
    sink_config = embedded_sink_config(plan.connector_config)
    cls = plugins.connector_class(sink_config["connector.class"])
    connector = cls()
    connector.start(sink_config)
    plan.sink_class = class_path(cls)
    plan.sink_task_class = class_path(connector.task_class())
    plan.sink_task_configs = connector.task_configs(tasks_max)
    return plan


def table_rows(spark, table: Path) -> list[dict]:
    return [r.asDict() for r in spark.read.format("delta").load(str(table)).collect()]


def positions(rows: list[dict], increment: int) -> list[int]:
    return sorted(r["position"] for r in rows if r["increment"] == increment)


def commits(table: Path) -> list[dict]:
    """Every commit of the Delta log as {action name: action} merged per file, oldest first."""
    out = []
    for f in sorted((table / "_delta_log").glob("*.json")):
        actions: dict = {}
        for line in f.read_text().splitlines():
            for name, action in json.loads(line).items():
                actions.setdefault(name, []).append(action)
        out.append(actions)
    return out


def run(spark, plan: QueryPlan, batches: Batches, condition) -> None:
    gate = Gate()
    query = start_query(spark, plan, batches, gate)
    try:
        wait_until(condition, query)
    finally:
        gate.stop(query)


# ---------------------------------------------------------------- source connector to Delta


def test_increment_to_delta_rows_readable_by_delta_spark_and_deltalake(spark, unique_name, tmp_path):
    table = tmp_path / "seq"
    batches = Batches()
    run(spark, delta_plan(unique_name, tmp_path / "ck", table, batch_max_records=40), batches,
        lambda: batches.position(1) >= 60 and batches.position(100) >= 60)

    n1, n100 = batches.position(1), batches.position(100)
    rows = table_rows(spark, table)
    assert positions(rows, 1) == list(range(1, n1 + 1))
    assert positions(rows, 100) == list(range(1, n100 + 1))
    assert all(r["value"] == r["position"] * r["increment"] for r in rows)
    assert spark.read.format("delta").load(str(table)).columns == ["position", "value", "increment"]

    import deltalake
    other = deltalake.DeltaTable(str(table)).to_pyarrow_table().to_pylist()
    assert sorted(map(tuple, map(dict.values, other))) == sorted(map(tuple, map(dict.values, rows)))

    # Status: both source tasks reported, with their executor and offsets, per batch.
    assert {t for r in batches.results for t in r.tasks} == {0, 1}
    assert {t.worker_id for r in batches.results for t in r.tasks.values()} == {f"{socket.gethostname()}:driver"}
    last = {p["increment"]: o for r in batches.results for t in r.tasks.values() for p, o in t.offsets}
    assert last == {1: {"position": n1}, 100: {"position": n100}}
    # One commit per batch, each carrying the connector's transaction id.
    txns = [c["txn"][0] for c in commits(table) if "txn" in c]
    assert len(txns) == len(batches.results) and {t["appId"] for t in txns} == {unique_name}


def test_records_a_filter_drops_are_not_written_but_their_offsets_advance(spark, unique_name, tmp_path):
    table = tmp_path / "seq"
    plan = delta_plan(unique_name, tmp_path / "ck", table, batch_max_records=40)
    plan.connector_config.update({
        "transforms": "drop", "transforms.drop.type": "org.apache.kafka.connect.transforms.Filter",
        "transforms.drop.predicate": "hundreds", "predicates": "hundreds",
        "predicates.hundreds.type": "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
        "predicates.hundreds.pattern": "seq_100"})
    batches = Batches()
    run(spark, plan, batches, lambda: batches.position(1) >= 60 and batches.position(100) >= 60)

    rows = table_rows(spark, table)
    assert positions(rows, 100) == []  # dropped by the Filter: not in the table
    assert positions(rows, 1) == list(range(1, batches.position(1) + 1))


def test_kill_and_replay_leaves_no_duplicate_and_no_missing_rows(spark, unique_name, tmp_path):
    """A crash after the Delta commit but before Spark's checkpoint commit replays the batch: Delta skips it."""
    table, ck, stores = tmp_path / "seq", tmp_path / "ck", tmp_path / "stores"
    store = open_store(stores)
    first = Batches(store)
    run(spark, delta_plan(unique_name, ck, table, store_dir=stores, batch_max_records=30), first,
        lambda: len(first.results) >= 3)
    # The crash: the last batch written to Delta is not committed in Spark's checkpoint (nor anything after it).
    last = max(c["txn"][0]["version"] for c in commits(table) if "txn" in c) % 1000  # sink_batch_id's batch id
    for log in ("offsets", "commits"):
        for f in (ck / log).iterdir():
            batch = f.name.strip(".").removesuffix(".crc")
            if batch.isdigit() and (int(batch) > last or (log == "commits" and int(batch) == last)):
                f.unlink()
    commits_before = len(commits(table))

    second = Batches(store)
    run(spark, delta_plan(unique_name, ck, table, store_dir=stores, batch_max_records=30), second,
        lambda: second.position(1) >= first.position(1) + 40)
    assert second.results[0].batch_id == last  # the batch was replayed ...
    txn_versions = [c["txn"][0]["version"] for c in commits(table) if "txn" in c]
    assert len(txn_versions) == len(set(txn_versions))  # ... and not committed to Delta a second time
    assert len(commits(table)) == commits_before + len(second.results) - 1

    # A fresh checkpoint: batch ids restart at 0, the offsets store says where to resume; nothing skipped.
    third = Batches(store)
    run(spark, delta_plan(unique_name, tmp_path / "ck2", table, store_dir=stores, batch_max_records=30), third,
        lambda: third.position(1) >= second.position(1) + 40)
    rows = table_rows(spark, table)
    final = store.get(unique_name)
    for k in (1, 100):
        assert positions(rows, k) == list(range(1, final[f'{{"increment":{k}}}']["position"] + 1))
    store.close()


def test_sigkilled_driver_between_delta_commit_and_checkpoint_commit_replays_without_duplicates(
        spark, unique_name, tmp_path):
    """The driver process is SIGKILLed after batch 2 reached Delta and before Spark committed it."""
    table, ck, stores, markers = tmp_path / "seq", tmp_path / "ck", tmp_path / "stores", tmp_path / "markers"
    markers.mkdir()
    plan = delta_plan(unique_name, ck, table, store_dir=stores, batch_max_records=30)
    (tmp_path / "plan.json").write_text(plan.to_json())
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.integration.connectors.delta_driver", str(tmp_path / "plan.json"),
         str(stores), str(markers)], cwd=REPO, start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=open(tmp_path / "driver.log", "wb"))
    try:
        wait_for(lambda: (markers / "2").exists() or child.poll() is not None, timeout_s=300,
                 message="batch 2 written by the driver process")
        assert child.poll() is None, (tmp_path / "driver.log").read_text()[-3000:]
    finally:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait(30)
    # The crash window: batch 2 is in Delta (its transaction version), not in Spark's commit log.
    assert 2 in {c["txn"][0]["version"] % 1000 for c in commits(table) if "txn" in c}
    assert not (ck / "commits" / "2").exists() and (ck / "offsets" / "2").exists()
    written = table_rows(spark, table)

    store = open_store(stores)
    after = Batches(store)
    run(spark, plan, after, lambda: after.position(1) >= 120)
    assert after.results[0].batch_id == 2  # replayed ...
    rows = table_rows(spark, table)
    final = store.get(unique_name)
    for k in (1, 100):
        assert positions(rows, k) == list(range(1, final[f'{{"increment":{k}}}']["position"] + 1))
    assert len(rows) > len(written)
    txn_versions = [c["txn"][0]["version"] for c in commits(table) if "txn" in c]
    assert len(txn_versions) == len(set(txn_versions))  # ... without a second Delta commit of batch 2
    store.close()


def test_merge_upserts_by_key_and_schema_evolution_adds_a_column(spark, unique_name, tmp_path):
    table, ck = tmp_path / "latest", tmp_path / "ck"
    merge = {"write.mode": "merge", "key.schema": "id BIGINT"}

    def plan(note: bool, evolve: bool) -> QueryPlan:
        sink = {**merge, "schema.evolution": str(evolve).lower()}
        p = delta_plan(unique_name, ck, table, 1, sink=sink, task_class=KEYED_TASK, batch_max_records=15)
        p.connector_config["increments"] = "1"
        for t in p.task_configs:
            t.update({"increments": "1", "keyed.note": str(note).lower()})
        return p

    batches = Batches()
    run(spark, plan(note=False, evolve=False), batches, lambda: batches.position(1) >= 40)
    n = batches.position(1)
    rows = sorted(table_rows(spark, table), key=lambda r: r["id"])
    # One row per key, holding the key's latest record.
    assert [(r["id"], r["position"]) for r in rows] == [(i, max(p for p in range(1, n + 1) if p % 5 == i))
                                                        for i in range(5)]

    # The source's records gain a column: refused without schema.evolution ...
    query = start_query(spark, plan(note=True, evolve=False), Batches(), None)
    with pytest.raises(StreamingQueryException) as failure:
        query.awaitTermination(120)
    assert "note" in str(failure.value)
    assert len(table_rows(spark, table)) == 5 and "note" not in spark.read.format("delta").load(str(table)).columns

    # ... and added with it; the refused batch is replayed and merged once.
    evolved = Batches()
    run(spark, plan(note=True, evolve=True), evolved, lambda: evolved.position(1) >= n + 30)
    m = evolved.position(1)
    rows = sorted(table_rows(spark, table), key=lambda r: r["id"])
    assert [(r["id"], r["position"], r["note"]) for r in rows] == [
        (i, p, f"note-{p}") for i in range(5) for p in [max(q for q in range(1, m + 1) if q % 5 == i)]]


# ---------------------------------------------------------------- Kafka-fed sink connector


def test_kafka_topics_into_delta_with_decoded_columns_offsets_and_status(spark, broker, unique_name, tmp_path):
    topic, table = f"{unique_name}-orders", tmp_path / "orders"
    create_topic(broker.bootstrap, topic, partitions=3)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    for i in range(300):
        producer.produce(topic, key=f"order-{i}".encode(), partition=i % 3,
                         value=json.dumps({"id": i, "amount": i * 1.5, "item": f"item-{i % 7}"}).encode())
    assert producer.flush(30) == 0

    driver = start_driver(spark, kafka_worker(broker, tmp_path, unique_name))
    try:
        driver.herder.put_connector_config("orders-delta", {
            "connector.class": "delta", "topics": topic, "tasks.max": "2", "table.path": str(table),
            "key.converter": "org.apache.kafka.connect.storage.StringConverter",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter.schemas.enable": "false", "value.schema": "id BIGINT, amount DOUBLE, item STRING",
            "partition.columns": "item", "trigger.interval.ms": "300", "batch.max.records": "100"})
        wait_for(lambda: any(table.glob("_delta_log/*.json")) and len(table_rows(spark, table)) >= 300,
                 timeout_s=180, message="300 rows in the Delta table")
        status = wait_for(lambda: (s := status_of(driver, "orders-delta"))["tasks"] and s, message="status")
    finally:
        driver.stop()

    df = spark.read.format("delta").load(str(table))
    assert df.columns == ["key", "id", "amount", "item", "kafka_topic", "kafka_partition", "kafka_offset",
                          "kafka_timestamp"]
    rows = [r.asDict() for r in df.collect()]
    assert sorted(r["id"] for r in rows) == list(range(300))  # no loss, no duplicates
    assert all(r["key"] == f"order-{r['id']}" and r["kafka_partition"] == r["id"] % 3
               and r["kafka_offset"] == r["id"] // 3 and r["item"] == f"item-{r['id'] % 7}" for r in rows)
    import deltalake
    assert deltalake.DeltaTable(str(table)).metadata().partition_columns == ["item"]

    assert status["type"] == "sink" and status["connector"]["state"] == "RUNNING"
    assert [(t["id"], t["state"]) for t in status["tasks"]] == [(0, "RUNNING"), (1, "RUNNING")]
    assert all(t["worker_id"] for t in status["tasks"])
    offsets = {(p["kafka_topic"], p["kafka_partition"]): o["kafka_offset"]
               for p, o in driver.stores.offsets.partitions("orders-delta")}
    assert offsets == {(topic, p): 100 for p in range(3)}


def test_a_query_starting_behind_the_table_does_not_write_what_the_table_holds(spark, broker, unique_name,
                                                                                tmp_path):
    """Leadership moved: the new leader's query starts from the offsets store, which is written after Delta's
    commit and so can be behind the old leader's last batches (found by bench/soak.py: 1,100 rows twice).
    Here the stored positions are moved back by hand; the rows the table holds are not appended again."""
    from sparkcat.model.config_state import TargetState

    topic, table = unique_name, tmp_path / "held"

    def send(ids: range) -> None:
        producer = Producer({"bootstrap.servers": broker.bootstrap})
        for i in ids:
            producer.produce(topic, json.dumps({"id": i}).encode(), partition=i % 2)
        assert producer.flush(30) == 0

    def ids() -> list[int]:
        return sorted(r["id"] for r in table_rows(spark, table)) if (table / "_delta_log").exists() else []
    create_topic(broker.bootstrap, topic, partitions=2)
    send(range(200))
    driver = start_driver(spark, kafka_worker(broker, tmp_path, unique_name))
    try:
        driver.herder.put_connector_config("held", {
            "connector.class": "delta", "topics": topic, "table.path": str(table), "trigger.interval.ms": "300",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter", "value.converter.schemas.enable": "false",
            "value.schema": "id BIGINT"})
        wait_for(lambda: len(ids()) >= 200, timeout_s=180, message="the first 200 rows")
        driver.herder.set_target_state("held", TargetState.STOPPED)
        wait_for(lambda: status_of(driver, "held")["connector"]["state"] == "STOPPED", timeout_s=60, message="STOPPED")
        driver.herder.alter_connector_offsets("held", [({"kafka_topic": topic, "kafka_partition": p},
                                                        {"kafka_offset": 40}) for p in (0, 1)])
        send(range(200, 300))
        driver.herder.set_target_state("held", TargetState.STARTED)
        wait_for(lambda: 299 in ids(), timeout_s=180, message="the rows sent after the move")
        wait_for(lambda: sum(o["kafka_offset"] for _p, o in driver.herder.connector_offsets("held")) == 300,
                 timeout_s=60, message="the positions at the end of the topic")
    finally:
        driver.stop()
    assert ids() == list(range(300))


@pytest.mark.parametrize("ddl", ["id NOSUCHTYPE", "BIGINT"])
def test_a_schema_that_is_not_a_ddl_field_list_is_refused_naming_the_key(spark, ddl):
    from sparkcat.config.validation import validate_connector_config
    result = validate_connector_config({"name": "d", "connector.class": "delta", "topics": "t", "table.path": "/x",
                                        "value.converter.schemas.enable": "false", "value.schema": ddl})
    assert list(result.errors) == ["value.schema"]


def test_kafka_merge_into_a_catalog_table_by_string_key_with_tombstones_deleting(spark, broker, unique_name,
                                                                                 tmp_path):
    """table.name, write.mode=merge, JsonConverter values in Connect's schema/payload envelope, delete.enabled."""
    topic, name = f"{unique_name}-prices", f"prices_{unique_name.replace('-', '_')}"
    spark.sql(f"CREATE TABLE {name} (key STRING, price BIGINT, kafka_topic STRING, kafka_partition INT, "
              f"kafka_offset BIGINT, kafka_timestamp TIMESTAMP) USING delta LOCATION '{tmp_path / 'prices'}'")
    create_topic(broker.bootstrap, topic, partitions=2)
    schema = {"type": "struct", "optional": False, "fields": [{"type": "int64", "optional": True, "field": "price"}]}
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    for i in range(100):  # 10 keys, each updated 10 times, in one partition per key
        key = f"sku-{i % 10}"
        producer.produce(topic, key=key.encode(), partition=i % 10 % 2,
                         value=json.dumps({"schema": schema, "payload": {"price": i}}).encode())
    # sku-0 and sku-1 deleted (tombstones), then sku-1 back; sku-2 deleted as Connect's JsonConverter writes a null
    # value that has a schema (Debezium's ExtractNewRecordState makes deletes so)
    for k in (0, 1):
        producer.produce(topic, key=f"sku-{k}".encode(), partition=k % 2, value=None)
    producer.produce(topic, key=b"sku-2", partition=0, value=json.dumps({"schema": schema, "payload": None}).encode())
    producer.produce(topic, key=b"sku-1", partition=1,
                     value=json.dumps({"schema": schema, "payload": {"price": 1000}}).encode())
    assert producer.flush(30) == 0

    driver = start_driver(spark, kafka_worker(broker, tmp_path, unique_name))
    try:
        driver.herder.put_connector_config("prices-delta", {
            "connector.class": "delta", "topics": topic, "tasks.max": "1", "table.name": name,
            "write.mode": "merge", "value.schema": "price BIGINT", "delete.enabled": "true",
            "key.converter": "org.apache.kafka.connect.storage.StringConverter",
            "trigger.interval.ms": "300", "batch.max.records": "30"})
        latest = {("sku-1", 1000)} | {(f"sku-{k}", 90 + k) for k in range(3, 10)}
        wait_for(lambda: {(r.key, r.price) for r in spark.table(name).collect()} == latest, timeout_s=180,
                 message="the latest price per key, sku-0 and sku-2 deleted")
    finally:
        driver.stop()
    assert spark.table(name).count() == 8
