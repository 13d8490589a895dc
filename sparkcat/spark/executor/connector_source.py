"""A source connector's tasks as the partitions of one stream: its planning and its reading.

Offsets are ``{"offsets": {partition_key: source offset or null}}`` over every source partition of
every task, so they do not depend on which task owns a partition (``tasks.max`` may change under the
same checkpoint).

Where things run:

- ``ConnectorStreamReader`` plans (``initialOffset``, ``latestOffset``, ``partitions``) in the driver's
  own Python process, called by sparkcat's JVM stream through py4j (``planned_source``). Driver-side
  task instances (``partitions``, ``latest_offsets``, ``advance``) are cached for the life of the query.
- ``read_task_ranges`` runs on executors: everything it needs travels inside the pickled ``TaskRanges``.
- After a restart with the same checkpoint an uncommitted batch is replayed through
  ``partitions(start, end)`` without ``initialOffset``, so the ranges are computed
  from ``start``/``end`` and the current plan only.

Rows: ``_task INT, _partition STRING, _offset STRING, topic STRING, key STRING,
value <task value schema>, timestamp_ms BIGINT, headers ARRAY<STRUCT<key STRING, value BINARY>>``
(``_partition`` is the partition key, ``_offset`` and ``key`` are JSON; ``headers`` as Spark's
Kafka source has them, so the record's headers reach Kafka or the sink).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from typing import Any

from pyspark.sql.datasource import InputPartition
from pyspark.sql.streaming.datasource import ReadLimit, ReadMaxRows
from pyspark.sql.types import DataType, StructType

from sparkcat.api.connector import SourceTask
from sparkcat.api.records import SourceRecord
from sparkcat.plugins import load_class
from sparkcat.policy.input_policy import prepare
from sparkcat.spark.query_plan import QueryPlan, task_failure_message
from sparkcat.storage.offsets import partition_key
from sparkcat.converters import SimpleHeaderConverter
from sparkcat.transforms import HEADERS_DDL

__all__ = ["ConnectorStreamReader", "TaskRanges", "row_schema_ddl", "value_type_ddl", "read_task_ranges",
           "task_value_schema"]

log = logging.getLogger(__name__)

OFFSETS = "offsets"
ROWS_PER_ARROW_BATCH = 10_000
_MISSING = object()
_OFFSET_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":")).encode
_KEY_JSON = json.JSONEncoder(separators=(",", ":")).encode
_header_bytes = SimpleHeaderConverter().to_bytes
_TYPE_LEADS = re.compile(r"^\s*(struct|array|map)\s*<", re.IGNORECASE)


def value_type_ddl(value_schema: str | DataType) -> str:
    """The DDL type of a task's value: a field list like ``"a BIGINT, b STRING"`` becomes a STRUCT."""
    if isinstance(value_schema, DataType):
        return value_schema.simpleString()
    text = str(value_schema).strip()
    if _TYPE_LEADS.match(text) or not re.search(r"\s", _top_level(text)):
        return text
    return f"STRUCT<{text}>"


def _top_level(text: str) -> str:
    """``text`` without anything nested in brackets, to tell ``DECIMAL(10, 2)`` from a field list."""
    out, depth = [], 0
    for ch in text:
        depth += ch in "(<"
        if depth == 0:
            out.append(ch)
        depth -= ch in ")>"
    return "".join(out)


def row_schema_ddl(value_schema: str | DataType) -> str:
    """The DDL of the rows this source produces for a task value schema."""
    return (f"_task INT, _partition STRING, _offset STRING, topic STRING, key STRING, "
            f"value {value_type_ddl(value_schema)}, timestamp_ms BIGINT, headers {HEADERS_DDL}")


def _new_task(plan_task_class: str) -> SourceTask:
    return load_class(plan_task_class)()


def task_value_schema(plan: QueryPlan) -> str | DataType:
    """The value schema, asked of a started driver-side task (the first task not excluded)."""
    live = plan.live_tasks
    task_id = live[0] if live else 0
    task = _new_task(plan.task_class)
    started = False
    try:
        if live:
            task.start(prepare(plan.task_configs[task_id]))
            started = True
        return task.value_schema()
    except Exception as e:
        raise RuntimeError(task_failure_message(plan.connector, task_id, e)) from e
    finally:
        if started:
            _stop_quietly(task, plan.connector, task_id)


def _stop_quietly(task: SourceTask, connector: str, task_id: int) -> None:
    """Stop a task; a failing stop is logged, not raised (the work is done or already failed)."""
    try:
        task.stop()
    except Exception:
        log.warning("Stopping task %s-%d failed", connector, task_id, exc_info=True)


class TaskRanges(InputPartition):
    """One task's share of a micro-batch: ``ranges`` are ``(source partition, start, end)``."""

    def __init__(self, task: int, task_class: str, task_config: dict[str, str],
                 ranges: list[tuple[dict[str, Any], Any, Any]], connector: str, value_ddl: str,
                 schema: StructType) -> None:
        super().__init__(task)
        self.task = task
        self.task_class = task_class
        self.task_config = task_config
        self.ranges = ranges
        self.connector = connector
        self.value_ddl = value_ddl
        self.schema = schema


class _DriverTasks:
    """Driver-side task instances of one query, started on first use; failures name the task."""

    def __init__(self, plan: QueryPlan) -> None:
        self.plan = plan
        self._tasks: dict[int, SourceTask] = {}
        self._partitions: dict[int, list[dict[str, Any]]] = {}

    def _call(self, task_id: int, method: str, *args: Any) -> Any:
        """Call ``method`` on task ``task_id``, raising task_failure_message on any error."""
        try:
            task = self._tasks.get(task_id)
            if task is None:
                task = _new_task(self.plan.task_class)
                task.start(prepare(self.plan.task_configs[task_id]))
                self._tasks[task_id] = task
            return getattr(task, method)(*args)
        except Exception as e:
            raise RuntimeError(task_failure_message(self.plan.connector, task_id, e)) from e

    def partitions(self, task_id: int) -> list[dict[str, Any]]:
        """The task's source partitions (asked once: they are fixed by its config)."""
        if task_id not in self._partitions:
            self._partitions[task_id] = list(self._call(task_id, "partitions"))
        return self._partitions[task_id]

    def latest_offsets(self, task_id: int, current: dict[str, Any]) -> dict[str, Any]:
        return self._call(task_id, "latest_offsets", current)

    def advance(self, task_id: int, partition: dict[str, Any], start: Any, end: Any, budget: int) -> Any:
        return self._call(task_id, "advance", partition, start, end, budget)

    def stop(self) -> None:
        for task_id, task in self._tasks.items():
            _stop_quietly(task, self.plan.connector, task_id)
        self._tasks.clear()


class ConnectorStreamReader:
    """Plans a connector's micro-batches on the driver (``read_task_ranges`` runs its tasks on executors)."""

    def __init__(self, plan: QueryPlan, schema: StructType, store: Any = None) -> None:
        """``store``: the driver's open offsets store (else one is opened from the plan, and closed at ``stop``)."""
        self.plan = plan
        self.schema = schema
        self.value_ddl = schema["value"].dataType.simpleString()
        self.excluded = set(plan.excluded_tasks)
        self.tasks = _DriverTasks(plan)
        self._store = store
        self._own_store = store is None
        self._latest: dict[str, Any] | None = None

    # ---- offsets store

    def _stored(self) -> dict[str, Any]:
        """Committed offsets of this connector in the offsets store, by partition key.

        Read once every transaction open in the store now has ended: an exactly-once task's
        offsets may sit behind another connector's open transaction on the one partition.
        """
        if not self.plan.offsets_store:
            return {}
        if self._store is None:
            from sparkcat.storage.factory import open_offsets_store
            self._store = open_offsets_store(self.plan.offsets_store)
        return self._store.get(self.plan.connector, stable=True)

    def _all_keys(self) -> list[tuple[int, dict[str, Any], str]]:
        """(task, partition, key) for every partition of every task of the plan."""
        return [(t, p, partition_key(p)) for t in range(len(self.plan.task_configs))
                for p in self.tasks.partitions(t)]

    # ---- planning

    def initialOffset(self) -> dict:
        """Every partition at its stored offset (None when never committed); called twice, so deterministic."""
        stored = self._stored()
        return {OFFSETS: dict(sorted((k, stored.get(k)) for _, _, k in self._all_keys()))}

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadMaxRows(self.plan.batch_max_records)

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        """How far each partition may go this batch, at most ``batch_max_records`` records per task."""
        current: dict[str, Any] = dict(start.get(OFFSETS, {}))
        out = dict(current)
        keys = self._all_keys()
        new = {k for _, _, k in keys if k not in current}
        frozen = {k for t, _, k in keys if t in self.excluded and k in current}
        if new or frozen:
            # New partitions (a changed task config under the same checkpoint) join at their stored
            # offset; excluded (failed) tasks go back to theirs, which is where their last good batch
            # ended: a replayed batch that was planned before the exclusion skipped their ranges.
            stored = self._stored()
            out.update({k: stored.get(k) for k in new})
            out.update({k: stored.get(k, current[k]) for k in frozen})
        pinned = new | frozen
        budget = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        latest_seen: dict[str, Any] = {}
        for t in range(len(self.plan.task_configs)):
            owned = [(p, k) for tt, p, k in keys if tt == t and k not in pinned]
            if owned:
                latest_seen.update(self._advance_task(t, owned, current, out, budget))
        self._latest = {OFFSETS: dict(sorted({**out, **latest_seen}.items()))}
        return {OFFSETS: dict(sorted(out.items()))}

    def _advance_task(self, t: int, owned: list[tuple[dict[str, Any], str]], current: dict[str, Any],
                      out: dict[str, Any], budget: int | None) -> dict[str, Any]:
        """Move task ``t``'s partitions in ``out`` towards their latest offsets; returns those."""
        latest = self.tasks.latest_offsets(t, {k: current[k] for _, k in owned})
        share = None if budget is None else max(1, budget // len(owned))
        for partition, k in owned:
            if k not in latest:
                continue
            end = latest[k] if share is None else self.tasks.advance(t, partition, current[k], latest[k], share)
            out[k] = end
        return latest

    def reportLatestOffset(self) -> dict | None:
        """The newest offsets the tasks reported (before admission control), for query progress."""
        return self._latest

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        """One ``TaskRanges`` per task with a changed offset, grouped by the current task configs."""
        starts, ends = start.get(OFFSETS, {}), end.get(OFFSETS, {})
        out: list[InputPartition] = []
        for t in range(len(self.plan.task_configs)):
            if t in self.excluded:
                continue
            ranges = []
            for p in self.tasks.partitions(t):
                k = partition_key(p)
                s, e = starts.get(k, _MISSING), ends.get(k, _MISSING)
                if s is not _MISSING and e is not _MISSING and s != e:
                    ranges.append((p, s, e))
            if ranges:
                out.append(TaskRanges(t, self.plan.task_class, self.plan.task_configs[t], ranges,
                                      self.plan.connector, self.value_ddl, self.schema))
        return out

    def commit(self, end: dict) -> None:
        """Nothing: the herder writes offsets from each BatchResult (``commit(end)`` lags one batch: it runs
        when the *next* batch is planned), as soon as the batch's records are written."""

    def stop(self) -> None:
        self.tasks.stop()
        if self._store is not None and self._own_store:
            self._store.close()
            self._store = None


# ---------------------------------------------------------------- executor side


class _Columns:
    """Rows of one task in column lists, turned into Arrow record batches of the exact schema."""

    def __init__(self, task: int, schema: StructType) -> None:
        from pyspark.sql.pandas.types import to_arrow_schema
        self.task = task
        self.arrow_schema = to_arrow_schema(schema, timezone="UTC")
        self.names = [f.name for f in schema.fields]
        self.clear()

    def clear(self) -> None:
        self.cols: list[list[Any]] = [[] for _ in self.names]

    def __len__(self) -> int:
        return len(self.cols[0])

    def add(self, pkey: str, record: SourceRecord) -> None:
        value = record.value.asDict(recursive=True) if hasattr(record.value, "asDict") else record.value
        row = (self.task, pkey, _OFFSET_JSON(record.source_offset), record.topic,
               None if record.key is None else _KEY_JSON(record.key), value, record.timestamp_ms,
               [{"key": k, "value": _header_bytes(v)} for k, v in record.headers] if record.headers else None)
        for col, v in zip(self.cols, row):
            col.append(v)

    def flush(self) -> Any:
        import pyarrow as pa
        arrays = [pa.array(col, type=f.type) for col, f in zip(self.cols, self.arrow_schema)]
        self.clear()
        return pa.RecordBatch.from_arrays(arrays, schema=self.arrow_schema)


def read_task_ranges(part: TaskRanges) -> Iterator[Any]:
    """Executor: run the task's ``poll`` over each range, yielding Arrow batches; errors name the task."""
    task = None
    try:
        task = _new_task(part.task_class)
        task.start(prepare(part.task_config))  # resolved and checked where it starts
        rows = _Columns(part.task, part.schema)
        for partition, start, end in part.ranges:
            pkey = partition_key(partition)
            for record in task.poll(partition, start, end):
                same = record.source_partition is partition or record.source_partition == partition
                rows.add(pkey if same else partition_key(record.source_partition), record)
                if len(rows) >= ROWS_PER_ARROW_BATCH:
                    yield rows.flush()
        if len(rows):
            yield rows.flush()
    except Exception as e:
        raise RuntimeError(task_failure_message(part.connector, part.task, e)) from e
    finally:
        if task is not None:
            _stop_quietly(task, part.connector, part.task)
