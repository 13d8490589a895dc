"""A shared sink member's planning (``shared_sinks.KafkaRanges``) and which sinks share (pure logic, fake snapshot)."""

from __future__ import annotations

from sparkcat.spark.driver.shared_queries import own_query_reason
from sparkcat.spark.driver.shared_sinks import KafkaRanges, Snapshot, group_key
from sparkcat.api.connector import SinkTask
from sparkcat.spark.query_plan import QueryPlan

LINES = "tests.plugins.line_sinks"


def plan(name: str = "s", tasks: int = 2, **kw) -> QueryPlan:
    base = dict(connector=name, connector_type="sink", connector_class=f"{LINES}:RecordLineSink",
                task_class=f"{LINES}:LineTask", connector_config={"topics.regex": "in-.*"},
                task_configs=[{}] * tasks, checkpoint_dir=f"/ck/{name}", batch_max_records=10)
    return QueryPlan(**{**base, **kw})


class FakeSnapshot(Snapshot):
    def __init__(self, latest, earliest=None):
        partitions: dict[str, list[int]] = {}
        for t, p in latest:
            partitions.setdefault(t, []).append(p)
        super().__init__(None, partitions, dict(latest))
        self._earliest = earliest or {}

    def earliest(self, tps):
        return {tp: self._earliest.get(tp, 0) for tp in tps}


def test_a_partition_moves_towards_its_end_at_most_batch_max_records_and_new_ones_start_at_their_earliest():
    ranges = KafkaRanges(plan(), {"in-a:0": 5})
    ranges.snapshot = FakeSnapshot({("in-a", 0): 40, ("in-a", 1): 3, ("other", 0): 9}, {("in-a", 1): 2})
    assert ranges.latestOffset(ranges.initialOffset()) == {"in-a:0": 15, "in-a:1": 2}
    assert ranges.reportLatestOffset() == {"in-a:0": 40, "in-a:1": 3}


def test_a_position_past_the_end_starts_again_at_the_earliest_offset():
    ranges = KafkaRanges(plan(), {"in-a:0": 50})
    ranges.snapshot = FakeSnapshot({("in-a", 0): 4}, {("in-a", 0): 1})
    assert ranges.latestOffset({"in-a:0": 50}) == {"in-a:0": 1}


def test_kafka_unreachable_plans_no_move():
    ranges = KafkaRanges(plan(), {"in-a:0": 5})
    assert ranges.latestOffset({"in-a:0": 5}) == {"in-a:0": 5}


def test_tasks_get_their_partitions_ranges_as_connects_assignment_spreads_them():
    ranges = KafkaRanges(plan(tasks=2), {})
    parts = ranges.partitions({"in-a:0": 0, "in-a:1": 4, "in-b:0": 7}, {"in-a:0": 3, "in-a:1": 4, "in-b:0": 9})
    assert [(p.task, p.ranges) for p in parts] == [(0, [("in-a", 0, 0, 3)]), (1, [("in-b", 0, 7, 9)])]


def test_a_failed_task_s_partitions_go_to_the_live_ones():
    ranges = KafkaRanges(plan(tasks=2, excluded_tasks=[0]), {})
    parts = ranges.partitions({"in-a:0": 0, "in-b:0": 0}, {"in-a:0": 1, "in-b:0": 1})
    assert [(p.task, sorted(p.ranges)) for p in parts] == [(1, [("in-a", 0, 0, 1), ("in-b", 0, 0, 1)])]


def test_record_sinks_share_and_sinks_needing_their_own_query_keep_one():
    assert own_query_reason(plan()) is None
    assert "native_write" in own_query_reason(plan(connector_class=f"{LINES}:NativeLineSink"))
    assert "batch_writer" in own_query_reason(plan(connector_class=f"{LINES}:BatchLineSink"))
    assert "begin_batch" in own_query_reason(plan(task_class=f"{__name__}:_ById"))
    # the file and JDBC sinks skip replays by id, but also by Kafka position in a shared query: they share
    for sink in ("file_sink:FileStreamSinkConnector", "jdbc_sink:JdbcSinkConnector"):
        task = sink.replace("Connector", "Task")
        assert own_query_reason(plan(connector_class=f"sparkcat.connectors.{sink}",
                                     task_class=f"sparkcat.connectors.{task}")) is None
    assert own_query_reason(plan(connector_config={"topics": "a", "transforms": "x"})) == "has transforms"
    assert own_query_reason(plan(java_host={"jars": []})) == "a Java connector"
    assert group_key(plan(trigger_interval_ms=500)) != group_key(plan())


class _ById(SinkTask):
    """A sink task that skips replayed batches by id only: it needs Spark's replay, so a query of its own."""

    def put(self, records):
        pass

    def begin_batch(self, batch_id):
        return True
