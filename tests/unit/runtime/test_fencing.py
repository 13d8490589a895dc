"""Connect's pending-fencing rule in the config log, and the fencing run before an exactly-once query starts."""

from __future__ import annotations

import dataclasses

from sparkcat.model.config_state import ClusterConfigState
from sparkcat.runtime.herder import _copy_state
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
