"""A native sink's Kafka source options: no batch-size limit unless asked for or needed by a transaction."""

from __future__ import annotations

from sparkcat.api.native import NativeWrite, TriggerMode
from sparkcat.spark.driver.native_queries import native_reader_options
from sparkcat.spark.query_plan import QueryPlan


def plan(config: dict[str, str]) -> QueryPlan:
    return QueryPlan("c", "sink", "x:C", "x:T", {"topics": "a", **config}, [{}, {}], "/tmp/ck",
                     bootstrap_servers="h:9092", batch_max_records=100)


def write(**fields) -> NativeWrite:
    return NativeWrite(format="delta", options={}, rows=lambda df: df, **fields)


def test_a_backlog_is_read_in_one_batch_by_default():
    assert "maxOffsetsPerTrigger" not in native_reader_options(plan({}), write(), {}, [])


def test_batch_max_records_set_by_the_user_still_bounds_the_batch():
    options = native_reader_options(plan({"batch.max.records": "100"}), write(), {}, [])
    assert options["maxOffsetsPerTrigger"] == "200"  # per task, two tasks


def test_a_transactional_writer_keeps_the_default_bound():
    assert native_reader_options(plan({}), write(transactional=True), {}, [])["maxOffsetsPerTrigger"] == "200"


def test_real_time_mode_reads_what_arrives():
    options = native_reader_options(plan({"batch.max.records": "100"}), write(trigger=TriggerMode.REAL_TIME), {}, [])
    assert "maxOffsetsPerTrigger" not in options
