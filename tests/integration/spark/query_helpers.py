"""What the connector-query tests share: an ``on_batch`` recorder, a batch gate like the herder's, a query-aware wait."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from sparkcat.spark.plan import BatchResult, QueryPlan
from sparkcat.storage.offsets import OffsetStore
from tests.kafka_helpers import wait_until as wait_for

WAIT_S = 120.0


class Batches:
    """``on_batch`` for tests: keeps results and, like the herder, writes offsets to a store."""

    def __init__(self, store: OffsetStore | None = None) -> None:
        self.store = store
        self.results: list[BatchResult] = []
        self.lock = threading.Lock()

    def __call__(self, plan: QueryPlan, result: BatchResult) -> None:
        if self.store is not None:
            self.store.put(plan.connector, [o for t in result.tasks.values() for o in t.offsets])
        with self.lock:
            self.results.append(result)

    def records(self) -> int:
        with self.lock:
            return sum(r.records for r in self.results)

    def position(self, increment: int) -> int:
        """The highest position reported for ``{"increment": increment}`` (0 before any)."""
        with self.lock:
            return max([o["position"] for r in self.results for t in r.tasks.values() for p, o in t.offsets
                        if p == {"increment": increment}], default=0)


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
    def met() -> bool:
        if condition():
            return True
        if not query.isActive:
            raise AssertionError(f"query terminated: {query.exception()}")
        return False

    wait_for(met, timeout_s, 0.1, lambda: f"the condition; progress: {query.lastProgress}")


def run_until(spark: Any, plan: QueryPlan, batches: Batches, condition: Callable[[], bool],
              settle_s: float = 0.0) -> None:
    """Run ``plan``'s query behind a ``Gate`` until ``condition``, then stop it.

    ``settle_s``: let it run that much longer first, so that a further (duplicate) batch would show.
    """
    from sparkcat.spark.queries import start_query
    gate = Gate()
    query = start_query(spark, plan, batches, gate)
    try:
        wait_until(condition, query)
        time.sleep(settle_s)
    finally:
        gate.stop(query)
