"""The driver's half of a micro-batch's report: the executors' result rows merged into a ``BatchResult``, and
the batch ids sinks see (``sink_batch_id``, from the checkpoint's creation time read through the JVM).

The rows come from ``sparkcat.spark.executor.batch_results`` (``RESULT_SCHEMA``).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import Any

from pyspark.sql import DataFrame

from sparkcat.errors import ConnectorError
from sparkcat.model.error_metrics import ErrorCounts
from sparkcat.spark.query_plan import BatchResult, TaskBatchResult
from sparkcat.storage.offsets import partition_key

__all__ = ["Handler", "batch_result", "checkpoint_created_ms", "sink_batch_id", "SinkBatchIds"]

log = logging.getLogger(__name__)

#: A foreachBatch handler: writes one micro-batch (its writing on executors) and reports it.
Handler = Callable[[DataFrame, int], BatchResult]


def checkpoint_created_ms(spark: Any, checkpoint_dir: str) -> int | None:
    """When the query's checkpoint was created (its ``metadata`` file, written once), via Hadoop FS."""
    try:
        jvm, jsc = spark.sparkContext._jvm, spark.sparkContext._jsc
        path = jvm.org.apache.hadoop.fs.Path(checkpoint_dir.rstrip("/") + "/metadata")
        return int(path.getFileSystem(jsc.hadoopConfiguration()).getFileStatus(path).getModificationTime())
    except Exception as e:  # no JVM access (Spark Connect) or no metadata file
        log.warning("Cannot read the creation time of checkpoint %s (%s); sinks get raw batch ids", checkpoint_dir, e)
        return None


def sink_batch_id(created_ms: int | None, batch_id: int) -> int:
    """The batch id sink tasks see: monotonic across fresh checkpoints, stable across replays.

    Spark restarts batch ids at 0 with a fresh checkpoint, and a sink that remembers the last
    batch it committed would then skip new batches; ``created_ms * 1000 + batch_id`` does not.

    >>> sink_batch_id(1_700_000_000_000, 7), sink_batch_id(None, 7)
    (1700000000000007, 7)
    """
    return batch_id if created_ms is None else created_ms * 1000 + batch_id


class SinkBatchIds:
    """A query's ``sink_batch_id`` of each batch; the checkpoint's creation time is read on the first batch.

    ``required``: why the sink cannot do with raw batch ids; then an unreadable creation time
    raises ConnectorError (and is asked again next batch) instead of falling back to them.
    """

    def __init__(self, checkpoint_dir: str, required: str | None = None) -> None:
        self.checkpoint_dir, self.required = checkpoint_dir, required
        self._created: list[int | None] = []

    def __call__(self, spark: Any, batch_id: int) -> int:
        if not self._created:
            ms = checkpoint_created_ms(spark, self.checkpoint_dir)
            if ms is None and self.required:
                raise ConnectorError(f"cannot read when checkpoint {self.checkpoint_dir} was created; {self.required}")
            self._created.append(ms)
        return sink_batch_id(self._created[0], batch_id)


def batch_result(connector: str, batch_id: int, rows: list[Any], started: float) -> BatchResult:
    """Merge the collected result rows (several rows of one task add up) into a BatchResult."""
    tasks: dict[int, TaskBatchResult] = {}
    merged: dict[int, dict[str, tuple[dict[str, Any], Any]]] = {}
    for row in rows:
        prev = tasks.get(row.task)
        offsets = merged.setdefault(row.task, {})
        offsets.update({partition_key(p): (p, o) for p, o in json.loads(row.offsets)})
        records = row.records + (prev.records if prev else 0)
        errors = prev.errors if prev else None
        counts = ErrorCounts.of_json(getattr(row, "errors", None))
        if counts is not None:
            errors = errors or ErrorCounts()
            errors.add(counts)
        topics = sorted(set(prev.topics if prev else []) | set(json.loads(getattr(row, "topics", None) or "[]")))
        tasks[row.task] = TaskBatchResult(row.task, row.worker_id, records, [], errors, topics)
    for t, result in tasks.items():
        result.offsets = list(merged[t].values())
    return BatchResult(connector, batch_id, tasks, time.monotonic() - started)
