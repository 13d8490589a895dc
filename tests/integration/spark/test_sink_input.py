"""Sink connectors' input on Spark's Kafka source: a real Apache Kafka broker and a local[2] Spark.

What a sink connector's user sees: every record reaches exactly one task, each task owns a stable
set of partitions and runs as one SinkTask instance per micro-batch, batches are bounded by
``batch.max.records`` x tasks, a fresh checkpoint (or another ``tasks.max``) continues exactly where
the offsets store says, new topics matching ``topics.regex`` are picked up, only committed
transactions are read, and a FAILED task's partitions go to the other tasks.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from pyspark.errors import StreamingQueryException

from sparkcat.spark.driver.kafka_input import Assignment, murmur3_int, route
from sparkcat.spark.query_plan import QueryPlan
from sparkcat.spark.driver.queries import start_query
from sparkcat.storage.local.log import LocalLog
from sparkcat.storage.offsets import OffsetStore
from tests.integration.spark.query_helpers import WAIT_S, Batches, Gate, run_until, wait_until
from tests.integration.spark.recording_sink import DIR_CONFIG, FAIL_AT_CONFIG, recorded
from tests.kafka_helpers import create_topic, end_offsets

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

TASK = "tests.integration.spark.recording_sink:RecordingSinkTask"


def produce(bootstrap: str, topic: str, n: int, partitions: int, first: int = 0) -> None:
    """Records first..first+n-1: key ``k{i}``, value ``v{i}`` (every 10th a tombstone), partition i % partitions."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "enable.idempotence": True})
    for i in range(first, first + n):
        producer.produce(topic, key=f"k{i}".encode(), value=None if i % 10 == 9 else f"v{i}".encode(),
                         partition=i % partitions)
    assert producer.flush(30) == 0


def marker_passed(bootstrap: str, topic: str, partitions: int, first: int, batches: Batches) -> Callable[[], bool]:
    """Write a marker to each partition (records ``first``.. of ``produce``) and return the condition that the
    query's batches reported offsets past every partition's end: each batch before the markers' then ran, so
    a further (duplicate) batch of the earlier records would have shown."""
    produce(bootstrap, topic, partitions, partitions, first=first)
    return offsets_past(bootstrap, topic, batches)


def offsets_past(bootstrap: str, topic: str, batches: Batches) -> Callable[[], bool]:
    """The condition that ``batches`` reported an offset at or past each partition's end offset as of now."""
    ends = end_offsets(bootstrap, topic)
    return lambda: all(batches.offset(topic, p) >= end for p, end in ends.items())


def produce_marker(bootstrap: str, topic: str, partition: int, key: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce(topic, key=key.encode(), value=key.encode(), partition=partition)
    assert producer.flush(30) == 0


def sink_plan(name: str, ck: Path, out: Path, bootstrap: str, tasks: int, config: dict[str, str], *,
              store_dir: Path | None = None, task_overrides: dict[int, dict[str, str]] | None = None,
              **fields: Any) -> QueryPlan:
    out.mkdir(parents=True, exist_ok=True)
    task_configs = [{**config, DIR_CONFIG: str(out), "task.id": str(t), **(task_overrides or {}).get(t, {})}
                    for t in range(tasks)]
    store = {"backend": "local", "dir": str(store_dir), "name": "offsets"} if store_dir else {}
    return QueryPlan(connector=name, connector_type="sink", connector_class="x:RecordingSink", task_class=TASK,
                     connector_config=config, task_configs=task_configs, checkpoint_dir=str(ck),
                     bootstrap_servers=bootstrap, offsets_store=store, trigger_interval_ms=200, **fields)


def records_of(out: Path) -> list[dict]:
    return [dict(r, _batch=f["batch"], _task=f["task"]) for f in recorded(out) for r in f["records"]]


def check_exactly_once(rows: list[dict], topic: str, n: int, partitions: int, first: int = 0) -> None:
    """Records first..first+n-1 of ``topic`` each exactly once with their key and value."""
    keys = Counter((r["partition"], r["key"]) for r in rows if r["topic"] == topic)
    assert not [k for k, c in keys.items() if c > 1], "duplicates"
    assert set(keys) == {(i % partitions, f"k{i}") for i in range(first, first + n)}
    for r in rows:
        i = int(r["key"][1:])
        assert r["value"] == (None if i % 10 == 9 else f"v{i}")
        assert r["timestamp"] > 1_600_000_000_000


# ---------------------------------------------------------------- routing


def test_route_keys_are_sparks_hash_and_give_each_task_one_spark_partition(spark):
    from pyspark.sql import functions as F
    ints = [-(2**31), -7, -1, 0, 1, 2, 42, 1000, 2**31 - 1]
    got = spark.createDataFrame([(i,) for i in ints], "i INT").select(F.hash("i").alias("h")).collect()
    assert [r.h for r in got] == [murmur3_int(i) for i in ints]

    tps = [("a", p) for p in range(5)] + [("b", 0), ("b", 1)]
    rows = [(t, p, i) for t, p in tps for i in range(20)]
    df = spark.createDataFrame(rows, "topic STRING, partition INT, n INT").repartition(7)
    assignment = Assignment.of(tps, [0, 2, 3])  # task 1 FAILED
    placed = route(df, assignment).select(F.spark_partition_id().alias("sp"), "_task", "topic", "partition").collect()
    assert {(r.topic, r.partition): r._task for r in placed} == assignment.owners
    spark_partitions_of = {t: {r.sp for r in placed if r._task == t} for t in (0, 2, 3)}
    assert all(len(s) == 1 for s in spark_partitions_of.values())
    assert len({next(iter(s)) for s in spark_partitions_of.values()}) == 3


def test_one_task_gets_every_partition_in_one_spark_partition_without_a_shuffle(spark):
    from pyspark.sql import functions as F
    tps = [("a", 0), ("a", 1), ("b", 0)]
    rows = spark.sparkContext.parallelize([(t, p, i) for t, p in tps for i in range(20)], 3)  # three partitions
    routed = route(spark.createDataFrame(rows, "topic STRING, partition INT, n INT"), Assignment.of(tps, [0]))
    placed = routed.select(F.spark_partition_id().alias("sp"), "_task", "topic", "partition", "n").collect()
    assert len(placed) == 60 and {r._task for r in placed} == {0} and {r.sp for r in placed} == {0}
    for t, p in tps:  # each Kafka partition's rows keep their order
        assert [r.n for r in placed if (r.topic, r.partition) == (t, p)] == list(range(20))
    assert "Exchange" not in routed._jdf.queryExecution().executedPlan().toString(), "no shuffle"


# ---------------------------------------------------------------- against the broker


def test_each_task_gets_its_partitions_once_per_batch_and_batches_are_bounded(spark, broker, unique_name, tmp_path):
    create_topic(broker.bootstrap, unique_name, partitions=3)
    produce(broker.bootstrap, unique_name, 900, 3)
    out = tmp_path / "out"
    plan = sink_plan(unique_name, tmp_path / "ck", out, broker.bootstrap, 2, {"topics": unique_name},
                     batch_max_records=100)
    batches, gate = Batches(), Gate()
    query = start_query(spark, plan, batches, gate)
    try:
        wait_until(lambda: batches.records() >= 900, query)
        produce(broker.bootstrap, unique_name, 300, 3, first=900)  # more while it runs
        wait_until(lambda: batches.records() >= 1200, query)
        wait_until(marker_passed(broker.bootstrap, unique_name, 3, 1200, batches), query)  # 1200-1202
    finally:
        gate.stop(query)
    rows = records_of(out)
    check_exactly_once(rows, unique_name, 1203, 3)
    # sorted partitions 0, 1, 2 over two tasks: [0, 1] and [2]
    assert {r["partition"]: r["_task"] for r in rows} == {0: 0, 1: 0, 2: 1}
    # one SinkTask instance per task and batch
    instances = Counter((f["batch"], f["task"]) for f in recorded(out))
    assert set(instances.values()) == {1}
    # batch.max.records x tasks = 200 records per batch at most, and used when there is a backlog: Spark
    # spreads it over the partitions by their backlog, each share rounded down (3 x 66 here)
    assert 200 - 3 <= batches.results[0].records <= 200
    last = {}
    for result in batches.results:
        assert result.records <= 200
        for t in result.tasks.values():
            last.update({(p["kafka_topic"], p["kafka_partition"]): o["kafka_offset"] for p, o in t.offsets})
    assert last == {(unique_name, p): 401 for p in range(3)}


def test_topics_regex_picks_up_a_topic_created_later(spark, broker, unique_name, tmp_path):
    first, later, other = f"{unique_name}-a", f"{unique_name}-b", f"x{unique_name}-c"
    create_topic(broker.bootstrap, first, partitions=3)
    create_topic(broker.bootstrap, other, partitions=1)
    produce(broker.bootstrap, first, 90, 3)
    produce(broker.bootstrap, other, 10, 1)
    out = tmp_path / "out"
    plan = sink_plan(unique_name, tmp_path / "ck", out, broker.bootstrap, 2, {"topics.regex": f"{unique_name}-.*"})
    batches, gate = Batches(), Gate()
    query = start_query(spark, plan, batches, gate)
    try:
        wait_until(lambda: batches.records() >= 90, query)
        create_topic(broker.bootstrap, later, partitions=2)
        produce(broker.bootstrap, later, 40, 2)
        wait_until(lambda: batches.records() >= 130, query)
        passed = [marker_passed(broker.bootstrap, first, 3, 90, batches),
                  marker_passed(broker.bootstrap, later, 2, 40, batches)]
        wait_until(lambda: all(p() for p in passed), query)
    finally:
        gate.stop(query)
    rows = records_of(out)
    assert Counter(r["topic"] for r in rows) == {first: 93, later: 42}  # nothing of ``other``
    check_exactly_once(rows, first, 93, 3)
    check_exactly_once(rows, later, 42, 2)
    # five partitions sorted by (topic, partition) over two tasks: a:0..a:2 -> 0, b:0, b:1 -> 1... once b exists
    assert {(r["topic"], r["partition"]): r["_task"] for r in rows if r["topic"] == later} == {(later, 0): 1,
                                                                                               (later, 1): 1}


def test_fresh_checkpoint_and_more_tasks_continue_from_the_offsets_store(spark, broker, unique_name, tmp_path):
    create_topic(broker.bootstrap, unique_name, partitions=3)
    produce(broker.bootstrap, unique_name, 450, 3)
    stores, out = tmp_path / "stores", tmp_path / "out"
    store = OffsetStore(LocalLog(stores, "offsets"))
    config = {"topics": unique_name}

    before = Batches(store)
    run_until(spark, sink_plan(unique_name, tmp_path / "ck1", out, broker.bootstrap, 1, config,
                               store_dir=stores), before, lambda: before.records() >= 450)
    assert {p["kafka_partition"]: o["kafka_offset"] for p, o in store.partitions(unique_name)} == {0: 150, 1: 150,
                                                                                                  2: 150}

    produce(broker.bootstrap, unique_name, 150, 3, first=450)
    after = Batches(store)
    # tasks.max 1 -> 3 and a fresh checkpoint: the offsets store says where to go on
    run_until(spark, sink_plan(unique_name, tmp_path / "ck2", out, broker.bootstrap, 3, config,
                               store_dir=stores), after, lambda: after.records() >= 150,
              then=lambda: marker_passed(broker.bootstrap, unique_name, 3, 600, after))  # 600-602

    produce(broker.bootstrap, unique_name, 30, 3, first=603)
    again = Batches(store)
    # the same checkpoint again: it continues from the checkpoint
    run_until(spark, sink_plan(unique_name, tmp_path / "ck2", out, broker.bootstrap, 3, config,
                               store_dir=stores), again, lambda: again.records() >= 30,
              then=lambda: marker_passed(broker.bootstrap, unique_name, 3, 633, again))  # 633-635

    rows = records_of(out)
    check_exactly_once(rows, unique_name, 636, 3)
    assert {r["partition"]: r["_task"] for r in rows if int(r["key"][1:]) >= 450} == {0: 0, 1: 1, 2: 2}
    assert {t for r in after.results for t in r.tasks} == {0, 1, 2}
    assert {p["kafka_partition"]: o["kafka_offset"] for p, o in store.partitions(unique_name)} == {0: 212, 1: 212,
                                                                                                  2: 212}
    store.close()


def test_reads_only_committed_transactions(spark, broker, unique_name, tmp_path):
    """An open transaction holds its records back (read_committed); they arrive once committed.

    Partition 0 has the transaction; a marker written to partition 1 after the transaction's records shows
    that the query read past the moment they were in the log."""
    create_topic(broker.bootstrap, unique_name, partitions=2)
    produce(broker.bootstrap, unique_name, 20, 1)  # k0..k19, all to partition 0
    producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": f"tx-{unique_name}"})
    producer.init_transactions(30)
    producer.begin_transaction()
    for i in range(20, 30):
        producer.produce(unique_name, key=f"k{i}".encode(), value=f"v{i}".encode(), partition=0)
    assert producer.flush(30) == 0
    out = tmp_path / "out"
    batches, gate = Batches(), Gate()
    query = start_query(spark, sink_plan(unique_name, tmp_path / "ck", out, broker.bootstrap, 1,
                                         {"topics": unique_name}), batches, gate)
    try:
        wait_until(lambda: batches.records() >= 20, query)
        produce_marker(broker.bootstrap, unique_name, 1, "marker-open")
        wait_until(lambda: batches.offset(unique_name, 1) >= 1, query)
        assert batches.records() == 21 and batches.offset(unique_name, 0) == 20  # nothing of the open transaction
        producer.commit_transaction(30)
        wait_until(lambda: batches.records() >= 31, query)
        produce_marker(broker.bootstrap, unique_name, 0, "marker-committed")
        wait_until(offsets_past(broker.bootstrap, unique_name, batches), query)  # a duplicate would show by now
    finally:
        gate.stop(query)
    rows = records_of(out)
    assert sorted(r["key"] for r in rows) == sorted([f"k{i}" for i in range(30)] + ["marker-open", "marker-committed"])
    assert sorted(r["value"] for r in rows if r["partition"] == 0 and 20 <= r["offset"] < 30) == sorted(
        f"v{i}" for i in range(20, 30))


def test_a_failed_task_is_named_and_its_partitions_go_to_the_other_tasks(spark, broker, unique_name, tmp_path):
    create_topic(broker.bootstrap, unique_name, partitions=2)
    produce(broker.bootstrap, unique_name, 200, 2)  # 100 per partition
    stores, out = tmp_path / "stores", tmp_path / "out"
    store = OffsetStore(LocalLog(stores, "offsets"))
    fail = {0: {FAIL_AT_CONFIG: f"{unique_name}:0:30"}}

    def plan(**fields: Any) -> QueryPlan:
        return sink_plan(unique_name, tmp_path / "ck", out, broker.bootstrap, 2, {"topics": unique_name},
                         store_dir=stores, task_overrides=fail, batch_max_records=10, **fields)

    query = start_query(spark, plan(), Batches(store), None)
    with pytest.raises(StreamingQueryException) as failure:
        query.awaitTermination(WAIT_S)
    error = str(failure.value)
    assert f"sparkcat task failed: {unique_name}-0: ValueError: injected failure at {unique_name}:0:30" in error
    assert f"{unique_name}-1:" not in error
    assert {p["kafka_partition"]: o["kafka_offset"] for p, o in store.partitions(unique_name)} == {0: 30, 1: 30}

    # Same checkpoint, task 0 FAILED: task 1 takes both partitions (a Connect group rebalance) and goes on.
    excluded = Batches(store)
    run_until(spark, plan(excluded_tasks=[0]), excluded, lambda: excluded.records() >= 140,
              then=lambda: marker_passed(broker.bootstrap, unique_name, 2, 200, excluded))  # offset 100 of each
    assert {t for r in excluded.results for t in r.tasks} == {1}
    # the first batch replays the failed one as it was planned (two tasks: 20 records); later ones are
    # planned for one live task (batch.max.records x 1)
    assert excluded.results[0].records == 20
    assert all(r.records <= 10 for r in excluded.results[1:])
    rows = records_of(out)
    # Nothing lost. Task 1's part of the failed batch (partition 1, offsets 30-39) may have been flushed
    # before task 0 failed, and is then put again by the replay (at least once); nothing else twice.
    seen = Counter((r["partition"], r["offset"]) for r in rows)
    assert set(seen) == {(p, o) for p in (0, 1) for o in range(101)}
    assert {k for k, c in seen.items() if c > 1} <= {(1, o) for o in range(30, 40)}
    assert {r["partition"] for r in rows if r["_task"] == 1 and r["offset"] >= 40} == {0, 1}
    assert not [r for r in rows if r["_task"] == 0 and r["offset"] >= 30]
    assert {p["kafka_partition"]: o["kafka_offset"] for p, o in store.partitions(unique_name)} == {0: 101, 1: 101}
    store.close()
