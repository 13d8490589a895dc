"""What a committed micro-batch changes outside Spark: offsets, the sink's consumer group, statuses, counters.

``BatchAccounting.on_batch`` is the one call a query thread makes into the runtime (the query runner
is given this object when it is built). It writes only thread-safe things: the offsets store, the
group mirror's queue, the status store (a task's executor, a sink's topics) and the per-connector
``ConnectorBatches`` that the connector's lifecycle and ``GET /metrics`` read.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from typing import Any

from sparkcat.model.status import State
from sparkcat.runtime.execution import active_topics
from sparkcat.runtime.execution.progress import Progress
from sparkcat.runtime.execution.sink_groups import GroupMirror
from sparkcat.runtime.execution.status_reporter import StatusReporter
from sparkcat.spark.query_plan import tp_key
from sparkcat.spark.query_plan import BatchResult, QueryPlan
from sparkcat.storage.factory import Stores

log = logging.getLogger(__name__)


@dataclass
class ConnectorBatches:
    """One connector's committed batches on this driver: totals, each task's executor, a sink's positions."""

    progress: Progress = field(default_factory=Progress)
    task_workers: dict[int, str] = field(default_factory=dict)
    sink_offsets: dict[str, tuple[dict, Any]] = field(default_factory=dict)

    def set_sink_offset(self, partition: dict, offset: Any) -> None:
        """Remember where the sink's query is in one Kafka partition (offset None: forget it)."""
        key = tp_key(partition.get("kafka_topic"), partition.get("kafka_partition"))
        if offset is None:
            self.sink_offsets.pop(key, None)
        else:
            self.sink_offsets[key] = (partition, offset)


class BatchAccounting:
    """Records every committed batch of every connector query of this driver (called on query threads)."""

    def __init__(self, stores: Stores, reporter: StatusReporter, topic_tracking: bool = True):
        self.stores = stores
        self.reporter = reporter
        self.topic_tracking = topic_tracking  # the worker's topic.tracking.enable (KIP-558)
        self.group_mirror = GroupMirror()  # sinks' positions to their connect-NAME groups
        self._lock = threading.Lock()
        self._connectors: dict[str, ConnectorBatches] = {}

    def track(self, name: str) -> ConnectorBatches:
        """Fresh bookkeeping for a connector config this driver starts running."""
        batches = ConnectorBatches()
        with self._lock:
            self._connectors[name] = batches
        return batches

    def forget(self, name: str, batches: ConnectorBatches | None = None) -> None:
        """The connector is gone from this driver (``batches``: only if still those)."""
        with self._lock:
            if batches is None or self._connectors.get(name) is batches:
                self._connectors.pop(name, None)

    def of(self, name: str) -> ConnectorBatches | None:
        with self._lock:
            return self._connectors.get(name)

    def on_batch(self, plan: QueryPlan, result: BatchResult) -> None:
        """A batch was written by the sink: record offsets, executors and counters (query thread)."""
        offsets = [o for t in result.tasks.values() for o in t.offsets]
        if offsets and not plan.exactly_once and not result.positions_stored:  # else in each task's transaction
            # Written before returning: the batch is not committed by Spark until then, and a reader planning
            # around a failed task reads these. Sink connectors' positions go here too ({"kafka_topic",
            # "kafka_partition"} -> {"kafka_offset"}), so the offsets API and a fresh checkpoint see them.
            self.stores.offsets.put(plan.connector, offsets)
        if offsets and plan.connector_type == "sink":
            self.group_mirror.submit(plan, offsets)
            if self.topic_tracking:
                active_topics.record_sink_topics(self.stores.status, result)
        elif self.topic_tracking and plan.connector_type == "source":
            active_topics.record_source_topics(self.stores.status, result)
        batches = self.of(plan.connector)
        if batches is not None:
            self._count(plan, result, batches, offsets)
        txn = "" if result.transaction_ms is None else \
            f" (exactly once: {result.transaction_ms:.0f} ms of transactions)"
        log.info("Connector %s: batch %d committed with %d record(s) in %.2f s%s", plan.connector,
                 result.batch_id, result.records, result.duration_s, txn)

    def _count(self, plan: QueryPlan, result: BatchResult, batches: ConnectorBatches, offsets: list) -> None:
        batches.progress.add(result)
        if plan.connector_type == "sink":
            for partition, offset in offsets:
                batches.set_sink_offset(partition, offset)
        for t in result.tasks.values():
            if t.worker_id and batches.task_workers.get(t.task) != t.worker_id:  # "": no executor ran it (skipped)
                batches.task_workers[t.task] = t.worker_id
                self.reporter.task(plan.connector, t.task, State.RUNNING, t.worker_id)

    def close(self) -> None:
        self.group_mirror.close()
