"""Starts and stops connector queries; a graceful stop never cuts a micro-batch in half.

Each query's batch handler runs under the query's gate. A graceful stop takes the
gate (so the batch in flight finishes and its offsets are recorded), marks the query
as stopping, and only then stops it; a batch that starts afterwards refuses to write.
The gate also refuses a batch while this driver does not lead (a driver resumed after a
pause, before its herder has stopped its queries), and hands exactly-once writers the
leadership's ``LeaderLease``, which their commits carry.

A native sink's query (``sparkcat.api.native``) has no handler and so no gate: it is stopped
once no trigger is active, and every batch it committed is reported from its progress before
``stop`` returns. JVM writers get the lease from the driver JVM (``publish_lease``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from sparkcat.runtime.execution import resume
from sparkcat.api.connector import Connector
from sparkcat.runtime.leadership import Leadership, SoleLeader
from sparkcat.spark.query_plan import BatchResult, QueryPlan, QueryStopping, driver_worker_id
from sparkcat.spark.driver.pools import CONNECTORS_POOL, in_pool
from sparkcat.storage.offsets import OffsetStore

if TYPE_CHECKING:
    from sparkcat.spark.driver.native_queries import NativeQueries
    from sparkcat.spark.driver.shared_queries import SharedQueries

log = logging.getLogger(__name__)


@dataclass
class RunningQuery:
    """A started query with its plan and its batch gate."""

    plan: QueryPlan
    query: object = None
    gate: threading.Lock = field(default_factory=threading.Lock)
    stopping: bool = False
    started_at: float = field(default_factory=time.time)
    native: bool = False  # Spark writes the records itself: no foreachBatch, batches reported from progress
    # The worker_id of every task of the query, when known as it starts (``QueryRunner._placement``); None: each
    # task's first batch names its executor
    placement: str | None = None

    def is_active(self) -> bool:
        return bool(self.query is not None and self.query.isActive)

    def failure(self) -> str | None:
        """The exception text if the query terminated with an error (not by our stop)."""
        if self.query is None or self.query.isActive or self.stopping:
            return None
        error = self.query.exception()
        return None if error is None else str(error)


class BatchListener(Protocol):
    """Who hears of each committed batch (``BatchAccounting``); called on query threads."""

    def on_batch(self, plan: QueryPlan, result: BatchResult) -> None: ...


class FirstBatches:
    """Connectors whose query started and has not reported its first batch yet (``waiting``): what a leader's
    background warm-up yields to, so a first connector does not share the cores with it. A query that reports no
    batch (nothing to read) counts for ``BOUND_S`` at most."""

    BOUND_S = 30.0

    def __init__(self) -> None:
        self._started: dict[str, float] = {}
        self._lock = threading.Lock()

    def started(self, connector: str) -> None:
        with self._lock:
            self._started[connector] = time.monotonic()

    def heard(self, connector: str) -> None:
        if self._started:  # most batches: nothing to take out, no lock
            with self._lock:
                self._started.pop(connector, None)

    def waiting(self) -> bool:
        now = time.monotonic()
        with self._lock:
            self._started = {c: at for c, at in self._started.items() if now - at < self.BOUND_S}
            return bool(self._started)


class QueryRunner:
    """The herder's handle on Spark: one streaming query per connector.

    ``start`` and ``stop`` may be called from several threads at once (the reconciler
    starts and stops queries off the herder thread), each for a different query.
    """

    def __init__(self, spark, batches: BatchListener, leadership: Leadership | None = None,
                 offsets: OffsetStore | None = None):
        """``batches`` is told of every committed batch, on the query's thread (``BatchAccounting``);
        ``offsets``: the driver's offsets store, which source connectors' planners read (else each opens one)."""
        self.spark = spark
        self.first_batches = FirstBatches()

        def on_batch(plan: QueryPlan, result: BatchResult) -> None:
            self.first_batches.heard(plan.connector)
            batches.on_batch(plan, result)
        self.on_batch = on_batch
        self.offsets = offsets
        self.leadership: Leadership = leadership or SoleLeader()
        self._native: NativeQueries | None = None
        self._groups: SharedQueries | None = None
        self._registered = False
        self._register_lock = threading.Lock()

    def publish_lease(self) -> None:
        """Give the driver JVM's exactly-once writers the current lease, or take it away (membership changed)."""
        key = self.leadership.lease_key()
        if key and self.spark is not None:
            from sparkcat.spark.driver.leases import publish
            publish(self.spark, key, self.leadership.lease())

    def start(self, plan: QueryPlan, connector: Connector | None = None) -> RunningQuery:
        """Start ``plan``'s query: natively when its (started) ``connector`` answers ``native_write``."""
        from sparkcat.spark.driver import queries
        from sparkcat.spark.driver.native_queries import NativeQueries

        with self._register_lock:
            if not self._registered:
                queries.register_sources(self.spark)
                self._registered = True
        running = RunningQuery(plan, placement=self._placement())
        self.first_batches.started(plan.connector)

        def gate(run_batch: Callable[[], None]) -> None:
            with running.gate:
                if running.stopping:
                    raise QueryStopping(f"query of {plan.connector} is stopping; batch left for replay")
                if not self.leadership.is_leader():
                    running.stopping = True  # ended by us, not failed: nothing is reported FAILED
                    raise QueryStopping(f"this driver does not lead now; batch of {plan.connector} left for replay")
                run_batch()

        with in_pool(self.spark, CONNECTORS_POOL):  # behind the herder's config-log batches
            if self._shared().shares(plan):
                running.query = self._shared().join(plan, running)
                return running
            if self._native is None:
                self._native = NativeQueries(self.spark, self.on_batch)
            running.query = self._native.start(plan, connector, self.leadership.lease_key())
            running.native = running.query is not None
            if running.native and not self._native.reports_executors(running.query):
                running.placement = driver_worker_id()
            if not running.native:
                running.query = queries.start_query(self.spark, plan, self.on_batch, gate, self.leadership.lease,
                                                    self.offsets)
        return running

    def _placement(self) -> str | None:
        """``HOST:driver`` on a ``local`` master, where the driver is Spark's only executor; else None (a cluster:
        Spark picks an executor for each task of each batch, known once the batch reports it)."""
        try:
            master = str(self.spark.sparkContext.master)
        except Exception:  # noqa: BLE001 - no session (REST unit tests) or a stand-in without one
            return None
        return driver_worker_id() if master == "local" or master.startswith("local[") else None

    def shared_queries(self) -> list:
        """The shared queries running now (``spark/driver/shared_queries.SharedGroup``)."""
        return [] if self._groups is None else self._groups.groups()

    def _shared(self) -> SharedQueries:
        from sparkcat.spark.driver.shared_queries import SharedQueries
        with self._register_lock:
            if self._groups is None:
                self._groups = SharedQueries(self.spark, self.on_batch, self.leadership.lease,
                                            self.leadership.is_leader, self.offsets)
            return self._groups

    def stop(self, running: RunningQuery, timeout_s: float = 60.0, graceful: bool = True) -> None:
        """Let the batch in flight finish and reach Spark's commit log, then stop the query.

        Spark writes ``commits/N`` after foreachBatch returns; stopping in between would
        replay batch N after a restart (duplicates in Kafka). So after closing the gate
        we wait until no trigger is active, or the next batch hit the closed gate and
        ended the query. ``graceful=False`` (a driver that stopped leading) stops at once:
        its batch in flight could not commit anyway (cut off from Kafka, or its lease is
        fenced), and waiting would keep its tasks running next to the new leader's.
        """
        if graceful:
            acquired = running.gate.acquire(timeout=timeout_s)
            try:
                running.stopping = True
            finally:
                if acquired:
                    running.gate.release()
            _wait_for_idle(running.query, timeout_s)
        else:
            running.stopping = True
        if running.query is not None:
            try:
                running.query.stop()
            except Exception as e:  # a query that failed meanwhile raises here; it is stopped either way
                log.debug("stopping query %s: %s", running.plan.connector, e)
            if running.native and self._native is not None:
                self._native.finished(running.query)

    def close(self) -> None:
        """The driver stops (after every query did): nothing more is taken from Spark's progress events."""
        if self._native is not None:
            self._native.close()
        if self._groups is not None:
            self._groups.close()

    def align_checkpoint(self, offsets: OffsetStore, plan: QueryPlan) -> bool:
        """Drop ``plan``'s checkpoint when the cluster committed past it (``runtime/resume.py``); True when dropped."""
        return resume.align_checkpoint(self.spark, offsets, plan)

    def delete_checkpoint(self, path: str) -> None:
        """Delete a query's checkpoint on whichever Hadoop file system holds it (``spark/hadoop_fs.py``).

        Without a Spark session (REST unit tests) no query ever ran, so there is no checkpoint to delete.
        """
        from sparkcat.spark.driver import hadoop_fs

        if self.spark is not None:
            hadoop_fs.delete(self.spark, path)


def _wait_for_idle(query, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while query is not None and time.monotonic() < deadline:
        try:
            if not query.isActive or not query.status["isTriggerActive"]:
                return
        except Exception:  # the query ended while we asked
            return
        time.sleep(0.05)
