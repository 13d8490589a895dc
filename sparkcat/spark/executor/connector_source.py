"""A source connector's tasks read on executors: ``read_task_ranges`` runs a task's ``poll`` over its ranges.

Runs in Spark's Python workers: everything a read needs travels inside the pickled ``TaskRanges``
(task class, config, ranges, row schema), which the driver's planner builds
(``sparkcat.spark.driver.connector_planning``).

Rows: ``_task INT, _partition STRING, _offset STRING, topic STRING, key STRING,
value <task value schema>, timestamp_ms BIGINT, headers ARRAY<STRUCT<key STRING, value BINARY>>``
(``_partition`` is the partition key, ``_offset`` and ``key`` are JSON; ``headers`` as Spark's
Kafka source has them, so the record's headers reach Kafka or the sink).
"""

from __future__ import annotations

import json
import logging
import pickle
import re
from collections.abc import Iterator
from typing import Any

from pyspark.sql.datasource import InputPartition
from pyspark.sql.types import DataType, StructType

from sparkcat.api.connector import SourceTask
from sparkcat.api.records import SourceRecord
from sparkcat.plugins import load_class
from sparkcat.policy.input_policy import prepare
from sparkcat.spark.query_plan import task_failure_message
from sparkcat.storage.offsets import partition_key
from sparkcat.converters import SimpleHeaderConverter
from sparkcat.transforms import HEADERS_DDL

__all__ = ["TaskRanges", "row_schema_ddl", "value_type_ddl", "read_task_ranges", "read_payloads", "new_source_task",
           "stop_quietly"]

log = logging.getLogger(__name__)

ROWS_PER_ARROW_BATCH = 10_000
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


def new_source_task(plan_task_class: str) -> SourceTask:
    """A new, unstarted instance of the ``module:Class`` source task."""
    return load_class(plan_task_class)()


def stop_quietly(task: SourceTask, connector: str, task_id: int) -> None:
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
        task = new_source_task(part.task_class)
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
            stop_quietly(task, part.connector, part.task)


def read_payloads(batches: Iterator[Any]) -> Iterator[Any]:
    """Executor: each ``(task, payload)`` row's records, as Arrow batches of the connector's row schema."""
    for batch in batches:
        for payload in batch.column(batch.schema.get_field_index("payload")).to_pylist():
            yield from read_task_ranges(pickle.loads(payload))
