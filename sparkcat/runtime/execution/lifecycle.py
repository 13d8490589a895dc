"""What the herder knows about one connector it runs: its instance, task configs, query and failures."""

from __future__ import annotations

import json
import logging
import time
from collections import deque
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from sparkcat.api.connector import Connector
from sparkcat.model.error_metrics import ErrorCounts
from sparkcat.config.connector import ConnectorSettings, connector_settings
from sparkcat.runtime.execution.query_runner import RunningQuery
from sparkcat.runtime.execution.recovery import AutoRestart, Retries
from sparkcat.spark.query_plan import tp_key
from sparkcat.spark.query_plan import BatchResult

log = logging.getLogger(__name__)

#: Texts in a task's trace that mean one record failed it (``spark.error_handling``, ``spark.source_sends``).
RECORD_FAILURE_MARKERS = ("Tolerance exceeded in error handler", "Unrecoverable exception from producer send callback")
#: The text of a dead letter that Kafka did not take (``kafka.dead_letter_queue``).
DEAD_LETTER_FAILURE_MARKER = "Could not produce message to dead letter queue"


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
    # exactly-once batches: how many, and the sum of each one's slowest task's producer init + commit
    transaction_batches: int = 0
    transaction_ms: float = 0.0
    # Connect's error handling metrics of each task that committed a batch (zeros until a record fails)
    task_errors: dict[int, ErrorCounts] = field(default_factory=dict)

    @property
    def transaction_s(self) -> float:
        return self.transaction_ms / 1000

    def add(self, result: BatchResult, now: float | None = None) -> None:
        self.batches += 1
        self.records += result.records
        self.last_batch_s = result.duration_s
        self.last_batch_at = time.time() if now is None else now
        self._recent.append(self.last_batch_at)
        if result.transaction_ms is not None:
            self.transaction_batches += 1
            self.transaction_ms += result.transaction_ms
        for task in result.tasks.values():
            counts = self.task_errors.setdefault(task.task, ErrorCounts())
            if task.errors is not None:
                counts.add(task.errors)

    def task_failed(self, task: int, trace: str, now: float | None = None) -> None:
        """Count the record error that failed ``task``, if its trace says one did.

        Counts travel with committed batches, so the failure that fails a batch is counted here, from
        the trace: a record beyond ``errors.tolerance`` or refused by Kafka (a failure and an error, as
        Connect counts it before the task fails), or a dead letter that could not be delivered.
        """
        record = int(any(marker in trace for marker in RECORD_FAILURE_MARKERS))
        dead_letter = int(DEAD_LETTER_FAILURE_MARKER in trace)
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
        return replace(self, _recent=deque(), batches_last_minute=recent, offsets_behind_latest=offsets_behind(query),
                       task_errors={t: replace(c) for t, c in list(self.task_errors.items())})


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


@dataclass
class ConnectorRuntime:
    """Driver-side state of one connector; observed state only (targets live in the config log)."""

    name: str
    config: dict[str, str]
    instance: Connector | None = None
    desired_task_configs: list[dict[str, str]] | None = None
    query: RunningQuery | None = None
    failed_tasks: dict[int, str] = field(default_factory=dict)
    failed: str | None = None           # the connector itself failed (trace)
    task_workers: dict[int, str] = field(default_factory=dict)
    last_restart_offset: int = -1
    progress: Progress = field(default_factory=Progress)
    sink: tuple[str, str, list[dict[str, str]]] | None = None   # embedded sink: class, task class, configs
    sink_offsets: dict[str, tuple[dict, dict]] = field(default_factory=dict)
    retries: Retries = field(default_factory=Retries)               # transient failures of its query
    auto_restart: AutoRestart = field(default_factory=AutoRestart)  # Strimzi's auto-restart bookkeeping

    @cached_property
    def settings(self) -> ConnectorSettings:
        """``config``'s framework settings, parsed on first use (after the config was validated); a changed
        config gets a new runtime, so they never go stale."""
        return connector_settings(self.config)

    def set_sink_offset(self, partition: dict, offset: Any) -> None:
        """Remember where the sink's query is in one Kafka partition (offset None: forget it)."""
        key = tp_key(partition.get("kafka_topic"), partition.get("kafka_partition"))
        if offset is None:
            self.sink_offsets.pop(key, None)
        else:
            self.sink_offsets[key] = (partition, offset)

    def stop_instance(self) -> None:
        if self.instance is not None:
            try:
                self.instance.stop()
            finally:
                self.instance = None
                self.desired_task_configs = None
