"""A snapshot of the cluster's configuration, as rebuilt from the config log.

Kept apart from observed state (``sparkcat.model.status``): this is what users
asked for (configs, target states), not what is running.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


class TargetState(str, Enum):
    """What a user asked a connector to be: Kafka Connect's ``TargetState``."""

    STARTED = "STARTED"
    PAUSED = "PAUSED"
    STOPPED = "STOPPED"


#: Connect's ``initial_state`` names (create requests, pipeline specs) -> target state.
INITIAL_STATES = {"RUNNING": TargetState.STARTED, "PAUSED": TargetState.PAUSED, "STOPPED": TargetState.STOPPED}


def initial_target_state(value: str | None) -> TargetState | None:
    """An ``initial_state`` (any case) as a target state; None for none (Connect's default, running).

    >>> initial_target_state(" paused "), initial_target_state(None)
    (<TargetState.PAUSED: 'PAUSED'>, None)

    Raises ``ValueError`` for a name that is not one of ``INITIAL_STATES``.
    """
    if value is None:
        return None
    try:
        return INITIAL_STATES[value.strip().upper()]
    except KeyError:
        raise ValueError(f"Invalid initial_state {value!r}: must be one of RUNNING, PAUSED or STOPPED") from None


@dataclass(frozen=True)
class RestartRequest:
    """A ``restart-connector-NAME`` record; ``offset`` orders requests so each is handled once."""

    connector: str
    include_tasks: bool
    only_failed: bool
    offset: int


@dataclass(frozen=True)
class SessionKey:
    """The ``session-key`` record Kafka Connect uses to sign internal requests."""

    key: str
    algorithm: str
    creation_timestamp: int


@dataclass
class ClusterConfigState:
    """Connector configs, committed task configs and target states, as of ``offset``.

    Task configs appear here only once their ``commit-NAME`` record was read with a
    complete set; connectors whose last commit could not be applied are listed in
    ``inconsistent`` and must be reconfigured, never run half-configured.
    """

    offset: int = -1
    connector_configs: dict[str, dict[str, str]] = field(default_factory=dict)
    target_states: dict[str, TargetState] = field(default_factory=dict)
    task_counts: dict[str, int] = field(default_factory=dict)
    task_configs: dict[tuple[str, int], dict[str, str]] = field(default_factory=dict)
    task_config_generations: dict[str, int] = field(default_factory=dict)
    task_count_records: dict[str, int] = field(default_factory=dict)
    # Connect's connectorsPendingFencing: task configs committed after the last tasks-fencing record.
    pending_fencing: set[str] = field(default_factory=set)
    inconsistent: set[str] = field(default_factory=set)
    restart_requests: dict[str, RestartRequest] = field(default_factory=dict)
    session_key: SessionKey | None = None
    # logger-cluster- records (KIP-976): namespace -> (level as written, offset of its record)
    logger_levels: dict[str, tuple[str, int]] = field(default_factory=dict)

    def connectors(self) -> list[str]:
        """Names of every configured connector, sorted."""
        return sorted(self.connector_configs)

    def contains(self, name: str) -> bool:
        return name in self.connector_configs

    def connector_config(self, name: str) -> dict[str, str] | None:
        return self.connector_configs.get(name)

    def target_state(self, name: str) -> TargetState | None:
        """The target state; a configured connector with none recorded is STARTED (Connect's rule)."""
        if name not in self.connector_configs:
            return None
        return self.target_states.get(name, TargetState.STARTED)

    def task_ids(self, name: str) -> list[int]:
        """Ids of the committed tasks of ``name`` (empty while inconsistent or stopped)."""
        if name in self.inconsistent:
            return []
        return list(range(self.task_counts.get(name, 0)))

    def task_config(self, name: str, task: int) -> dict[str, str] | None:
        return self.task_configs.get((name, task))

    def all_task_configs(self, name: str) -> list[dict[str, str]]:
        """The committed task configs of ``name`` in task-id order."""
        return [self.task_configs[(name, t)] for t in self.task_ids(name)]
