"""What the connector-query tests share: an ``on_batch`` recorder, a batch gate like the herder's, a query-aware wait."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from sparkcat.spark.query_plan import BatchResult, QueryPlan
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

    def offset(self, topic: str, partition: int) -> int:
        """The highest Kafka offset (the next to read) reported for ``topic``'s ``partition`` (0 before any)."""
        with self.lock:
            return max([o["kafka_offset"] for r in self.results for t in r.tasks.values() for p, o in t.offsets
                        if p.get("kafka_topic") == topic and p.get("kafka_partition") == partition], default=0)

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
        wait_for_idle(query)
        try:
            query.stop()
        except Exception:  # a batch refused by the gate may fail the query first; it is stopped either way
            pass


def wait_for_idle(query: Any, timeout_s: float = WAIT_S) -> None:
    """Like the herder's stop (``runtime/query_runner``): let the trigger in flight end, so that Spark writes a
    batch that ran to its checkpoint's commit log before ``stop()``; else the same checkpoint replays it."""
    def idle() -> bool:
        try:
            return not query.isActive or not query.status["isTriggerActive"]
        except Exception:  # the query ended while we asked
            return True

    wait_for(idle, timeout_s, 0.05, lambda: f"the query's trigger to end; status: {query.status}")


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
              then: Callable[[], Callable[[], bool]] | None = None) -> None:
    """Run ``plan``'s query behind a ``Gate`` until ``condition``, then stop it.

    ``then``: called once ``condition`` holds, it writes a later marker and returns the condition that the
    query got past it; the query stops only after that, so a further (duplicate) batch of what came before
    the marker would have shown.
    """
    from sparkcat.spark.driver.queries import start_query
    gate = Gate()
    query = start_query(spark, plan, batches, gate)
    try:
        wait_until(condition, query)
        if then is not None:
            wait_until(then(), query)
    finally:
        gate.stop(query)
