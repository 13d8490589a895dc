"""Observed state of connectors and tasks (what is happening, not what was asked)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class State(str, Enum):
    """Kafka Connect's ``AbstractStatus.State``."""

    UNASSIGNED = "UNASSIGNED"
    RUNNING = "RUNNING"
    PAUSED = "PAUSED"
    STOPPED = "STOPPED"
    FAILED = "FAILED"
    RESTARTING = "RESTARTING"
    DESTROYED = "DESTROYED"


@dataclass(frozen=True)
class Status:
    """One status record: a connector's (``task`` None) or a task's."""

    connector: str
    task: int | None
    state: State
    worker_id: str
    generation: int
    trace: str | None = None

    @property
    def key(self) -> str:
        if self.task is None:
            return f"status-connector-{self.connector}"
        return f"status-task-{self.connector}-{self.task}"

    def to_json(self) -> dict:
        return {"state": self.state.value, "trace": self.trace, "worker_id": self.worker_id,
                "generation": self.generation}


@dataclass(frozen=True)
class TopicStatus:
    """A ``status-topic-TOPIC:connector-NAME`` record: a topic a connector used (KIP-558)."""

    topic: str
    connector: str
    task: int
    discover_timestamp: int
