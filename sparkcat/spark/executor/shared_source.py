"""Many source connectors' tasks in one Spark job: each ``(connector, task)`` read and produced to Kafka.

(Its result rows, ``labelled`` and ``failure_row``, are a shared sink query's too: ``shared_sink``.)

The ``mapInArrow`` function of a shared source query (``sparkcat.spark.driver.shared_sources``). Every row
of the batch holds several connector tasks' ``TaskRanges`` (``GroupPlanner.planPartitions`` deals them over a
few Spark partitions), run in turn; each task's records are read (``connector_source``) and produced exactly as
a query of its own would (``source_to_kafka`` at least once, ``source_txn`` exactly once). A task
that fails reports its trace in a ``failure`` row instead of failing the Spark job: the other connectors of
the batch still commit, and only its own connector fails (the driver reads the row).
"""

from __future__ import annotations

import pickle
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from pyspark.sql.types import DataType

from sparkcat.kafka.producers import LeaderLease
from sparkcat.spark.executor.batch_results import worker_id
from sparkcat.spark.executor.connector_source import TaskRanges, read_task_ranges
from sparkcat.spark.executor.source_to_kafka import produce_partition
from sparkcat.spark.executor.source_txn import EOS_RESULT_SCHEMA, produce_task_batch
from sparkcat.spark.query_plan import QueryPlan

__all__ = ["MemberWrite", "SHARED_RESULT_SCHEMA", "SLOW_MARK", "produce_members", "member_tasks", "run_bounded", "labelled",
           "failure_row"]

#: One row per connector task and Spark partition: ``EOS_RESULT_SCHEMA`` (``skipped``/``transaction_ms`` null
#: at least once), its connector, the task's trace when it failed, and how long the task took.
SHARED_RESULT_SCHEMA = EOS_RESULT_SCHEMA + ", connector STRING, failure STRING, elapsed_ms DOUBLE"
_SHARED_NAMES = [column.split()[0] for column in SHARED_RESULT_SCHEMA.split(", ")]


@dataclass
class MemberWrite:
    """What the executors need to write one member connector's share of a batch (pickled with the function)."""

    plan: QueryPlan
    conf: dict[str, str]          # producer settings (``source_to_kafka.producer_config``)
    value_type: DataType
    replay: bool = False          # exactly once: its first batch in this query, which may have committed before


#: A ``failure`` that is not one: the task was still running at the bound (``run_bounded``), and its connector
#: leaves the shared query for one of its own.
SLOW_MARK = "sparkcat shared task too slow:"


def run_bounded(work: Callable[[], list[Any]], connector: str, task: int, bound_s: float) -> Iterator[Any]:
    """Executor: ``work``'s result rows, labelled, or its failure's, or a ``SLOW_MARK`` row when it is still
    running after ``bound_s``: then it is left to finish in its thread and its results are dropped (its connector
    starts again from its stored offsets, alone: at least once; an exactly-once task's transaction carries its
    offsets, or is fenced by the new start), so one stuck task holds a shared batch back ``bound_s`` at most."""
    began = time.monotonic()
    done: list[Any] = []

    def run() -> None:
        try:
            done.append(("ok", work()))
        except Exception:  # the connector's task failed: reported, not raised (the other connectors commit)
            done.append(("failed", traceback.format_exc()))

    worker = threading.Thread(target=run, name=f"sparkcat-{connector}-{task}", daemon=True)
    worker.start()
    worker.join(bound_s)
    elapsed = _ms_since(began)
    if not done:
        yield failure_row(connector, task, f"{SLOW_MARK} still running after {bound_s:.1f} s", elapsed)
        return
    kind, value = done[0]
    if kind == "failed":
        yield failure_row(connector, task, value, elapsed)
        return
    for result in value:
        yield labelled(result, connector, elapsed)


def produce_members(writes: dict[str, MemberWrite], batch_id: int, lease: LeaderLease | None,
                    batches: Iterator[Any], bound_s: float) -> Iterator[Any]:
    """Executor: each ``(task, payload)`` row's task read and produced; rows of connectors not in ``writes``
    (they left the query after the batch was planned) are skipped: they restart from their stored offsets."""
    for write, part in member_tasks(writes, batches):
        yield from run_bounded(lambda w=write, p=part: _produce_task(w, p, batch_id, lease),
                               part.connector, part.task, bound_s)


def member_tasks(writes: dict[str, Any], batches: Iterator[Any]) -> Iterator[tuple[Any, Any]]:
    """Executor: ``(its connector's write, task)`` of each task in a shared batch's rows (each row several
    connectors' tasks, run in turn), skipping connectors not in ``writes``."""
    for batch in batches:
        for payload in batch.column(batch.schema.get_field_index("payload")).to_pylist():
            for part in pickle.loads(payload):
                write = writes.get(part.connector)
                if write is not None:
                    yield write, part


def _produce_task(write: MemberWrite, part: TaskRanges, batch_id: int, lease: LeaderLease | None) -> list[Any]:
    plan = write.plan
    rows = read_task_ranges(part)
    if plan.exactly_once:
        return list(produce_task_batch(plan, write.conf, write.value_type, write.replay, batch_id, lease, rows))
    return list(produce_partition(plan, write.conf, write.value_type, rows))


def _ms_since(began: float) -> float:
    return (time.monotonic() - began) * 1000


def labelled(result: Any, connector: str, elapsed_ms: float) -> Any:
    """A task's result rows with the shared schema's extra columns."""
    import pyarrow as pa
    n = result.num_rows
    columns = dict(zip(result.schema.names, result.columns))
    columns.setdefault("topics", pa.array([None] * n, pa.string()))  # a sink task's rows have none
    columns.setdefault("skipped", pa.array([False] * n))
    columns.setdefault("transaction_ms", pa.array([None] * n, pa.float64()))
    columns["connector"] = pa.array([connector] * n, pa.string())
    columns["failure"] = pa.array([None] * n, pa.string())
    columns["elapsed_ms"] = pa.array([elapsed_ms] * n, pa.float64())
    return pa.RecordBatch.from_arrays([columns[name] for name in _SHARED_NAMES], names=_SHARED_NAMES)


def failure_row(connector: str, task: int, trace: str, elapsed_ms: float) -> Any:
    """The row of a task that failed: its trace in ``failure``, nothing written."""
    import pyarrow as pa
    return pa.RecordBatch.from_arrays([
        pa.array([task], pa.int32()), pa.array([worker_id()]), pa.array([0], pa.int64()), pa.array(["[]"]),
        pa.array([None], pa.string()), pa.array([None], pa.string()), pa.array([False]),
        pa.array([None], pa.float64()), pa.array([connector]), pa.array([trace]), pa.array([elapsed_ms], pa.float64()),
    ], names=_SHARED_NAMES)
