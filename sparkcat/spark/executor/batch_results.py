"""What each executor task reports for one micro-batch: one small row per connector task (``RESULT_SCHEMA``).

Runs in Spark's Python workers, inside every handler's ``mapInArrow`` function: ``Tally``/``Tallies`` count
records and last positions per task, ``result_batch`` makes the Arrow rows the driver merges
(``sparkcat.spark.driver.batch_reports``), ``raise_task_error`` blames an error on its task, ``worker_id``
names the executor. ``tally_source`` and ``tally_kafka`` tally a batch writer's input.
"""

from __future__ import annotations

import json
import logging
import os
import socket
from collections.abc import Iterator
from typing import Any

from sparkcat.model.error_metrics import ErrorCounts
from sparkcat.spark.query_plan import TASK_FAILURE_MARK, sink_position, task_failure_message, tp_key

__all__ = ["RESULT_SCHEMA", "SOURCE_RESULT_SCHEMA", "Tally", "Tallies", "result_batch", "columns", "raise_task_error", "worker_id",
           "tally_source", "tally_kafka"]

log = logging.getLogger(__name__)

RESULT_SCHEMA = "task INT, worker_id STRING, records BIGINT, offsets STRING, errors STRING"
#: A source task producing to Kafka also reports the topics it sent to (a JSON list; KIP-558's active topics).
SOURCE_RESULT_SCHEMA = RESULT_SCHEMA + ", topics STRING"


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


def result_batch(tallies: dict[int, Tally], errors: dict[int, ErrorCounts] | None = None,
                 topics: dict[int, list[str]] | None = None) -> Any:
    """The per-task result rows of one Spark partition as an Arrow batch of ``RESULT_SCHEMA``.

    ``errors``: the error handling counts of each task (``RecordErrors.counts``), JSON in ``errors``.
    ``topics``: the topics each task sent to, for ``SOURCE_RESULT_SCHEMA`` (a JSON list in ``topics``).
    """
    import pyarrow as pa
    wid = worker_id()
    errors = errors or {}
    tasks = sorted(set(tallies) | set(errors))
    empty = Tally()
    arrays = [
        pa.array(tasks, pa.int32()),
        pa.array([wid] * len(tasks), pa.string()),
        pa.array([tallies.get(t, empty).records for t in tasks], pa.int64()),
        pa.array([json.dumps(list(tallies.get(t, empty).offsets.values()), separators=(",", ":")) for t in tasks],
                 pa.string()),
        pa.array([errors[t].to_json() if t in errors else None for t in tasks], pa.string()),
    ]
    names = ["task", "worker_id", "records", "offsets", "errors"]
    if topics is not None:
        arrays.append(pa.array([json.dumps(topics.get(t, [])) for t in tasks], pa.string()))
        names.append("topics")
    return pa.RecordBatch.from_arrays(arrays, names=names)


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


# ---------------------------------------------------------------- tallies of a batch writer's input


def _grouped(batches: Iterator[Any], keys: list[str], column: str, last: str) -> Iterator[dict[str, Any]]:
    """Executor: each non-empty Arrow batch grouped by ``keys``, with ``column``'s count and ``last`` value."""
    import pyarrow as pa
    for batch in batches:
        if batch.num_rows:
            table = pa.Table.from_batches([batch]).select([*keys, column])
            yield from table.group_by(keys, use_threads=False).aggregate([(column, last), (column, "count")]) \
                .to_pylist()


def tally_source(batches: Iterator[Any]) -> Iterator[Any]:
    """Executor: per task, how many records and the last offset of each source partition (row order)."""
    tallies: dict[int, Tally] = {}
    for row in _grouped(batches, ["_task", "_partition"], "_offset", "last"):
        tally = tallies.setdefault(row["_task"], Tally())
        tally.records += row["_offset_count"]
        tally.offsets[row["_partition"]] = (row["_partition"], row["_offset_last"])
    if tallies:
        yield result_batch({t: tally.decoded() for t, tally in tallies.items()})


def tally_kafka(batches: Iterator[Any]) -> Iterator[Any]:
    """Executor: per task, how many records and the next offset to read of each topic-partition."""
    tallies: dict[int, Tally] = {}
    for row in _grouped(batches, ["_task", "topic", "partition"], "offset", "max"):
        tally = tallies.setdefault(row["_task"], Tally())
        key = tp_key(row["topic"], row["partition"])
        tally.records += row["offset_count"]
        previous = tally.offsets.get(key, (None, {"kafka_offset": -1}))[1]["kafka_offset"]
        tally.offsets[key] = sink_position(row["topic"], row["partition"], max(previous, row["offset_max"] + 1))
    if tallies:
        yield result_batch(tallies)
