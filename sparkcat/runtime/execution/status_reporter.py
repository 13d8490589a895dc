"""Writes observed state to the status store, one log line per change (what a user follows).

A task's ``worker_id`` names where it runs, once (Connect's rule): a RUNNING status is written only with an
executor (``HOST:EXECUTOR-ID``), and while the task stays RUNNING in this driver's generation a later RUNNING
write keeps the stored ``worker_id`` (``task``). A task whose executor is not known yet is UNASSIGNED
(``unplaced``) until its first batch names one. A new run (after FAILED, RESTARTING, PAUSED, UNASSIGNED, or on
a new leader) may name another executor.
"""

from __future__ import annotations

import logging
import threading

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
        self._tasks_lock = threading.RLock()  # the herder thread and query threads write task statuses

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
        """Write a task's status; RUNNING keeps the ``worker_id`` of the run it continues (see the module doc)."""
        trace = redact.scrub(trace)
        with self._tasks_lock:
            current = self.store.get_task(name, task)
            if state == State.RUNNING and _running_here(current, self.generation):
                worker = current.worker_id  # a task's worker_id is fixed from its first RUNNING status to its last
            else:
                worker = worker_id or (current.worker_id if current and current.worker_id else self.driver_id)
            if (current and current.state == state and current.worker_id == worker and current.trace == trace
                    and current.generation == self.generation):
                return
            self.store.put(Status(name, task, state, worker, self.generation, trace))
        where = f" on {worker}" if state == State.RUNNING else ""
        log.info("Task %s-%d is %s%s%s", name, task, state.value, where,
                 f": {reason_line(trace)}" if trace else "")

    def unplaced(self, name: str, task: int) -> None:
        """The task's query runs but no executor is known for it yet: UNASSIGNED (unless it is RUNNING already, on
        the executor its first batch named), RUNNING once a batch reports its executor."""
        with self._tasks_lock:
            if _running_here(self.store.get_task(name, task), self.generation):
                return
            self.task(name, task, State.UNASSIGNED)

    def remove_tasks_from(self, name: str, first_unused: int) -> None:
        """Tombstone statuses of tasks that no longer exist (after tasks.max shrank or STOPPED)."""
        stale = [s for s in self.store.tasks(name) if s.task >= first_unused]
        if stale:
            self.store.backend.append([(s.key, None) for s in stale])

    def remove(self, name: str) -> None:
        self.store.delete(name)
        log.info("Connector %s deleted; its status was removed", name)


def _running_here(status: Status | None, generation: int) -> bool:
    """``status`` is a RUNNING task's, on a named worker, written in this driver's ``generation``."""
    return bool(status and status.state == State.RUNNING and status.worker_id and status.generation == generation)


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
