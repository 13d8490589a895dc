"""What the connector-query tests share: a batch gate like the herder's and a query-aware wait."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

WAIT_S = 120.0


class Gate:
    """A batch gate like the herder's: a stop waits for the batch in flight and lets no new one write."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.stopping = False

    def __call__(self, run_batch: Callable[[], None]) -> None:
        with self.lock:
            if self.stopping:
                raise RuntimeError("stopping; batch left for replay")
            run_batch()

    def stop(self, query: Any) -> None:
        with self.lock:
            self.stopping = True
        try:
            query.stop()
        except Exception:  # a batch refused by the gate may fail the query first; it is stopped either way
            pass


def wait_until(condition: Callable[[], bool], query: Any, timeout_s: float = WAIT_S) -> None:
    """Poll ``condition`` until true; fail early with the query's exception if it dies."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if not query.isActive:
            raise AssertionError(f"query terminated: {query.exception()}")
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout_s}s; progress: {query.lastProgress}")
        time.sleep(0.1)
