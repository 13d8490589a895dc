"""The ``sparkcat-kafka`` streaming source against a real broker (Tansu) and a local[2] Spark.

The pure planning functions (task grouping, budget, resets) are tested first, without either.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import Counter

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from sparkcat.errors import ConfigError
from sparkcat.spark.kafka_source import (
    ARROW_SCHEMA,
    FORMAT,
    SCHEMA,
    SCHEMA_STRUCT,
    KafkaInputPartition,
    KafkaSource,
    KafkaSourceOptions,
    _consumer_config,
    _find_ends,
    assign_tasks,
    commit_group_offsets,
    end_offsets,
    plan_end_offsets,
    plan_partitions,
    read_partition,
    sink_group_id,
    spread_budget,
)
from sparkcat.spark.plan import TASK_FAILURE_MARK
from tests.broker import free_port

# -- pure planning -------------------------------------------------------------------------------


def test_schema_ddl_struct_and_arrow_agree():
    assert KafkaSource.SCHEMA == SCHEMA
    assert KafkaSource.name() == FORMAT == "sparkcat-kafka"
    assert [f.name for f in SCHEMA_STRUCT.fields] == ARROW_SCHEMA.names
    assert [f.name for f in SCHEMA_STRUCT.fields] == [
        "topic", "partition", "offset", "timestamp", "key", "value", "_task",
    ]


def test_assign_tasks_sorts_and_groups_like_connect():
    tps = [("b", 0), ("a", 1), ("a", 0), ("c", 0), ("a", 2)]
    assert assign_tasks(tps, 2) == [[("a", 0), ("a", 1), ("a", 2)], [("b", 0), ("c", 0)]]
    assert assign_tasks(tps, 1) == [sorted(tps)]
    assert assign_tasks([("a", 0)], 3) == [[("a", 0)], [], []]


def test_spread_budget_is_fair_and_never_exceeds():
    assert spread_budget([100, 100, 100], 10) == [4, 3, 3]
    assert spread_budget([2, 100, 0], 10) == [2, 8, 0]
    assert spread_budget([5, 5], 100) == [5, 5]
    assert spread_budget([], 5) == []
    assert spread_budget([7, 3], 0) == [0, 0]
    for available in ([1, 2, 3, 1000], [0, 0, 9], [50, 1, 1, 1, 1]):
        for budget in range(0, 60, 7):
            takes = spread_budget(available, budget)
            assert sum(takes) == min(budget, sum(available))
            assert all(0 <= t <= a for t, a in zip(takes, available, strict=True))


def test_plan_end_offsets_caps_each_task_and_starts_new_partitions_at_the_low_watermark():
    ends = {("t", 0): 100, ("t", 1): 100, ("t", 2): 100}
    start = {"t:0": 10, "t:1": 95}
    end = plan_end_offsets(start, ends, tasks=2, budget_per_task=20, lows={("t", 2): 40})
    # task 0 owns t:0 and t:1 (5 available there, the rest goes to t:0); task 1 owns t:2
    assert end == {"t:0": 25, "t:1": 100, "t:2": 60}
    assert list(end) == ["t:0", "t:1", "t:2"]  # sorted keys: equal offsets serialise equally
    assert plan_end_offsets(start, ends, tasks=2, budget_per_task=None) == {"t:0": 100, "t:1": 100, "t:2": 100}
    assert plan_end_offsets(end, ends, tasks=2, budget_per_task=20) == {"t:0": 45, "t:1": 100, "t:2": 80}


def test_plan_end_offsets_resets_only_past_an_exact_end_and_carries_vanished_partitions():
    ends = {("t", 0): 5, ("t", 1): 5}
    start = {"t:0": 50, "t:1": 50, "gone:0": 7}
    planned = plan_end_offsets(start, ends, 1, None, lows={("t", 0): 0}, exact={("t", 0)}, carry=["gone:0"])
    # t:0's end is exact: offset 50 is out of range -> earliest; t:1's end is a lower bound -> wait
    assert planned == {"gone:0": 7, "t:0": 5, "t:1": 50}
    assert plan_partitions(start, planned, 1) == [(0, [("t", 0, 0, 5)])]


def test_plan_partitions_depends_only_on_offsets():
    start = {"a:0": 3, "a:1": 9, "b:0": 0}
    end = {"a:0": 8, "a:1": 9, "b:0": 4, "c:0": 2}
    assert plan_partitions(start, end, 2) == [(0, [("a", 0, 3, 8)]), (1, [("b", 0, 0, 4), ("c", 0, 0, 2)])]
    assert plan_partitions(start, end, 2) == plan_partitions(dict(start), dict(end), 2)
    assert plan_partitions(end, end, 2) == []


def test_options_are_checked():
    opts = KafkaSourceOptions.from_options(
        {"bootstrap.servers": "h:1", "topics": "a, b", "tasks": "3", "kafka.client.id": "x",
         "starting.offsets": '{"a:0": 5}', "connector": "c"}
    )
    assert opts.topics == ("a", "b") and opts.tasks == 3 and opts.client_config == {"client.id": "x"}
    assert opts.starting_offsets == {"a:0": 5} and opts.connector == "c"
    assert opts.subscribed("a") and not opts.subscribed("c")
    regex = KafkaSourceOptions.from_options({"bootstrap.servers": "h:1", "topics.regex": "orders-.*"})
    assert regex.subscribed("orders-eu") and not regex.subscribed("xorders-eu")
    with pytest.raises(ConfigError) as info:
        KafkaSourceOptions.from_options({"topics": "a", "topics.regex": "b", "tasks": "0",
                                         "starting.offsets": "[1]"})
    assert {"bootstrap.servers", "topics", "tasks", "starting.offsets"} <= set(info.value.errors)


# -- helpers for the broker tests ----------------------------------------------------------------



def _create_topic(bootstrap: str, topic: str, partitions: int = 3) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(timeout=30)


def _produce(bootstrap: str, topic: str, n: int, partitions: int = 3, first: int = 0) -> None:
    """Records first..first+n-1: key ``k{i}``, value ``v{i}`` (every 10th a tombstone), partition i % partitions."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "enable.idempotence": True})
    for i in range(first, first + n):
        value = None if i % 10 == 9 else f"v{i}".encode()
        producer.produce(topic, key=f"k{i}".encode(), value=value, partition=i % partitions)
        producer.poll(0)
    assert producer.flush(30) == 0


def _truth(bootstrap: str, topic: str) -> dict[tuple[int, int], tuple[bytes | None, bytes | None]]:
    """(partition, offset) -> (key, value) of every record in the topic, read independently."""
    from tests.kafka_helpers import read_topic

    return {(p, o): (k, v) for p, o, k, v in read_topic(bootstrap, topic)}


class Collector:
    """A foreachBatch function that keeps every row (it runs in this, the driver's, process)."""

    def __init__(self) -> None:
        self.rows: list[dict] = []
        self.batches: list[tuple[int, int, float]] = []  # (batch id, rows, seconds to collect)
        self.lock = threading.Lock()

    def __call__(self, df, batch_id: int) -> None:
        t0 = time.monotonic()
        rows = [row.asDict() for row in df.collect()]
        with self.lock:
            self.batches.append((batch_id, len(rows), time.monotonic() - t0))
            self.rows.extend(dict(row, _batch=batch_id) for row in rows)

    def count(self) -> int:
        with self.lock:
            return len(self.rows)

    def keys(self) -> list[tuple[str, int, int]]:
        with self.lock:
            return [(r["topic"], r["partition"], r["offset"]) for r in self.rows]


@pytest.fixture(scope="module")
def spark():
    from tests.spark_fixture import make_spark

    session = make_spark()
    session.dataSource.register(KafkaSource)
    yield session
    for query in session.streams.active:
        query.stop()


def _start(spark, options: dict, checkpoint: str, collector: Collector, name: str | None = None):
    reader = spark.readStream.format(FORMAT).options(**options)
    writer = (reader.load().writeStream.foreachBatch(collector)
              .option("checkpointLocation", checkpoint).trigger(processingTime="500 milliseconds"))
    if name:
        writer = writer.queryName(name)
    return writer.start()


def _wait_rows(query, collector: Collector, n: int, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while collector.count() < n:
        if query.exception() is not None:
            raise AssertionError(f"query failed: {query.exception()}")
        if time.monotonic() > deadline:
            raise AssertionError(f"only {collector.count()} of {n} rows after {timeout_s}s")
        time.sleep(0.2)


def _settle(query, collector: Collector, seconds: float = 2.0) -> None:
    """Let a few more triggers run (nothing new must arrive), then wait until the last batch is committed."""
    time.sleep(seconds)
    deadline = time.monotonic() + 30
    while True:
        with collector.lock:
            last = max((b for b, _n, _t in collector.batches), default=-1)
        progress = query.lastProgress
        if progress is not None and progress["batchId"] >= last:
            return
        if time.monotonic() > deadline:
            raise AssertionError("the last batch did not commit")
        time.sleep(0.1)


def _stop(query) -> None:
    """Stop the query; a failure it ended with was already checked by the test."""
    query.stop()
    try:
        query.awaitTermination(60)
    except Exception:  # noqa: BLE001 - awaitTermination re-raises the query's own failure
        pass


def _check_exact(collector: Collector, truth: dict, topic: str, tasks_by_partition: dict | None = None) -> None:
    """Every record exactly once, with the right key and value (tombstones as null)."""
    keys = collector.keys()
    dupes = [k for k, c in Counter(keys).items() if c > 1]
    assert not dupes, f"duplicates: {dupes[:5]}"
    assert {(p, o) for t, p, o in keys if t == topic} == set(truth)
    for row in collector.rows:
        if row["topic"] != topic:
            continue
        key, value = truth[(row["partition"], row["offset"])]
        assert (row["key"], row["value"]) == (key, value)
        assert row["timestamp"] is not None and row["timestamp"] > 1_600_000_000_000
        if tasks_by_partition is not None:
            assert row["_task"] == tasks_by_partition[row["partition"]]


def _progress_summary(query) -> str:
    durations = [p["durationMs"] for p in query.recentProgress if p["numInputRows"]]
    if not durations:
        return "no batches"
    keys = ("triggerExecution", "latestOffset", "addBatch", "walCommit", "commitOffsets")
    return ", ".join(f"{k} median {sorted(d.get(k, 0) for d in durations)[len(durations) // 2]}ms" for k in keys)


# -- against the broker and Spark ----------------------------------------------------------------


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_reads_every_record_exactly_once(spark, broker, unique_name, tmp_path):
    _create_topic(broker.bootstrap, unique_name)
    _produce(broker.bootstrap, unique_name, 3000)
    truth = _truth(broker.bootstrap, unique_name)
    assert len(truth) == 3000
    collector = Collector()
    query = _start(spark, {"bootstrap.servers": broker.bootstrap, "topics": unique_name},
                   str(tmp_path / "ck"), collector)
    try:
        _wait_rows(query, collector, 3000)
        _produce(broker.bootstrap, unique_name, 300, first=3000)  # more while it runs
        truth = _truth(broker.bootstrap, unique_name)
        _wait_rows(query, collector, 3300)
        _settle(query, collector)
        _check_exact(collector, truth, unique_name, tasks_by_partition={0: 0, 1: 0, 2: 0})
        assert sum(1 for r in collector.rows if r["value"] is None) == 330
        print("\nper-batch:", _progress_summary(query))
    finally:
        _stop(query)


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_two_tasks_own_stable_partitions(spark, broker, unique_name, tmp_path):
    _create_topic(broker.bootstrap, unique_name)
    _produce(broker.bootstrap, unique_name, 900)
    collector = Collector()
    query = _start(spark, {"bootstrap.servers": broker.bootstrap, "topics": unique_name, "tasks": "2"},
                   str(tmp_path / "ck"), collector)
    try:
        _wait_rows(query, collector, 900)
        _produce(broker.bootstrap, unique_name, 300, first=900)
        _wait_rows(query, collector, 1200)
        _settle(query, collector)
        # sorted partitions 0, 1, 2 over two tasks: [0, 1] and [2]
        _check_exact(collector, _truth(broker.bootstrap, unique_name), unique_name,
                     tasks_by_partition={0: 0, 1: 0, 2: 1})
        assert {r["_task"] for r in collector.rows} == {0, 1}
    finally:
        _stop(query)


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_max_records_per_task_bounds_each_batch(spark, broker, unique_name, tmp_path):
    _create_topic(broker.bootstrap, unique_name)
    _produce(broker.bootstrap, unique_name, 600)
    collector = Collector()
    options = {"bootstrap.servers": broker.bootstrap, "topics": unique_name, "tasks": "2",
               "max.records.per.task": "70"}
    query = _start(spark, options, str(tmp_path / "ck"), collector)
    try:
        _wait_rows(query, collector, 600, timeout_s=180)
        _settle(query, collector)
        _check_exact(collector, _truth(broker.bootstrap, unique_name), unique_name)
        per_task_batch = Counter((r["_batch"], r["_task"]) for r in collector.rows)
        assert max(per_task_batch.values()) <= 70
        assert max(per_task_batch.values()) == 70  # the budget is used when there is a backlog
        # task 0 owns 400 records (partitions 0 and 1): at least 6 batches
        assert len({b for b, t in per_task_batch if t == 0}) >= 6
        # both of task 0's partitions advance in every batch while both have a backlog
        first_batch = min(b for b, _t in per_task_batch)
        parts = {r["partition"] for r in collector.rows if r["_batch"] == first_batch and r["_task"] == 0}
        assert parts == {0, 1}
    finally:
        _stop(query)


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_topics_regex_picks_up_a_topic_created_later(spark, broker, unique_name, tmp_path):
    first, later, other = f"{unique_name}-a", f"{unique_name}-b", f"x{unique_name}-c"
    _create_topic(broker.bootstrap, first)
    _create_topic(broker.bootstrap, other, partitions=1)
    _produce(broker.bootstrap, first, 90)
    _produce(broker.bootstrap, other, 10, partitions=1)
    collector = Collector()
    options = {"bootstrap.servers": broker.bootstrap, "topics.regex": f"{unique_name}-.*", "tasks": "2"}
    query = _start(spark, options, str(tmp_path / "ck"), collector)
    try:
        _wait_rows(query, collector, 90)
        _create_topic(broker.bootstrap, later, partitions=2)
        _produce(broker.bootstrap, later, 40, partitions=2)
        _wait_rows(query, collector, 130)
        _settle(query, collector)
        assert Counter(r["topic"] for r in collector.rows) == {first: 90, later: 40}
        _check_exact(collector, _truth(broker.bootstrap, later), later)
        _check_exact(collector, _truth(broker.bootstrap, first), first)
    finally:
        _stop(query)


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_starting_offsets_resume_mid_topic(spark, broker, unique_name, tmp_path):
    _create_topic(broker.bootstrap, unique_name)
    _produce(broker.bootstrap, unique_name, 300)  # 100 per partition
    collector = Collector()
    starting = json.dumps({f"{unique_name}:0": 60, f"{unique_name}:1": 100})
    options = {"bootstrap.servers": broker.bootstrap, "topics": unique_name, "starting.offsets": starting}
    query = _start(spark, options, str(tmp_path / "ck"), collector)
    try:
        _wait_rows(query, collector, 140)
        _settle(query, collector)
        truth = {k: v for k, v in _truth(broker.bootstrap, unique_name).items()
                 if (k[0] == 0 and k[1] >= 60) or k[0] == 2}
        _check_exact(collector, truth, unique_name)
    finally:
        _stop(query)


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_restart_from_checkpoint_continues_without_duplicates(spark, broker, unique_name, tmp_path):
    _create_topic(broker.bootstrap, unique_name)
    _produce(broker.bootstrap, unique_name, 450)
    checkpoint = str(tmp_path / "ck")
    options = {"bootstrap.servers": broker.bootstrap, "topics": unique_name, "tasks": "2"}
    before = Collector()
    query = _start(spark, options, checkpoint, before)
    try:
        _wait_rows(query, before, 450)
        _settle(query, before)
    finally:
        _stop(query)
    _produce(broker.bootstrap, unique_name, 150, first=450)
    after = Collector()
    query = _start(spark, options, checkpoint, after)
    try:
        _wait_rows(query, after, 150)
        _settle(query, after)
    finally:
        _stop(query)
    both = Collector()
    both.rows = before.rows + after.rows
    _check_exact(both, _truth(broker.bootstrap, unique_name), unique_name, tasks_by_partition={0: 0, 1: 0, 2: 1})
    assert min(r["offset"] for r in after.rows) == 150  # nothing before the checkpoint again


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_reads_only_committed_transactions(spark, broker, unique_name, tmp_path):
    """An open transaction holds its records back (read_committed); they arrive once committed."""
    _create_topic(broker.bootstrap, unique_name, partitions=1)
    _produce(broker.bootstrap, unique_name, 20, partitions=1)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": f"tx-{unique_name}"})
    producer.init_transactions(30)
    producer.begin_transaction()
    for i in range(20, 30):
        producer.produce(unique_name, key=f"k{i}".encode(), value=f"v{i}".encode(), partition=0)
    assert producer.flush(30) == 0
    collector = Collector()
    query = _start(spark, {"bootstrap.servers": broker.bootstrap, "topics": unique_name},
                   str(tmp_path / "ck"), collector)
    try:
        _wait_rows(query, collector, 20)
        _settle(query, collector, seconds=4)
        assert collector.count() == 20
        producer.commit_transaction(30)
        _wait_rows(query, collector, 30)
        _settle(query, collector)
        assert collector.count() == 30
        assert sorted(r["value"] for r in collector.rows if r["offset"] >= 20) == [
            f"v{i}".encode() for i in range(20, 30)
        ]
    finally:
        _stop(query)


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_unknown_topic_fails_the_query_with_a_clear_error(spark, broker, unique_name, tmp_path):
    options = {"bootstrap.servers": broker.bootstrap, "topics": unique_name, "timeout.ms": "2000",
               "connector": "orders-sink"}
    query = _start(spark, options, str(tmp_path / "ck"), Collector())
    try:
        with pytest.raises(Exception) as info:
            query.awaitTermination(90)
        text = str(info.value)
        assert unique_name in text and broker.bootstrap in text and "orders-sink" in text
        assert "do not exist" in text
    finally:
        _stop(query)


# -- helpers without Spark -----------------------------------------------------------------------


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_read_failure_names_the_task(unique_name):
    dead = f"127.0.0.1:{free_port()}"
    part = KafkaInputPartition(1, [(unique_name, 0, 0, 10)], dead, {}, connector="orders-sink", timeout_s=2.0)
    t0 = time.monotonic()
    with pytest.raises(RuntimeError) as info:
        list(read_partition(part))
    assert time.monotonic() - t0 < 30
    text = str(info.value)
    assert text.startswith(f"{TASK_FAILURE_MARK} orders-sink-1:")
    assert dead in text and f"{unique_name}:0" in text


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_read_partition_reads_exactly_the_range(broker, unique_name):
    _create_topic(broker.bootstrap, unique_name, partitions=2)
    _produce(broker.bootstrap, unique_name, 40, partitions=2)  # 20 per partition
    part = KafkaInputPartition(3, [(unique_name, 0, 5, 20), (unique_name, 1, 0, 7)], broker.bootstrap, {})
    for _ in range(2):  # the second time with the cached, re-assigned consumer
        batches = list(read_partition(part))
        assert all(b.schema.equals(ARROW_SCHEMA) for b in batches)
        rows = [row for b in batches for row in b.to_pylist()]
        assert sorted((r["partition"], r["offset"]) for r in rows) == (
            [(0, o) for o in range(5, 20)] + [(1, o) for o in range(7)]
        )
        assert {r["_task"] for r in rows} == {3}


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_end_offsets_despite_tansus_list_offsets(broker, unique_name):
    _create_topic(broker.bootstrap, unique_name, partitions=2)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 50})
    for _ in range(500):
        producer.produce(unique_name, value=b"x", partition=0)
    producer.flush(30)
    for _ in range(3):  # one more record batch of three records
        producer.produce(unique_name, value=b"y", partition=0)
    producer.flush(30)
    consumer = Consumer(_consumer_config(broker.bootstrap, {}, {"group.id": f"g-{uuid.uuid4().hex}"}))
    try:
        _low, reported = consumer.get_watermark_offsets(TopicPartition(unique_name, 0), timeout=10)
        ends = end_offsets(consumer, [(unique_name, 0), TopicPartition(unique_name, 1)])
        assert ends == {(unique_name, 0): 503, (unique_name, 1): 0}
        print(f"\nListOffsets says {reported} for a partition whose end is 503")
        assert end_offsets(consumer, [(unique_name, 0)], known={(unique_name, 0): 503}) == {(unique_name, 0): 503}
    finally:
        consumer.close()


class _InflatedHints:
    """A consumer whose ListOffsets 'latest' answers lie ``extra`` past the end (as Tansu's can)."""

    def __init__(self, consumer, extra: int) -> None:
        self.consumer, self.extra = consumer, extra

    def offsets_for_times(self, partitions, timeout):
        answers = self.consumer.offsets_for_times(partitions, timeout=timeout)
        if partitions and partitions[0].offset == -1:
            for answer in answers:
                answer.offset += self.extra
        return answers

    def __getattr__(self, name):
        return getattr(self.consumer, name)


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_end_scan_survives_a_hint_past_the_end_and_open_transactions(broker, unique_name):
    _create_topic(broker.bootstrap, unique_name, partitions=2)
    _produce(broker.bootstrap, unique_name, 20, partitions=2)  # 10 per partition
    producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": f"tx-{unique_name}"})
    producer.init_transactions(30)
    producer.begin_transaction()
    for _ in range(4):
        producer.produce(unique_name, value=b"open", partition=1)
    assert producer.flush(30) == 0
    consumer = Consumer(_consumer_config(broker.bootstrap, {}, {"group.id": f"g-{uuid.uuid4().hex}"}))
    try:
        t0 = time.monotonic()
        found = _find_ends(_InflatedHints(consumer, 50), [(unique_name, 0), (unique_name, 1)],
                           scan_s=0.5, timeout_s=10, servers=broker.bootstrap)
        elapsed = time.monotonic() - t0
        # read_committed: partition 1 ends where the open transaction begins
        assert found.ends == {(unique_name, 0): 10, (unique_name, 1): 10}
        assert found.exact == {(unique_name, 0), (unique_name, 1)} and found.hint_failed
        assert elapsed < 5
        producer.commit_transaction(30)
        ends = end_offsets(consumer, [(unique_name, 1)], known={(unique_name, 1): 10})
        assert ends == {(unique_name, 1): 15}  # four records and the commit marker
    finally:
        consumer.close()


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_commit_group_offsets_without_joining(broker, unique_name):
    _create_topic(broker.bootstrap, unique_name)
    group = sink_group_id("orders-sink")
    assert group == "connect-orders-sink"
    t0 = time.monotonic()
    commit_group_offsets(broker.bootstrap, group, {(unique_name, 0): 12, (unique_name, 2): 7})
    commit_group_offsets(broker.bootstrap, group, {(unique_name, 0): 15})
    elapsed = time.monotonic() - t0
    reader = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        committed = reader.committed([TopicPartition(unique_name, p) for p in range(3)], timeout=10)
    finally:
        reader.close()
    assert [(c.partition, c.offset) for c in committed if c.offset >= 0] == [(0, 15), (2, 7)]
    assert elapsed < 5, f"committing took {elapsed:.1f}s"
    print(f"\ntwo group commits took {elapsed * 1000:.0f} ms")
