"""What a native query committed, from its progress: each micro-batch's ``BatchResult`` without a job of its own.

A native sink's query (``sparkcat.api.native``) has no ``foreachBatch`` handler to report its batches, so
the runtime reads them from ``StreamingQueryProgress``, which Spark publishes once a batch is committed:

- positions: the Kafka source's ``endOffset`` (``{"topic": {"partition": next offset}}``), for each
  topic-partition that moved in the batch;
- records: ``numInputRows``, shared out over the tasks in proportion to how far each task's partitions moved
  (offsets also count transaction markers, so their sum alone could exceed the records);
- tasks: the owner of each topic-partition (the assignment the query started with); a transactional writer
  reports each task's records, positions and executor itself in ``sink.metrics["sparkcat.lastBatch"]``.

Spark calls the listener (``org.sparkcat.spark.ProgressFeed``, in the JVM) on its listener bus; it queues the
tracked queries' events as JSON, and one Python thread takes them and turns them into results
(``ProgressListener``), so a slow store write never holds Spark's listener bus. Spark posts a
query's progress events before its termination event, so once the worker has handled the termination every
batch of the query has been reported (``finish`` waits for it, then reads what is left from the query itself:
each batch is reported exactly once either way).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sparkcat.spark.query_plan import sink_position
from sparkcat.spark.query_plan import BatchResult, QueryPlan, TaskBatchResult, driver_worker_id

__all__ = ["Tracked", "ProgressListener", "batch_result", "share_out", "LAST_BATCH_METRIC"]

log = logging.getLogger(__name__)

#: The sink metric in which sparkcat's JVM exactly-once writer reports a batch's tasks.
LAST_BATCH_METRIC = "sparkcat.lastBatch"
#: How long one call waits for the feed's next events; also how long closing waits for the thread.
POLL_MS = 500


@dataclass
class Tracked:
    """A native query the listener reports: its plan, the owner of each topic-partition, what it saw last."""

    plan: QueryPlan
    owners: Mapping[tuple[str, int], int]
    transactional: bool
    starting: Mapping[tuple[str, int], int] = field(default_factory=dict)  # where a fresh checkpoint began
    last_batch: int = -1
    lock: threading.Lock = field(default_factory=threading.Lock)
    terminated: threading.Event = field(default_factory=threading.Event)

    def owner(self, topic: str, partition: int) -> int:
        """A partition the query started without (a new topic of a pattern) counts for the first live task."""
        live = self.plan.live_tasks or [0]
        return self.owners.get((topic, partition), live[0])


def _kafka_offsets(text: Any) -> dict[tuple[str, int], int]:
    """``{(topic, partition): offset}`` of a Kafka source offset in the progress (a JSON text, or None)."""
    if not text:
        return {}
    value = json.loads(text) if isinstance(text, str) else text
    if not isinstance(value, dict):
        return {}
    return {(topic, int(p)): int(o) for topic, parts in value.items() if isinstance(parts, dict)
            for p, o in parts.items()}


def share_out(total: int, weights: Mapping[int, int]) -> dict[int, int]:
    """``total`` split over the keys of ``weights`` in proportion to them (largest remainders), summing to ``total``.

    >>> share_out(10, {0: 3, 1: 1}), share_out(5, {0: 0, 1: 0}), share_out(0, {2: 9})
    ({0: 8, 1: 2}, {0: 3, 1: 2}, {2: 0})
    """
    if not weights:
        return {}
    whole = sum(weights.values())
    if whole <= 0:
        weights, whole = {k: 1 for k in weights}, len(weights)
    exact = {k: total * w / whole for k, w in weights.items()}
    out = {k: int(v) for k, v in exact.items()}
    rest = total - sum(out.values())
    for k in sorted(exact, key=lambda k: (out[k] - exact[k], k))[:rest]:
        out[k] += 1
    return out


def batch_result(tracked: Tracked, progress: Mapping[str, Any], worker_id: str) -> BatchResult | None:
    """The ``BatchResult`` of one progress update (a dict as ``StreamingQueryProgress.json`` has it); None when the
    batch read nothing."""
    rows = int(progress.get("numInputRows") or 0)
    sources = progress.get("sources") or [{}]
    # a query's first batch has no start in its progress: it began where it was positioned (else the earliest)
    starts = _kafka_offsets(sources[0].get("startOffset")) or dict(tracked.starting)
    ends = _kafka_offsets(sources[0].get("endOffset"))
    moved = {tp: end for tp, end in ends.items() if starts.get(tp) != end}
    if rows == 0 and not moved:
        return None
    batch_id = int(progress.get("batchId", -1))
    duration = float((progress.get("durationMs") or {}).get("triggerExecution", 0)) / 1000
    plan = tracked.plan
    reported = _reported_tasks(progress, batch_id) if tracked.transactional else None
    if reported is not None:
        return BatchResult(plan.connector, batch_id, reported[0], duration, transaction_ms=reported[1],
                           positions_stored=True)
    weights: dict[int, int] = {}
    tasks: dict[int, TaskBatchResult] = {}
    for (topic, partition), end in sorted(moved.items()):
        task = tracked.owner(topic, partition)
        weights[task] = weights.get(task, 0) + max(0, end - starts.get((topic, partition), 0))
        tasks.setdefault(task, TaskBatchResult(task, worker_id, 0, [])).offsets.append(
            sink_position(topic, partition, end))
    for task, records in share_out(rows, weights).items():
        tasks[task].records = records
    return BatchResult(plan.connector, batch_id, tasks, duration, positions_stored=tracked.transactional)


def _reported_tasks(progress: Mapping[str, Any], batch_id: int) -> tuple[dict[int, TaskBatchResult], float] | None:
    """The tasks a transactional writer reported for this batch (records, positions, executor), or None."""
    text = ((progress.get("sink") or {}).get("metrics") or {}).get(LAST_BATCH_METRIC)
    summary = json.loads(text) if text else None
    if not summary or int(summary.get("epoch", -2)) != batch_id:
        return None
    tasks = {}
    for t in summary.get("tasks", []):
        offsets = []
        for key, end in sorted(t.get("positions", {}).items()):
            topic, _, partition = key.rpartition(":")
            offsets.append(sink_position(topic, int(partition), int(end)))
        tasks[int(t["task"])] = TaskBatchResult(int(t["task"]), t["worker_id"], int(t["records"]), offsets)
    slowest = max((float(t.get("transaction_ms", 0)) for t in summary.get("tasks", [])), default=0.0)
    return tasks, slowest


class ProgressListener:
    """Native queries' progress to ``on_batch``, in batch order, taken from the session's ``ProgressFeed``.

    ``org.sparkcat.spark.ProgressFeed`` (jvm/sparkcat) is the session's listener: it keeps the events of the
    queries tracked here as JSON, and one thread takes them in batches. PySpark's own listener bridge would
    call into Python for every event of every query and read each progress field by field over py4j
    (about 75 ms of CPU per micro-batch of any query in the session: ``bench/run.py --only listener``).
    """

    def __init__(self, spark: Any, on_batch: Callable[[QueryPlan, BatchResult], None]):
        self.on_batch = on_batch
        self.worker_id = driver_worker_id()  # the driver plans and commits every native batch
        self._tracked: dict[str, Tracked] = {}
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._feed = _new_feed(spark)
        self._queries = spark._jsparkSession.streams()
        self._queries.addListener(self._feed)
        self._worker = threading.Thread(target=self._work, name="sparkcat-progress", daemon=True)
        self._worker.start()

    def track(self, query_id: str, tracked: Tracked, recent: Callable[[], list[dict[str, Any]]]) -> None:
        """Report query ``query_id`` from now on; ``recent()`` (its ``recentProgress``) gives the batches that ended
        before: Spark may run a short first batch between ``start()`` returning and this call."""
        with tracked.lock:  # the feed's events of this query wait until the batches before them are reported
            with self._lock:
                self._tracked[query_id] = tracked
            self._feed.track(query_id)
            try:
                for progress in recent():
                    self._report_locked(tracked, progress)
            except Exception:  # noqa: BLE001 - the feed's next batch repeats the positions
                log.exception("Reporting the first batches of connector %s failed", tracked.plan.connector)

    def finish(self, query_id: str, recent: Callable[[], list[dict[str, Any]]], timeout_s: float = 30.0) -> None:
        """A query ended: wait until its termination was handled (every progress event before it reported), report
        what is still missing from ``recent()`` (its ``recentProgress``), and forget it."""
        with self._lock:
            tracked = self._tracked.get(query_id)
        if tracked is None:  # never tracked, or its end was handled already
            return
        if not tracked.terminated.wait(timeout_s):
            log.warning("Connector %s: its query's end was not reported within %.0f s; reading its progress",
                        tracked.plan.connector, timeout_s)
        for progress in recent():
            self._report(tracked, progress)
        with self._lock:
            self._tracked.pop(query_id, None)
        self._feed.untrack(query_id)

    def close(self) -> None:
        """The driver stops: no more events are taken (queries still running are not reported any more)."""
        self._closed.set()
        try:
            self._queries.removeListener(self._feed)
        except Exception as e:  # noqa: BLE001 - the session stopped first: nothing listens any more
            log.debug("removing the progress feed: %s", e)
        self._worker.join(timeout=2 * POLL_MS / 1000)

    def _work(self) -> None:
        while not self._closed.is_set():
            try:
                events = json.loads(self._feed.poll(POLL_MS))
            except Exception as e:  # noqa: BLE001 - the session stopped under us
                if not self._closed.is_set():
                    log.info("Progress of native queries is no longer reported: %s", e)
                return
            for event in events:
                self._handle(event)

    def _handle(self, event: dict[str, Any]) -> None:
        with self._lock:
            tracked = self._tracked.get(event["id"])
        if tracked is None:
            return
        if event.get("terminated"):  # every batch of the query was reported: forget it (a failed query too)
            with self._lock:
                self._tracked.pop(event["id"], None)
            tracked.terminated.set()
            return
        try:
            self._report(tracked, event["progress"])
        except Exception:  # noqa: BLE001 - one bad report must not stop the others; the next batch repeats positions
            log.exception("Reporting a batch of connector %s failed", tracked.plan.connector)

    def _report(self, tracked: Tracked, progress: dict[str, Any]) -> None:
        with tracked.lock:
            self._report_locked(tracked, progress)

    def _report_locked(self, tracked: Tracked, progress: dict[str, Any]) -> None:
        batch = int(progress.get("batchId", -1))
        if batch <= tracked.last_batch:
            return
        tracked.last_batch = batch
        result = batch_result(tracked, progress, self.worker_id)
        if result is not None and result.tasks:
            self.on_batch(tracked.plan, result)


def _new_feed(spark: Any) -> Any:
    """A new ``org.sparkcat.spark.ProgressFeed``; a clear error when sparkcat's JVM module is not on the class path."""
    try:
        return spark.sparkContext._jvm.org.sparkcat.spark.ProgressFeed()
    except Exception as e:
        raise RuntimeError("Native sink queries need sparkcat's JVM module (sparkcat-jvm.jar, built by "
                           "scripts/jars.sh) on the driver's class path to report their batches: "
                           f"{str(e).splitlines()[0] if str(e) else type(e).__name__}") from e
