"""The herder's view of the config log: the state built from the records the follower hands over, and its rebuild.

Records are applied in log order as they are read. After the follower restarts (it failed, or the config
topic was recreated) a fresh state is built from the log's beginning and replaces the one in use only once
it has read as far, or has read the whole log: readers never see a half-read log. A recreated topic is a
different log, so its state replaces the old one only once the whole of it was read, and the connectors the
old state had and the new one has not are named in a WARNING (they are stopped: the new topic says what runs).
"""

from __future__ import annotations

import logging
import threading

from sparkcat.model.config_state import ClusterConfigState
from sparkcat.storage.config_log import ConfigStateBuilder
from sparkcat.storage.log import LogRecord

log = logging.getLogger(__name__)


class ConfigView:
    """The config state in use, a state being rebuilt, and a condition notified as records are applied."""

    def __init__(self) -> None:
        self._builder = ConfigStateBuilder()
        self._pending: ConfigStateBuilder | None = None  # a restarted follower's, until caught up
        self._whole_log = False  # the pending state replaces the one in use only once the whole log was read
        self._lock = threading.Lock()
        self._applied = threading.Condition(self._lock)
        #: cache: the copy ``snapshot`` made of the state in use, until a record or a swap changes that state (the
        #: herder asks several times a pass; a copy of hundreds of connectors' configs each time was an idle cost)
        self._copy: ClusterConfigState | None = None

    def apply(self, records: list[LogRecord]) -> None:
        """Records in log order, into the state being rebuilt when there is one (swapped in once it caught up)."""
        with self._applied:
            self._copy = None
            pending = self._pending
            if pending is None:
                self._builder.apply_all(records)
            else:
                pending.apply_all(records)
                if not self._whole_log and pending.state.offset >= self._builder.state.offset:
                    self._builder, self._pending = pending, None
                    log.info("Config state rebuilt from the config log up to offset %d", pending.state.offset)
            self._applied.notify_all()

    @property
    def rebuilding(self) -> bool:
        """True while a restarted follower has not yet read as far as the state in use."""
        return self._pending is not None

    def rebuild(self, recreated: bool = False) -> None:
        """The follower reads the log from its beginning again (nothing read yet: the empty state goes on).
        ``recreated``: the log is a new one (its topic was deleted and created again), not the one read so far."""
        with self._applied:
            if self._builder.state.offset >= 0:
                self._pending, self._whole_log = ConfigStateBuilder(), recreated

    def read_to_end(self) -> bool:
        """The follower has read the whole log: a state being rebuilt replaces the one in use, even at a lower
        offset (the config topic was deleted and created again). True when it did."""
        with self._applied:
            pending = self._pending
            if pending is None:
                return False
            gone = sorted(set(self._builder.state.connectors()) - set(pending.state.connectors()))
            self._builder, self._pending, self._copy = pending, None, None
            log.info("Config state rebuilt from the whole config log (up to offset %d)", pending.state.offset)
            if gone:
                log.warning("Connectors not in the config log read again, stopped: %s (the config topic was "
                            "deleted and created again without them)", ", ".join(gone))
            self._applied.notify_all()
            return True

    def snapshot(self) -> ClusterConfigState:
        """A copy of the state in use, safe to read while records keep coming (shared by readers: never changed)."""
        with self._lock:
            if self._copy is None:
                self._copy = copy_state(self._builder.state)
            return self._copy

    def wait_for_offset(self, offset: int, timeout_s: float) -> bool:
        """Wait until the record at ``offset`` was applied (a write of ours came back), at most ``timeout_s``."""
        with self._applied:
            return self._applied.wait_for(lambda: self._builder.state.offset >= offset, timeout_s)


def copy_state(state: ClusterConfigState) -> ClusterConfigState:
    """A snapshot safe to read while the stream keeps applying records."""
    return ClusterConfigState(
        offset=state.offset,
        connector_configs={k: dict(v) for k, v in state.connector_configs.items()},
        target_states=dict(state.target_states),
        task_counts=dict(state.task_counts),
        task_configs={k: dict(v) for k, v in state.task_configs.items()},
        task_config_generations=dict(state.task_config_generations),
        task_count_records=dict(state.task_count_records),
        pending_fencing=set(state.pending_fencing),
        inconsistent=set(state.inconsistent),
        restart_requests=dict(state.restart_requests),
        session_key=state.session_key,
        logger_levels=dict(state.logger_levels),
    )
