"""What the reconciler tests share: a connector config, a reconciler on memory stores, and status reads."""

from __future__ import annotations

from pathlib import Path

from sparkcat.runtime.execution.reconciler import Reconciler
from sparkcat.runtime.execution.status_reporter import StatusReporter
from sparkcat.config.worker import WorkerConfig
from sparkcat.storage.factory import Stores, memory_stores

INC = {"connector.class": "increment", "increments": "1,100", "tasks.max": "2",
       "sink.connector.class": "file-sink", "sink.file": "/tmp/never-written"}


def reconciler_on_memory(tmp_path: Path, runner, **worker: object) -> tuple[Stores, Reconciler]:
    """A reconciler over memory stores and ``runner`` (a fake), its state under ``tmp_path``; ``worker``: more
    worker settings."""
    stores = memory_stores()
    reconciler = Reconciler(stores, StatusReporter(stores.status, "driver:8083", 1), runner,
                            WorkerConfig(state_dir=str(tmp_path),
                                         file_allowed_dirs=[str(tmp_path), "/tmp/never-written"], **worker))
    return stores, reconciler


def settle(stores: Stores, reconciler: Reconciler, rounds: int = 4) -> None:
    """Reconcile until the config log stops changing (our own task-config writes come back).

    Queries start and stop on threads of their own; each round waits for them, as the
    herder would be woken by them.
    """
    for _ in range(rounds):
        reconciler.reconcile(stores.config.snapshot())
        reconciler.finish_pending(wait=True)


def status(stores: Stores, name: str) -> tuple[str | None, list[str]]:
    """(connector state, task states) as stored."""
    c = stores.status.get(name)
    return (c.state.value if c else None), [t.state.value for t in stores.status.tasks(name)]
