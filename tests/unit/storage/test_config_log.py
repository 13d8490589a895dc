"""ClusterConfigState rebuilt from the config log, including the cases KafkaConfigBackingStore documents."""

from __future__ import annotations

import json

from sparkcat.model.config_state import TargetState
from sparkcat.storage.config_log import ConfigLog, ConfigStateBuilder
from sparkcat.storage.log import LogRecord, MemoryLog

CONF = {"connector.class": "increment", "increments": "1,100", "tasks.max": "2"}
T0 = {"increments": "1", "topic.prefix": "seq_"}
T1 = {"increments": "100", "topic.prefix": "seq_"}


def new_log() -> tuple[ConfigLog, MemoryLog]:
    backend = MemoryLog()
    return ConfigLog(backend), backend


def rebuild(backend: MemoryLog):
    """A fresh reader (a restarted driver) replaying the whole log."""
    return ConfigLog(backend).snapshot()


def test_task_configs_apply_only_when_commit_is_read():
    log, backend = new_log()
    log.put_connector_config("inc", CONF)
    backend.append([("task-inc-0", json.dumps({"properties": T0}).encode())])
    state = log.snapshot()
    assert state.task_ids("inc") == []
    assert state.task_config("inc", 0) is None
    backend.append([("task-inc-1", json.dumps({"properties": T1}).encode()),
                    ("commit-inc", b'{"tasks":2}')])
    state = log.snapshot()
    assert state.task_ids("inc") == [0, 1]
    assert state.all_task_configs("inc") == [T0, T1]
    assert "inc" not in state.inconsistent


def test_compaction_that_lost_a_task_config_before_its_commit_marks_inconsistent():
    # Written: T0, T1, commit(2), then a leader died after rewriting only T0.
    # Compaction keeps the newest T0 (after the commit), so the commit sees only T1.
    log, backend = new_log()
    log.put_connector_config("inc", CONF)
    log.put_task_configs("inc", [T0, T1])
    backend.append([("task-inc-0", json.dumps({"properties": {"increments": "7"}}).encode())])
    backend.compact()
    state = rebuild(backend)
    assert "inc" in state.inconsistent
    assert state.task_ids("inc") == []  # never half-applied
    assert state.connector_config("inc") == CONF


def test_leader_failed_mid_write_then_new_leader_rewrote_all_tasks():
    log, backend = new_log()
    log.put_connector_config("inc", CONF)
    log.put_task_configs("inc", [T0, T1])
    # Old leader wrote a partial set (task 0 of 3) and died; no commit.
    backend.append([("task-inc-0", json.dumps({"properties": {"increments": "9"}}).encode())])
    # New leader writes a complete new set with its commit.
    new = [{"increments": "1"}, {"increments": "100"}, {"increments": "5"}]
    log.put_task_configs("inc", new)
    for b in (backend, None):
        if b is not None:
            b.compact()
        state = rebuild(backend)
        assert state.all_task_configs("inc") == new
        assert "inc" not in state.inconsistent


def test_shrinking_task_count_ignores_stale_higher_task_ids_left_by_compaction():
    log, backend = new_log()
    log.put_connector_config("inc", CONF)
    log.put_task_configs("inc", [T0, T1, {"increments": "3"}])
    log.put_task_configs("inc", [{"increments": "1,100,3"}])
    backend.compact()  # leaves task-inc-1 and task-inc-2 of the old set before the new commit
    state = rebuild(backend)
    assert state.task_ids("inc") == [0]
    assert state.all_task_configs("inc") == [{"increments": "1,100,3"}]
    assert state.task_config("inc", 2) is None


def test_inconsistent_connector_recovers_when_reconfigured():
    log, backend = new_log()
    log.put_connector_config("inc", CONF)
    backend.append([("commit-inc", b'{"tasks":2}')])
    assert "inc" in log.snapshot().inconsistent
    log.put_task_configs("inc", [T0, T1])
    state = log.snapshot()
    assert "inc" not in state.inconsistent and state.task_ids("inc") == [0, 1]


def test_connector_deletion_removes_config_tasks_and_target_state():
    log, backend = new_log()
    log.put_connector_config("inc", CONF, TargetState.PAUSED)
    log.put_task_configs("inc", [T0])
    log.put_connector_config("other", {"connector.class": "increment", "increments": "2"})
    log.remove_connector_config("inc")
    for state in (log.snapshot(), rebuild(backend)):
        assert state.connectors() == ["other"]
        assert state.target_state("inc") is None
        assert state.task_ids("inc") == [] and state.task_config("inc", 0) is None
    # Re-created with the same name: starts fresh (STARTED, no tasks).
    log.put_connector_config("inc", CONF)
    state = log.snapshot()
    assert state.target_state("inc") == TargetState.STARTED and state.task_ids("inc") == []


def test_target_state_transitions_and_values_as_connect_writes_them():
    log, backend = new_log()
    log.put_connector_config("inc", CONF)
    assert log.snapshot().target_state("inc") == TargetState.STARTED
    seen = []
    for target in (TargetState.PAUSED, TargetState.STOPPED, TargetState.STARTED):
        log.put_target_state("inc", target)
        seen.append(log.snapshot().target_state("inc"))
    assert seen == [TargetState.PAUSED, TargetState.STOPPED, TargetState.STARTED]
    values = [json.loads(r.value) for r in backend.read() if r.key == "target-state-inc"]
    assert values == [{"state": "PAUSED", "state.v2": "PAUSED"},
                      {"state": "PAUSED", "state.v2": "STOPPED"},  # older readers see PAUSED
                      {"state": "STARTED", "state.v2": "STARTED"}]
    assert rebuild(backend).target_state("inc") == TargetState.STARTED


def test_target_state_written_by_a_pre_kip_875_worker_has_no_v2_field():
    builder = ConfigStateBuilder()
    builder.apply(LogRecord(0, "connector-a", b'{"properties":{"connector.class":"increment"}}'))
    builder.apply(LogRecord(1, "target-state-a", b'{"state":"PAUSED"}'))
    assert builder.state.target_state("a") == TargetState.PAUSED


def test_initial_state_is_written_before_the_connector_config():
    log, backend = new_log()
    log.put_connector_config("inc", CONF, TargetState.STOPPED)
    assert [r.key for r in backend.read()] == ["target-state-inc", "connector-inc"]
    assert log.snapshot().target_state("inc") == TargetState.STOPPED


def test_restart_requests_are_kept_with_their_log_offset():
    log, backend = new_log()
    log.put_connector_config("inc", CONF)
    log.request_restart("inc", include_tasks=True, only_failed=False)
    first = log.snapshot().restart_requests["inc"]
    assert (first.include_tasks, first.only_failed) == (True, False)
    log.request_restart("inc", include_tasks=False, only_failed=True)
    second = log.snapshot().restart_requests["inc"]
    assert (second.include_tasks, second.only_failed) == (False, True)
    assert second.offset > first.offset
    raw = [r.value for r in backend.read() if r.key == "restart-connector-inc"]
    assert raw[0] == b'{"include-tasks":true,"only-failed":false}'


def test_records_exactly_as_kafka_connect_serialises_them():
    # Keys and values as Kafka Connect 3.x writes them to its config topic
    # (JsonConverter, schemas.enable=false), including a session key and fencing record.
    raw = [
        ("session-key", b'{"key":"c2VjcmV0LWtleQ==","algorithm":"HmacSHA256","creation-timestamp":1700000000000}'),
        ("connector-local-file-source", b'{"properties":{"connector.class":"FileStreamSource",'
                                        b'"tasks.max":"1","file":"test.txt","topic":"connect-test",'
                                        b'"name":"local-file-source"}}'),
        ("target-state-local-file-source", b'{"state":"STARTED","state.v2":"STARTED"}'),
        ("task-local-file-source-0", b'{"properties":{"connector.class":"FileStreamSource",'
                                     b'"task.class":"org.apache.kafka.connect.file.FileStreamSourceTask",'
                                     b'"batch.size":"2000","file":"test.txt","topic":"connect-test",'
                                     b'"tasks.max":"1","name":"local-file-source"}}'),
        ("commit-local-file-source", b'{"tasks":1}'),
        ("tasks-fencing-local-file-source", b'{"task-count":1}'),
        ("restart-connector-local-file-source", b'{"include-tasks":false,"only-failed":false}'),
        ("target-state-local-file-source", b'{"state":"PAUSED","state.v2":"STOPPED"}'),
        ("task-local-file-source-0", None),
    ]
    backend = MemoryLog()
    backend.append(raw)
    state = rebuild(backend)
    assert state.connectors() == ["local-file-source"]
    assert state.connector_config("local-file-source")["file"] == "test.txt"
    assert state.all_task_configs("local-file-source")[0]["task.class"].endswith("FileStreamSourceTask")
    assert state.target_state("local-file-source") == TargetState.STOPPED
    assert state.task_count_records == {"local-file-source": 1}
    assert state.session_key.algorithm == "HmacSHA256"
    assert state.restart_requests["local-file-source"].include_tasks is False


def test_records_we_write_are_byte_identical_to_connects():
    log, backend = new_log()
    log.put_connector_config("c", {"connector.class": "FileStreamSource", "name": "c"})
    log.put_task_configs("c", [{"file": "f"}])
    raw = [(r.key, r.value) for r in backend.read()]
    assert raw == [
        ("connector-c", b'{"properties":{"connector.class":"FileStreamSource","name":"c"}}'),
        ("task-c-0", b'{"properties":{"file":"f"}}'),
        ("commit-c", b'{"tasks":1}'),
    ]


def test_unreadable_record_is_skipped_not_fatal():
    backend = MemoryLog()
    backend.append([("connector-a", b"{not json"),
                    ("connector-b", b'{"properties":{"connector.class":"increment"}}')])
    assert rebuild(backend).connectors() == ["b"]


def test_connector_names_with_dashes_and_digits_keep_task_ids_apart():
    log, backend = new_log()
    log.put_connector_config("my-conn-2", CONF)
    log.put_task_configs("my-conn-2", [T0] * 11)
    assert rebuild(backend).task_ids("my-conn-2") == list(range(11))


def test_logger_cluster_records_are_read_and_written_as_connect_writes_them():
    """KIP-976: ``logger-cluster-NAMESPACE`` -> ``{"level": ...}``; the newest record per namespace wins."""
    from sparkcat.storage.config_log import ConfigLog
    from sparkcat.storage.log import MemoryLog

    backend = MemoryLog()
    config = ConfigLog(backend)
    config.put_logger_level("org.apache.kafka.connect", "DEBUG")
    backend.append([("logger-cluster-sparkcat", b'{"level":"TRACE"}'), ("logger-cluster-bad", b'{"lvl":1}')])
    config.put_logger_level("org.apache.kafka.connect", "WARN")
    assert [(r.key, r.value) for r in backend.read()][0] == ("logger-cluster-org.apache.kafka.connect",
                                                            b'{"level":"DEBUG"}')
    assert config.snapshot().logger_levels == {"org.apache.kafka.connect": ("WARN", 3), "sparkcat": ("TRACE", 1)}
