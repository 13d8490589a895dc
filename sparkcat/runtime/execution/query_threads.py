"""Starts and stops connector queries off the herder thread; what follows each runs back on it.

Stopping a query waits for its batch in flight to be committed, up to a whole
micro-batch; so queries are stopped on threads of their own, all at once. Starting
one takes Spark 0.2 to 2 s depending on load, and starts overlap only in part; so
queries are started on a few starter threads (``STARTS_AT_ONCE``). Either way the
herder thread goes on with other connectors and requests meanwhile. What follows a
start or stop (statuses, task configs, checkpoint removal) still runs on the herder
thread, in the same order as before, once it is done (``finish``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from sparkcat.runtime.execution.lifecycle import ConnectorRuntime
from sparkcat.runtime.execution.query_runner import QueryRunner, RunningQuery
from sparkcat.spark.query_plan import QueryPlan, failed_task_ids, task_failure_message

log = logging.getLogger("sparkcat.herder")

# Query starts in flight at once. Measured on a local[2] driver with 12 connectors
# (noisy): 12 starts took 6.2 s one at a time and 3.0 s four at a time, each start
# slower (0.4-1.5 s instead of 0.2-0.9 s) but more of them done per second.
STARTS_AT_ONCE = 4


def start_failure(plan: QueryPlan, error: Exception) -> Exception:
    """A query that could not start: its tasks could not start, so each is named (they are FAILED, and stay so
    until a restart or a new config, as a Connect task whose start failed), unless the error names some already.
    A transient error (Kafka unreachable) keeps its text, which the reconciler retries with backoff."""
    text = str(error)
    if failed_task_ids(plan.connector, text) or not plan.live_tasks:
        return error
    lines = [task_failure_message(plan.connector, t, error) for t in plan.live_tasks]
    return RuntimeError("\n".join(lines))


@dataclass
class Pending:
    """A query being started or stopped off the herder thread, and what the herder thread does after."""

    rt: ConnectorRuntime
    query: RunningQuery             # the one being stopped; for a start, a stand-in until Spark started it
    starting: bool = False
    then: list[Callable[[], None]] = field(default_factory=list)
    began: float = field(default_factory=time.monotonic)
    done: threading.Event = field(default_factory=threading.Event)
    error: Exception | None = None


class QueryThreads:
    """The starts and stops in flight, one per connector at most.

    ``guarded(name, action)`` runs what follows a start or stop on the herder thread,
    reporting the connector FAILED if it raises.
    """

    def __init__(self, runner: QueryRunner, guarded: Callable[[str, Callable[[], None]], None]):
        self.runner = runner
        self.pending: dict[str, Pending] = {}
        self._guarded = guarded
        self._starter = ThreadPoolExecutor(STARTS_AT_ONCE, thread_name_prefix="sparkcat-start")
        self.wake: Callable[[], None] = lambda: None  # the herder's: reconcile again once a query started/stopped

    def __contains__(self, name: str) -> bool:
        return name in self.pending

    def start(self, rt: ConnectorRuntime, plan: QueryPlan, then: Callable[[], None],
              prepare: Callable[[], None] | None = None) -> None:
        """Start ``plan``'s query on a starter thread; ``then`` runs on the herder thread once it started.

        ``prepare`` runs first on that thread (fencing an exactly-once connector's earlier tasks);
        if it raises, the query is not started. Until then ``rt.query`` is a stand-in that is not
        active, so nobody takes the connector for halted, and the connector is left alone.
        """
        pending = self.pending[rt.name] = Pending(rt, RunningQuery(plan), starting=True, then=[then])
        rt.query = pending.query

        def start() -> RunningQuery:
            if prepare is not None:
                prepare()
            began = time.monotonic()
            query = self.runner.start(plan, rt.instance)
            log.info("Connector %s: query started in %.2f s", rt.name, time.monotonic() - began)
            return query

        self._starter.submit(self._run_off_thread, pending, start)

    def stop(self, rt: ConnectorRuntime, then: Callable[[], None] | None = None, graceful: bool = True) -> bool:
        """Stop ``rt``'s query on a thread of its own; ``then`` runs on the herder thread once it stopped.

        True when there was no query (``then`` has run already). Otherwise False: the
        stop waits for the batch in flight to be committed (``QueryRunner.stop``), and
        ``finish`` on a later pass clears ``rt.query`` and runs ``then``. Until then
        ``rt.query`` stays set, so nobody takes the connector for halted. A connector
        with a start or stop in flight is reconciled once that is done, so nothing is
        done here then (only ``Reconciler.restart_task`` can get here so). ``graceful=False``: the
        batch in flight is cancelled, not awaited (``QueryRunner.stop``).
        """
        if rt.name in self.pending:
            return False
        if rt.query is None:
            if then is not None:
                then()
            return True
        pending = self.pending[rt.name] = Pending(rt, rt.query, then=[then] if then else [])
        threading.Thread(target=self._run_off_thread, args=(pending, lambda: self.runner.stop(pending.query, graceful=graceful)),
                         name=f"sparkcat-stop-{rt.name}", daemon=True).start()
        log.info("Connector %s: stopping its query %s", rt.name,
                 "once the batch in flight is committed" if graceful else "now, cancelling the batch in flight")
        return False

    def _run_off_thread(self, pending: Pending, action: Callable[[], RunningQuery | None]) -> None:
        try:
            query = action()
            if pending.starting:
                pending.query = query
        except Exception as e:  # reported by finish, on the herder thread
            pending.error = e
        finally:
            pending.done.set()
            self.wake()

    def finish(self, wait: bool = False) -> None:
        """Run what waited for each query start or stop that is done (herder thread); ``wait``: for all."""
        while self.pending:
            if wait:
                for pending in list(self.pending.values()):
                    pending.done.wait()
            done = [p for p in self.pending.values() if p.done.is_set()]
            if not done:
                return
            for pending in done:
                del self.pending[pending.rt.name]
                self._guarded(pending.rt.name, lambda p=pending: self._after(p))

    @staticmethod
    def _after(pending: Pending) -> None:
        rt = pending.rt
        took = time.monotonic() - pending.began
        if pending.starting:
            rt.query = None if pending.error else pending.query
        if pending.error is not None and pending.starting:
            raise start_failure(pending.query.plan, pending.error)
        if pending.error is not None:
            raise pending.error
        if not pending.starting:
            if rt.query is pending.query:
                rt.query = None
            log.info("Connector %s: query stopped after %.1f s", rt.name, took)
        for then in pending.then:
            then()

    def shutdown(self) -> None:
        """No more starts (driver shutdown)."""
        self._starter.shutdown(wait=False)
