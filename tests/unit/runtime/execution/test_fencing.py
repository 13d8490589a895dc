"""Connect's pending-fencing rule in the config log, and the fencing run before an exactly-once query starts."""

from __future__ import annotations

import dataclasses

from sparkcat.model.config_state import ClusterConfigState
from sparkcat.runtime.control.config_view import copy_state as _copy_state
from sparkcat.storage import json_codec
from sparkcat.storage.config_log import ConfigLog, ConfigStateBuilder
from sparkcat.storage.log import LogRecord, MemoryLog


def test_task_configs_leave_a_connector_pending_fencing_until_its_task_count_record_is_read():
    log = ConfigLog(MemoryLog())
    log.put_connector_config("src", {"connector.class": "increment"})
    log.put_task_configs("src", [{"a": "1"}, {"a": "2"}])
    state = log.refresh()
    assert state.pending_fencing == {"src"} and state.task_count_records == {}
    log.put_task_count_record("src", 2)
    state = log.refresh()
    assert state.pending_fencing == set() and state.task_count_records == {"src": 2}
    assert [r.value for r in log.backend.read() if r.key == "tasks-fencing-src"] == [b'{"task-count":2}']
    log.put_task_configs("src", [{"a": "1"}])
    assert log.refresh().pending_fencing == {"src"}


def test_a_malformed_task_count_record_is_skipped_without_failing_the_log(caplog):
    builder = ConfigStateBuilder()
    builder.apply(LogRecord(0, "tasks-fencing-src", json_codec.dumps({"task-count": "two"})))
    builder.apply(LogRecord(1, "tasks-fencing-src", None))
    assert builder.state.task_count_records == {} and builder.state.offset == 1
    assert "wrong format" in caplog.text


def test_the_herders_state_snapshot_copies_every_field():
    state = ClusterConfigState(offset=3, task_count_records={"a": 2}, pending_fencing={"a"}, inconsistent={"b"})
    copy = _copy_state(state)
    for f in dataclasses.fields(ClusterConfigState):
        assert getattr(copy, f.name) == getattr(state, f.name), f.name
    assert copy.pending_fencing is not state.pending_fencing


def test_exactly_once_plans_are_source_connectors_writing_to_kafka_on_an_enabled_worker():
    from sparkcat.runtime.execution.plan_builder import writes_exactly_once
    from sparkcat.config.worker import WorkerConfig
    kafka = WorkerConfig(bootstrap_servers="b:9092")
    assert writes_exactly_once("source", None, kafka)
    assert not writes_exactly_once("source", "sparkcat.connectors.file_sink:FileStreamSinkConnector", kafka)
    assert not writes_exactly_once("sink", None, kafka)
    assert not writes_exactly_once("source", None, WorkerConfig())  # local stores: no Kafka output at all
    assert not writes_exactly_once("source", None, dataclasses.replace(kafka, exactly_once_source_support="disabled"))


def test_interval_boundaries_stretch_the_trigger_to_the_transaction_interval():
    from sparkcat.config.connector import connector_settings
    from sparkcat.runtime.execution.plan_builder import trigger_interval_ms as of_settings

    def trigger_interval_ms(config, exactly_once):
        return of_settings(connector_settings(config), exactly_once)
    assert trigger_interval_ms({"trigger.interval.ms": "500"}, True) == 500
    assert trigger_interval_ms({"transaction.boundary": "INTERVAL"}, True) == 60_000  # Connect's flush default
    assert trigger_interval_ms({"transaction.boundary": "interval", "transaction.boundary.interval.ms": "2500",
                                "trigger.interval.ms": "1000"}, True) == 2500
    assert trigger_interval_ms({"transaction.boundary": "interval", "transaction.boundary.interval.ms": "100",
                                "trigger.interval.ms": "1000"}, True) == 1000
    assert trigger_interval_ms({"transaction.boundary": "interval", "trigger.interval.ms": "700"}, False) == 700


def test_the_cost_of_exactly_once_batches_adds_up_in_progress_and_metrics():
    from sparkcat.rest.metrics import render
    from sparkcat.runtime.execution.progress import Progress
    from sparkcat.spark.query_plan import BatchResult
    progress = Progress()
    progress.add(BatchResult("c", 0, {}, 1.0, transaction_ms=120.0))
    progress.add(BatchResult("c", 1, {}, 1.0, transaction_ms=80.0))
    progress.add(BatchResult("c", 2, {}, 1.0))  # an at-least-once batch costs nothing here
    assert (progress.batches, progress.transaction_batches, progress.transaction_ms) == (3, 2, 200.0)
    text = render([("c", progress)], [])
    assert 'sparkcat_connector_transaction_batches_total{connector="c"} 2.0' in text
    assert 'sparkcat_connector_transaction_seconds_total{connector="c"} 0.2' in text


def test_after_tasks_max_shrinks_every_id_an_earlier_generation_used_is_fenced(monkeypatch):
    """A sink (or source) that ran 4 transactional tasks and now runs 2 fences ids 0..3: a killed driver may
    have left a transaction open on task 3, which would hold back read_committed readers until it times out."""
    from sparkcat.runtime.execution import fencing
    from sparkcat.spark.query_plan import QueryPlan
    fenced: list[list[str]] = []
    monkeypatch.setattr(fencing, "fence_transactional_ids", lambda conf, ids, logger: fenced.append(list(ids)))
    log = ConfigLog(MemoryLog())
    log.put_connector_config("copy", {"connector.class": "kafka"})
    log.put_task_configs("copy", [{}, {}, {}, {}])
    log.put_task_count_record("copy", 4)
    log.put_task_configs("copy", [{}, {}])  # tasks.max 4 -> 2
    state = log.refresh()
    plan = QueryPlan("copy", "sink", "x:C", "x:T", {"exactly.once.support": "required"}, [{}, {}], "/tmp/ck",
                     bootstrap_servers="b:9092", group_id="g")
    fencing.zombie_fencing(log, plan, state)()
    assert fenced == [["g-copy-0", "g-copy-1", "g-copy-2", "g-copy-3"]]
    assert log.refresh().task_count_records == {"copy": 2}  # the next round fences the two that run now
