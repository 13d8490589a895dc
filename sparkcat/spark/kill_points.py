"""Test-only kill points: hold a connector's batch at a named point so a test can SIGKILL the driver there.

``SPARKCAT_TEST_HOLD`` lists ``connector=point@batch`` (comma-separated; ``point@batch:task`` holds
one task only), ``SPARKCAT_TEST_HOLD_DIR`` the directory where a held batch drops a marker file
``connector-point`` before it sleeps for good. Executors inherit the driver's environment in local
mode. Unset (always, outside tests), ``hold`` returns at once.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

__all__ = ["hold", "HOLD_ENV", "HOLD_DIR_ENV"]

HOLD_ENV = "SPARKCAT_TEST_HOLD"
HOLD_DIR_ENV = "SPARKCAT_TEST_HOLD_DIR"


def _wanted(connector: str, point: str, batch: int, task: int | None) -> bool:
    for entry in os.environ.get(HOLD_ENV, "").split(","):
        name, _, spec = entry.strip().partition("=")
        where, _, held_task = spec.partition(":")
        held_point, _, held_batch = where.partition("@")
        if name == connector and held_point == point and held_batch.isdigit() and int(held_batch) == batch \
                and (not held_task or task is None or int(held_task) == task):
            return True
    return False


def hold(connector: str, point: str, batch: int, task: int | None = None) -> None:
    """Sleep forever at ``point`` of ``connector``'s batch ``batch`` when the environment asks for it."""
    if HOLD_ENV not in os.environ or not _wanted(connector, point, batch, task):
        return
    Path(os.environ[HOLD_DIR_ENV], f"{connector}-{point}").write_text(str(os.getpid()))
    while True:
        time.sleep(3600)
