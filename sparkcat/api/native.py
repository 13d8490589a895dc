"""Native sinks: a sink connector whose records Spark writes itself, with no Python per record or per batch.

A sink connector that overrides ``SinkConnector.native_write`` names a Spark streaming format, its options
and a projection of the records; the runtime then runs one streaming query::

    readStream.format("kafka")            # the connector's topics, positioned by its committed offsets
      -> rows(records)                    # the connector's projection (column expressions, on executors)
      -> writeStream.format(fmt).options(options)

Spark's Kafka source gives the records as Spark's Kafka rows: ``key``, ``value`` (BINARY), ``topic``,
``partition``, ``offset``, ``timestamp`` (epoch milliseconds, LONG), ``headers``, plus ``_task`` (INT),
the Connect task that owns the record's topic-partition. The runtime takes the connector's positions
(Connect's offsets, per topic-partition), its tasks' statuses and its metrics from the query's progress
(``StreamingQueryProgress``: the source's end offsets and ``numInputRows``), so every position it stores is
one Spark has committed. Such a query can use Spark's asynchronous progress tracking and real-time mode,
which ``foreachBatch`` cannot.

``native_write`` runs on the driver when the query starts (not on executors); it may talk to Kafka (e.g.
create target topics). Returning None keeps the record path (``SinkTask.put`` on executors).

Example, a sink that appends every record's value to a Parquet directory::

    >>> from pyspark.sql import functions as F
    >>> from sparkcat.api import SinkConnector, SinkTask
    >>> class ParquetSink(SinkConnector):
    ...     def start(self, config): self.path = config["path"]
    ...     def task_class(self): return SinkTask
    ...     def task_configs(self, max_tasks): return [{}] * max_tasks
    ...     def native_write(self, context):
    ...         return NativeWrite("parquet", {"path": self.path},
    ...                            lambda records: records.select(F.col("value").cast("string")))
    >>> sink = ParquetSink(); sink.start({"path": "/tmp/out"})
    >>> sink.native_write(None).format
    'parquet'
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pyspark is imported by the runtime; connector modules import it themselves
    from pyspark.sql import DataFrame

__all__ = ["NativeWrite", "NativeWriteContext", "TriggerMode"]


class TriggerMode(str, Enum):
    """How Spark triggers the native query: micro-batches every ``trigger.interval.ms``, or real-time mode."""

    PROCESSING_TIME = "processingtime"
    REAL_TIME = "realtime"


@dataclass(frozen=True)
class NativeWriteContext:
    """What the runtime tells a native sink when its query starts (driver side).

    ``task_of`` maps each subscribed ``(topic, partition)`` to the Connect task that owns it; the
    records already carry it as ``_task``. ``lease_key``, ``group_id``, ``offsets_topic`` and
    ``replay_through_epoch`` are for writers that commit positions in their own Kafka transactions:
    the leader group whose lease their commits must carry (empty: no group), the worker's ``group.id``,
    the offsets topic, and the last micro-batch id that may repeat one an earlier run committed.
    ``starting_offsets`` lets a sink whose output records Kafka positions drop what it already holds.
    """

    connector: str
    config: Mapping[str, str]
    bootstrap_servers: str
    kafka_config: Mapping[str, str]
    task_of: Mapping[tuple[str, int], int]
    group_id: str = ""
    offsets_topic: str = ""
    lease_key: str = ""
    replay_through_epoch: int = -1
    checkpoint_dir: str = ""
    #: Where the query's Kafka source starts, per subscribed (topic, partition), unless its checkpoint is
    #: further on: the committed positions (offsets store, consumer group), 0 where none is committed.
    starting_offsets: Mapping[tuple[str, int], int] = field(default_factory=dict)


@dataclass(frozen=True)
class NativeWrite:
    """What a native sink asks Spark to run.

    ``rows(records)`` turns the records into what the format takes (column expressions only, so the
    query can run in real-time mode); ``path`` is given to ``start(path)`` (e.g. a Delta table's location),
    ``table`` to ``toTable(table)`` (a catalog table) instead; ``partition_by`` to ``partitionBy``.
    ``transactional``: the format commits each task's positions in the offsets store itself, together with
    its records, and reports each task's records, positions and executor in the query progress's sink
    metrics (``sparkcat.lastBatch``); the runtime then stores no positions of its own.
    ``trigger`` and ``real_time_batch_ms``: Spark's trigger; ``async_progress``: Spark's asynchronous
    progress tracking (``asyncProgressTrackingEnabled``) with its checkpoint interval, for formats that
    allow it (Spark's Kafka sink).
    """

    format: str
    options: Mapping[str, str]
    rows: Callable[[DataFrame], DataFrame]
    path: str | None = None
    table: str | None = None
    partition_by: tuple[str, ...] = ()
    transactional: bool = False
    trigger: TriggerMode = TriggerMode.PROCESSING_TIME
    real_time_batch_ms: int = 5000
    async_progress_ms: int | None = None
