"""What one connector's queries committed since this driver started: batches, records, error counts, lag.

Written by ``BatchAccounting`` on query threads, read by ``GET /metrics``; Spark's own progress
(``StreamingQuery.recentProgress``) restarts with each query and keeps only its last batches.
"""

from __future__ import annotations

import json
import logging
import time
from collections import deque
from dataclasses import dataclass, field, replace
from typing import Any

from sparkcat.model.error_metrics import ErrorCounts
from sparkcat.runtime.execution.failures import Failure
from sparkcat.spark.query_plan import BatchResult

log = logging.getLogger(__name__)


@dataclass
class TaskProgress:
    """What one task's committed batches held: Connect's per-task metrics (``rest.connect_metrics``) read it."""

    batches: int = 0
    records: int = 0
    # the task's batches of the last minute as (committed at, records): its rates, batch sizes over Connect's
    # metrics window (30 s); older ones are dropped as batches come, at most 2000 (a batch each 30 ms) are kept
    history: deque = field(default_factory=lambda: deque(maxlen=2000), repr=False)


@dataclass
class Progress:
    """What this driver's queries of one connector committed since it started (``GET /metrics``).

    Spark's own progress (``StreamingQuery.recentProgress``) restarts with each query and
    keeps only its last batches, so these totals are kept here, in this one place.
    """

    batches: int = 0
    records: int = 0
    last_batch_s: float = 0.0
    last_batch_at: float = 0.0          # epoch seconds when the last batch was committed (0: none yet)
    batches_last_minute: int = 0        # set in snapshots, from ``_recent``
    offsets_behind_latest: float | None = None  # set in snapshots: Spark's Kafka source, worst partition
    _recent: deque = field(default_factory=lambda: deque(maxlen=10_000), repr=False)
    # the last batches as (committed at, duration s, records): the pace of a connector whose query is shared
    # with others, whose Spark progress is not its own
    history: deque = field(default_factory=lambda: deque(maxlen=300), repr=False)
    # exactly-once batches: how many, and the sum of each one's slowest task's producer init + commit
    transaction_batches: int = 0
    transaction_ms: float = 0.0
    # Connect's error handling metrics of each task that committed a batch (zeros until a record fails)
    task_errors: dict[int, ErrorCounts] = field(default_factory=dict)
    # each task's batches and records (the tasks that took part in a committed batch)
    tasks: dict[int, TaskProgress] = field(default_factory=dict)

    @property
    def transaction_s(self) -> float:
        return self.transaction_ms / 1000

    def add(self, result: BatchResult, now: float | None = None) -> None:
        self.batches += 1
        self.records += result.records
        self.last_batch_s = result.duration_s
        self.last_batch_at = time.time() if now is None else now
        self._recent.append(self.last_batch_at)
        self.history.append((self.last_batch_at, result.duration_s, result.records))
        if result.transaction_ms is not None:
            self.transaction_batches += 1
            self.transaction_ms += result.transaction_ms
        for task in result.tasks.values():
            totals = self.tasks.setdefault(task.task, TaskProgress())
            totals.batches += 1
            totals.records += task.records
            totals.history.append((self.last_batch_at, task.records))
            while totals.history[0][0] < self.last_batch_at - 60:
                totals.history.popleft()
            counts = self.task_errors.setdefault(task.task, ErrorCounts())
            if task.errors is not None:
                counts.add(task.errors)

    def task_failed(self, task: int, failure: Failure, now: float | None = None) -> None:
        """Count the record error that failed ``task``, if one did.

        Counts travel with committed batches, so the failure that fails a batch is counted here: a
        record beyond ``errors.tolerance`` or refused by Kafka (a failure and an error, as Connect
        counts it before the task fails), or a dead letter that could not be delivered.
        """
        record, dead_letter = int(failure.record_failed), int(failure.dead_letter_failed)
        if not (record or dead_letter):
            return
        counts = self.task_errors.setdefault(task, ErrorCounts())
        counts.record_failures += record
        counts.record_errors += record
        counts.dlq_produce_failures += dead_letter
        counts.last_error_ms = int((time.time() if now is None else now) * 1000)

    def snapshot(self, query: Any = None, now: float | None = None) -> Progress:
        """A copy for ``GET /metrics``: the batch cadence over the last minute and, when ``query`` (a running
        Spark query) reads Kafka, how far its worst partition is behind the topic's end."""
        now = time.time() if now is None else now
        recent = sum(1 for at in list(self._recent) if at > now - 60)
        return replace(self, _recent=deque(), history=deque(), batches_last_minute=recent,
                       offsets_behind_latest=offsets_behind(query),
                       task_errors={t: replace(c) for t, c in list(self.task_errors.items())},
                       tasks={t: replace(p, history=deque(list(p.history)))
                              for t, p in list(self.tasks.items())})


def offsets_behind(query: Any) -> float | None:
    """``maxOffsetsBehindLatest`` of the query's Kafka sources in its last progress (Spark's own metric), or None."""
    try:
        last = None if query is None else query.lastProgress
        if last is None:
            return None
        data = json.loads(last.json) if hasattr(last, "json") else last
        behind = [float(m["maxOffsetsBehindLatest"]) for m in ((s.get("metrics") or {}) for s in data["sources"])
                  if m.get("maxOffsetsBehindLatest") not in (None, "")]
        return max(behind) if behind else None
    except Exception:  # a query that just stopped, or a py4j hiccup: no figure this scrape
        log.debug("No lag for query %s", query, exc_info=True)
        return None
