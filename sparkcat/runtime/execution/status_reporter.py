"""Writes observed state to the status store, one log line per change (what a user follows)."""

from __future__ import annotations

import logging
import re

from sparkcat import redact
from sparkcat.model.status import State, Status
from sparkcat.storage.factory import Stores
from sparkcat.storage.status import StatusStore

log = logging.getLogger(__name__)


class StatusReporter:
    """Status writes of one driver; ``generation`` orders them against other drivers' writes."""

    def __init__(self, store: StatusStore, driver_id: str, generation: int):
        self.store = store
        self.driver_id = driver_id
        self.generation = generation

    def next_generation(self) -> None:
        """Take a generation newer than any status stored now (this driver became the leader)."""
        self.generation = newest_generation(self.store) + 1

    def connector(self, name: str, state: State, trace: str | None = None) -> None:
        trace = redact.scrub(trace)  # a connector's exception may quote its secrets
        current = self.store.get(name)
        if current and current.state == state and current.trace == trace and current.generation == self.generation:
            return
        self.store.put(Status(name, None, state, self.driver_id, self.generation, trace))
        log.info("Connector %s is %s%s", name, state.value, f": {_first_line(trace)}" if trace else "")

    def task(self, name: str, task: int, state: State, worker_id: str | None = None,
             trace: str | None = None) -> None:
        trace = redact.scrub(trace)
        current = self.store.get_task(name, task)
        worker = worker_id or (current.worker_id if current and current.worker_id else self.driver_id)
        if (current and current.state == state and current.worker_id == worker and current.trace == trace
                and current.generation == self.generation):
            return
        self.store.put(Status(name, task, state, worker, self.generation, trace))
        where = f" on {worker}" if state == State.RUNNING else ""
        log.info("Task %s-%d is %s%s%s", name, task, state.value, where,
                 f": {_first_line(trace)}" if trace else "")

    def remove_tasks_from(self, name: str, first_unused: int) -> None:
        """Tombstone statuses of tasks that no longer exist (after tasks.max shrank or STOPPED)."""
        stale = [s for s in self.store.tasks(name) if s.task >= first_unused]
        if stale:
            self.store.backend.append([(s.key, None) for s in stale])

    def remove(self, name: str) -> None:
        self.store.delete(name)
        log.info("Connector %s deleted; its status was removed", name)


#: The line of a Python or Java trace that names the exception: ``module.SomeError: message``.
_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.$]*(Error|Exception|Exit|Interrupt|Stopping|Fault)\b(:|$)")


def _first_line(trace: str | None) -> str:
    """The line of ``trace`` that says why, for the one log line of a state change.

    A failed query's trace is Python's, then Spark's description of the query (its plan); the reason
    is the last exception line before that description, not the plan's last line.
    """
    text = (trace or "").split("=== Streaming Query ===")[0]
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    for line in lines:
        if "sparkcat task failed:" in line:
            return line
    named = [ln for ln in lines if _EXCEPTION_LINE.match(ln)]
    if named:
        return named[-1]
    return lines[-1] if lines else ""


def newest_generation(store: StatusStore) -> int:
    """The newest generation of any status the store holds (0: none)."""
    store.refresh()
    newest = 0
    for name in store.connectors():
        current = store.get(name)
        newest = max(newest, current.generation if current else 0)
        newest = max([newest] + [t.generation for t in store.tasks(name)])
    return newest


def new_status_reporter(stores: Stores, driver_id: str) -> StatusReporter:
    """A reporter whose generation is newer than any status already stored (this driver's epoch)."""
    return StatusReporter(stores.status, driver_id, newest_generation(stores.status) + 1)
