"""The config log: Kafka Connect's config topic format, and the rules that rebuild cluster state.

Record keys and values match ``KafkaConfigBackingStore`` exactly, so a config topic
written by Kafka Connect can be read here and the other way round.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable

from sparkcat.api.config import connect_string
from sparkcat.model.config_state import ClusterConfigState, RestartRequest, SessionKey, TargetState
from sparkcat.storage import json_codec
from sparkcat.storage.log import KeyedLog, LogRecord

log = logging.getLogger(__name__)

CONNECTOR_PREFIX = "connector-"
TASK_PREFIX = "task-"
COMMIT_PREFIX = "commit-"
TARGET_STATE_PREFIX = "target-state-"
RESTART_PREFIX = "restart-connector-"
FENCING_PREFIX = "tasks-fencing-"
LOGGER_PREFIX = "logger-cluster-"  # KIP-976: a logger level every worker of the cluster applies
SESSION_KEY = "session-key"


def task_key(connector: str, task: int) -> str:
    return f"{TASK_PREFIX}{connector}-{task}"


def _split_task_key(key: str) -> tuple[str, int] | None:
    """``task-NAME-N`` -> (NAME, N); NAME may itself contain dashes."""
    name, sep, num = key[len(TASK_PREFIX):].rpartition("-")
    if not sep or not num.isdigit():
        return None
    return name, int(num)


def target_state_value(state: TargetState) -> dict[str, str]:
    """``state`` stays readable by pre-KIP-875 workers, which know no STOPPED."""
    legacy = TargetState.PAUSED if state == TargetState.STOPPED else state
    return {"state": legacy.value, "state.v2": state.value}


class ConfigStateBuilder:
    """Applies config log records in log order to a ``ClusterConfigState``.

    Task configs are buffered per connector and applied only when a ``commit-NAME``
    record arrives whose task count they cover; otherwise the connector becomes
    inconsistent (Connect's rule for compacted or half-written task configs).
    """

    def __init__(self, state: ClusterConfigState | None = None):
        self.state = state or ClusterConfigState()
        self._deferred: dict[str, dict[int, dict[str, str]]] = {}

    def apply_all(self, records: Iterable[LogRecord]) -> ClusterConfigState:
        for record in records:
            self.apply(record)
        return self.state

    def apply(self, record: LogRecord) -> None:
        try:
            value = json_codec.loads(record.value)
        except ValueError as e:
            log.error("Skipping config log record %s at offset %d: not JSON (%s)", record.key, record.offset, e)
            value = _UNREADABLE
        if value is not _UNREADABLE:
            self._dispatch(record.key, value, record.offset)
        self.state.offset = record.offset

    def _dispatch(self, key: str, value: object, offset: int) -> None:
        if key.startswith(CONNECTOR_PREFIX):
            self._connector(key[len(CONNECTOR_PREFIX):], value)
        elif key.startswith(TASK_PREFIX):
            self._task(key, value)
        elif key.startswith(COMMIT_PREFIX):
            self._commit(key[len(COMMIT_PREFIX):], value)
        elif key.startswith(TARGET_STATE_PREFIX):
            self._target_state(key[len(TARGET_STATE_PREFIX):], value)
        elif key.startswith(RESTART_PREFIX):
            self._restart(key[len(RESTART_PREFIX):], value, offset)
        elif key.startswith(FENCING_PREFIX):
            self._fencing(key[len(FENCING_PREFIX):], value)
        elif key.startswith(LOGGER_PREFIX):
            self._logger_level(key[len(LOGGER_PREFIX):], value, offset)
        elif key == SESSION_KEY:
            self._session_key(value)
        else:
            log.warning("Ignoring config log record with unknown key %r at offset %d", key, offset)

    def _connector(self, name: str, value: object) -> None:
        s = self.state
        if value is None:
            # A deletion removes everything known about the connector.
            s.connector_configs.pop(name, None)
            s.task_counts.pop(name, None)
            s.target_states.pop(name, None)
            s.inconsistent.discard(name)
            s.restart_requests.pop(name, None)
            for task_id in [t for t in s.task_configs if t[0] == name]:
                del s.task_configs[task_id]
            self._deferred.pop(name, None)
            log.info("Config log: connector %s removed", name)
            return
        props = _properties(value)
        if props is None:
            log.error("Ignoring connector config for %s: value has no 'properties' map", name)
            return
        s.connector_configs[name] = props

    def _logger_level(self, namespace: str, value: object, offset: int) -> None:
        level = value.get("level") if isinstance(value, dict) else None
        if not isinstance(level, str):
            log.error("Ignoring logger level record for %s: no 'level' in %r", namespace, value)
            return
        self.state.logger_levels[namespace] = (level, offset)

    def _task(self, key: str, value: object) -> None:
        parsed = _split_task_key(key)
        props = _properties(value)
        if parsed is None or props is None:
            log.error("Ignoring malformed task config record %r", key)
            return
        name, task = parsed
        self._deferred.setdefault(name, {})[task] = props

    def _commit(self, name: str, value: object) -> None:
        s = self.state
        count = value.get("tasks") if isinstance(value, dict) else None
        if not isinstance(count, int) or count < 0:
            log.error("Ignoring commit record for %s: bad task count in %r", name, value)
            return
        deferred = self._deferred.pop(name, {})
        if not all(t in deferred for t in range(count)):
            log.error("Connector %s: task configs for commit of %d tasks are incomplete (have %s); "
                      "marking inconsistent until reconfigured", name, count, sorted(deferred))
            s.inconsistent.add(name)
        else:
            for task_id in [t for t in s.task_configs if t[0] == name]:
                del s.task_configs[task_id]
            for task, props in deferred.items():
                if task < count:  # stale higher ids survive compaction after a shrink
                    s.task_configs[(name, task)] = props
            s.task_config_generations[name] = s.task_config_generations.get(name, 0) + 1
            s.inconsistent.discard(name)
        s.task_counts[name] = count
        s.pending_fencing.add(name)  # Connect: until a tasks-fencing record for this generation is read

    def _target_state(self, name: str, value: object) -> None:
        if value is None:
            self.state.target_states.pop(name, None)
            return
        raw = value.get("state.v2") or value.get("state") if isinstance(value, dict) else None
        try:
            self.state.target_states[name] = TargetState(raw)
        except ValueError:
            log.error("Ignoring target state %r for connector %s", raw, name)

    def _restart(self, name: str, value: object, offset: int) -> None:
        if not isinstance(value, dict):
            return
        self.state.restart_requests[name] = RestartRequest(
            name, bool(value.get("include-tasks", False)), bool(value.get("only-failed", False)), offset)

    def _fencing(self, name: str, value: object) -> None:
        """``tasks-fencing-NAME`` -> ``{"task-count": N}``: tasks 0..N-1 of earlier generations are fenced."""
        if isinstance(value, dict) and isinstance(value.get("task-count"), int):
            self.state.task_count_records[name] = value["task-count"]
            self.state.pending_fencing.discard(name)
        else:
            log.error("Ignoring task count record for connector '%s' because it is in the wrong format: %r",
                      name, value)

    def _session_key(self, value: object) -> None:
        if isinstance(value, dict):
            self.state.session_key = SessionKey(
                str(value.get("key")), str(value.get("algorithm")), int(value.get("creation-timestamp", 0)))


_UNREADABLE = object()


def _properties(value: object) -> dict[str, str] | None:
    if not isinstance(value, dict) or not isinstance(value.get("properties"), dict):
        return None
    return {str(k): _as_string(v) for k, v in value["properties"].items()}


def _as_string(value: object) -> str:
    """Connect keeps every property as a string; YAML and JSON may hand us other scalars."""
    return connect_string(value) or ""


class ConfigLog:
    """Writes Connect-format records to a keyed log and keeps the rebuilt state current.

    The driver is the single writer; ``refresh`` reads whatever was appended since the
    last call (by this or another writer) and applies it.
    """

    def __init__(self, log_backend: KeyedLog):
        self.backend = log_backend
        #: Where appends go when set: the leader's transactional writer (fenced by a newer leader's).
        self.writer: KeyedLog | None = None
        #: Set after each append: the driver's config follower asks the log at once (``ConfigFollower``).
        self.appended = threading.Event()
        self._builder = ConfigStateBuilder()

    def use_writer(self, writer: KeyedLog | None) -> None:
        """Append through ``writer`` from now on (None: through the backend); the previous writer is closed."""
        old, self.writer = self.writer, writer
        if old is not None:
            old.close()

    def _append(self, records: list[tuple[str, bytes | None]]) -> None:
        (self.writer or self.backend).append(records)
        self.appended.set()

    def last_offset(self) -> int:
        """The offset of the last record a reader sees (-1: none).

        Not the end offset minus one: transaction markers, and records of aborted transactions, take
        offsets that no (read_committed) reader ever gets.
        """
        end = self.backend.end_offset()
        window = 16
        while True:
            start = max(0, end - window)
            records = self.backend.read(start)
            if records or start == 0:
                return records[-1].offset if records else -1
            window *= 4

    def last_written_offset(self) -> int:
        """``last_offset`` once every transaction of the writer is complete (its commit marker written).

        A transaction's commit returns before its markers are: until then the end offset a
        ``read_committed`` reader sees (the last stable offset) may lie before the records just written.
        """
        wait_stable = getattr(self.writer or self.backend, "wait_stable", None)
        if wait_stable is not None:
            wait_stable()
        return self.last_offset()

    def refresh(self) -> ClusterConfigState:
        """Read new records and return the current snapshot."""
        self._builder.apply_all(self.backend.read(self._builder.state.offset + 1))
        return self._builder.state

    def snapshot(self) -> ClusterConfigState:
        return self.refresh()

    def put_connector_config(self, name: str, config: dict[str, str],
                             target_state: TargetState | None = None) -> None:
        """Create or update a connector; a target state given here is written first (KIP-980)."""
        records = []
        if target_state is not None:
            records.append((TARGET_STATE_PREFIX + name, json_codec.dumps(target_state_value(target_state))))
        records.append((CONNECTOR_PREFIX + name, json_codec.dumps({"properties": config})))
        self._append(records)

    def remove_connector_config(self, name: str) -> None:
        """Tombstones for the connector and its target state, as Connect writes them."""
        self._append([(CONNECTOR_PREFIX + name, None), (TARGET_STATE_PREFIX + name, None)])

    def put_task_configs(self, name: str, configs: list[dict[str, str]]) -> None:
        """Every task config, then the commit record that applies them as one set."""
        records = [(task_key(name, i), json_codec.dumps({"properties": c})) for i, c in enumerate(configs)]
        records.append((COMMIT_PREFIX + name, json_codec.dumps({"tasks": len(configs)})))
        self._append(records)

    def put_target_state(self, name: str, state: TargetState) -> None:
        self._append([(TARGET_STATE_PREFIX + name, json_codec.dumps(target_state_value(state)))])

    def request_restart(self, name: str, include_tasks: bool, only_failed: bool) -> None:
        value = {"include-tasks": include_tasks, "only-failed": only_failed}
        self._append([(RESTART_PREFIX + name, json_codec.dumps(value))])

    def put_session_key(self, key: SessionKey) -> None:
        value = {"key": key.key, "algorithm": key.algorithm, "creation-timestamp": key.creation_timestamp}
        self._append([(SESSION_KEY, json_codec.dumps(value))])

    def put_task_count_record(self, name: str, task_count: int) -> None:
        self._append([(FENCING_PREFIX + name, json_codec.dumps({"task-count": task_count}))])

    def close(self) -> None:
        self.use_writer(None)
        self.backend.close()

    def put_logger_level(self, namespace: str, level: str) -> None:
        """``logger-cluster-NAMESPACE`` -> ``{"level": LEVEL}``, as Connect writes it for ``scope=cluster``."""
        self.backend.append([(LOGGER_PREFIX + namespace, json_codec.dumps({"level": level}))])
