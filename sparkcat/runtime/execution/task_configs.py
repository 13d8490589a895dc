"""Commits a connector's generated task configs to the config log, once per change (herder thread)."""

from __future__ import annotations

import logging

from sparkcat.model.config_state import ClusterConfigState
from sparkcat.storage.config_log import ConfigLog

log = logging.getLogger(__name__)


class TaskConfigWrites:
    """Task-config writes in flight: a write is not repeated until it came back through the config stream."""

    def __init__(self, config: ConfigLog):
        self.config = config
        self._pending: dict[str, int] = {}  # connector -> the config-log offset of our last write

    def current(self, state: ClusterConfigState, name: str, desired: list[dict[str, str]]) -> bool:
        """True when the committed task configs are ``desired``; else they are written (once) and False."""
        if name not in state.inconsistent and state.all_task_configs(name) == desired \
                and state.task_counts.get(name) == len(desired):
            self._pending.pop(name, None)
            return True
        self.write(state, name, desired)
        return False

    def write(self, state: ClusterConfigState, name: str, configs: list[dict[str, str]]) -> None:
        pending = self._pending.get(name)
        if pending is not None and state.offset < pending:
            return  # our last write has not come back through the stream yet
        self.config.put_task_configs(name, configs)
        self._pending[name] = self.config.last_written_offset()
        log.info("Connector %s: committed %d task config(s)", name, len(configs))
