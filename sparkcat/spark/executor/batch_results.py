"""What each executor task reports for one micro-batch, and how the driver merges it into a ``BatchResult``.

Every handler writes on executors through ``mapInArrow``; each Spark partition yields one small
row per connector task (``RESULT_SCHEMA``: records, last offset per source partition, and the error
handling counts of ``error_handling.RecordErrors``) that the handler collects and merges
(``batch_result``). Also here: the batch ids sinks see (``sink_batch_id``), the executor's
``worker_id``, and errors blamed on their task.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import time
from collections.abc import Callable
from typing import Any

from pyspark.sql import DataFrame

from sparkcat.errors import ConnectorError
from sparkcat.model.error_metrics import ErrorCounts
from sparkcat.spark.query_plan import TASK_FAILURE_MARK, BatchResult, TaskBatchResult, task_failure_message
from sparkcat.storage.offsets import partition_key

__all__ = ["Handler", "RESULT_SCHEMA", "Tally", "Tallies", "result_batch", "batch_result", "columns",
           "raise_task_error", "worker_id", "checkpoint_created_ms", "sink_batch_id", "SinkBatchIds"]

log = logging.getLogger(__name__)

Handler = Callable[[DataFrame, int], BatchResult]
RESULT_SCHEMA = "task INT, worker_id STRING, records BIGINT, offsets STRING, errors STRING"


def worker_id() -> str:
    """``host:executor-id`` of the executor running this Spark task (``host:driver`` in local mode)."""
    global _EXECUTOR_ID
    if _EXECUTOR_ID is None:
        _EXECUTOR_ID = executor_id_of(os.getpid()) or "driver"
    return f"{socket.gethostname()}:{_EXECUTOR_ID}"


_EXECUTOR_ID: str | None = None


def executor_id_of(pid: int, generations: int = 3) -> str | None:
    """The ``--executor-id`` of the executor JVM above Python process ``pid``, or None (local mode, not Linux).

    Spark tells a Python worker neither its executor id nor a local property with it (verified on a
    standalone cluster: ``TaskContext.getLocalProperty("spark.executor.id")`` is None). Every cluster
    manager starts its executor backend (``CoarseGrainedExecutorBackend``, YARN's and Kubernetes'
    subclasses) with ``--executor-id N``; the Python worker is its child or, through
    ``pyspark.daemon``, its grandchild.
    """
    for _ in range(generations):
        try:
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])  # field 4, after the "(comm)"
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = f.read().decode(errors="replace").split("\0")
        except (OSError, ValueError, IndexError):
            return None
        if "--executor-id" in args:
            i = args.index("--executor-id")
            return args[i + 1] if i + 1 < len(args) else None
    return None


# ---------------------------------------------------------------- sink batch ids


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


# ---------------------------------------------------------------- tallies (executors)


class Tally:
    """What one task did in one Spark partition: record count and last offset per source partition."""

    def __init__(self) -> None:
        self.records = 0
        self.offsets: dict[str, tuple[Any, Any]] = {}

    def add(self, key: str, partition: Any, offset: Any) -> None:
        self.records += 1
        self.offsets[key] = (partition, offset)

    def decoded(self) -> Tally:
        """The tally with partition and offset JSON texts (as they come in rows) parsed."""
        self.offsets = {k: (json.loads(p), json.loads(o)) for k, (p, o) in self.offsets.items()}
        return self


class Tallies(dict):
    """Tallies by task id; ``current`` is the task of the row being handled (to blame for an error)."""

    current: int | None = None

    def of(self, task: int) -> Tally:
        self.current = task
        return self.setdefault(task, Tally())


def result_batch(tallies: dict[int, Tally], errors: dict[int, ErrorCounts] | None = None) -> Any:
    """The per-task result rows of one Spark partition as an Arrow batch of ``RESULT_SCHEMA``.

    ``errors``: the error handling counts of each task (``RecordErrors.counts``), JSON in ``errors``.
    """
    import pyarrow as pa
    wid = worker_id()
    errors = errors or {}
    tasks = sorted(set(tallies) | set(errors))
    empty = Tally()
    return pa.RecordBatch.from_arrays([
        pa.array(tasks, pa.int32()),
        pa.array([wid] * len(tasks), pa.string()),
        pa.array([tallies.get(t, empty).records for t in tasks], pa.int64()),
        pa.array([json.dumps(list(tallies.get(t, empty).offsets.values()), separators=(",", ":")) for t in tasks],
                 pa.string()),
        pa.array([errors[t].to_json() if t in errors else None for t in tasks], pa.string()),
    ], names=["task", "worker_id", "records", "offsets", "errors"])


def raise_task_error(connector: str, task: int | None, error: Exception) -> None:
    """Re-raise an executor error naming its task when known (the herder parses the query's exception)."""
    if task is None or TASK_FAILURE_MARK in str(error):
        raise error
    raise RuntimeError(task_failure_message(connector, task, error)) from error


def _pylist(column: Any) -> list[Any]:
    """One Arrow column as a Python list; an all-null column, or a string column holding one value (the
    topic of a sink's rows, mostly), without converting each value."""
    import pyarrow as pa
    import pyarrow.compute as pc
    n = len(column)
    if column.null_count == n:
        return [None] * n
    if n > 1 and not column.null_count and pa.types.is_string(column.type) \
            and pc.count_distinct(column).as_py() == 1:
        return [column[0].as_py()] * n
    return column.to_pylist(maps_as_pydicts="lossy")


def columns(batch: Any) -> dict[str, list[Any]]:
    """An Arrow batch as Python column lists (structs as dicts, maps as dicts)."""
    return {name: _pylist(batch.column(i)) for i, name in enumerate(batch.schema.names)}


# ---------------------------------------------------------------- merging (driver)


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
        tasks[row.task] = TaskBatchResult(row.task, row.worker_id, records, [], errors)
    for t, result in tasks.items():
        result.offsets = list(merged[t].values())
    return BatchResult(connector, batch_id, tasks, time.monotonic() - started)
