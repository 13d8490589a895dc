"""Writes observed state to the status store, one log line per change (what a user follows)."""

from __future__ import annotations

import logging

from sparkcat import redact
from sparkcat.model.status import State, Status
from sparkcat.runtime.execution.failures import reason_line
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
        log.info("Connector %s is %s%s", name, state.value, f": {reason_line(trace)}" if trace else "")

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
                 f": {reason_line(trace)}" if trace else "")

    def remove_tasks_from(self, name: str, first_unused: int) -> None:
        """Tombstone statuses of tasks that no longer exist (after tasks.max shrank or STOPPED)."""
        stale = [s for s in self.store.tasks(name) if s.task >= first_unused]
        if stale:
            self.store.backend.append([(s.key, None) for s in stale])

    def remove(self, name: str) -> None:
        self.store.delete(name)
        log.info("Connector %s deleted; its status was removed", name)


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
