"""Whole-batch writers: a sink connector that writes each micro-batch as one DataFrame, on the driver.

For a store whose own Spark writer commits a batch at once (Delta's MERGE, a bulk load): the
connector's ``SinkConnector.batch_writer`` returns a ``BatchWriter`` and the runtime, for each
micro-batch (``foreachBatch``, on the driver):

1. reads the batch once (persisted) and takes from it what it reports for each task: records and
   positions (Connect's offsets) of the topic-partitions, or source partitions, the task owns;
2. hands the batch to ``write(batch, batch_id)``, without the records a transform filtered out and
   without the runtime's own columns;
3. calls ``abort(batch_id, error)`` when ``write`` raised, then fails the connector's tasks with the
   error; nothing of the batch is committed in the query's checkpoint, so it is replayed.

The batch is Spark's Kafka rows (``key``, ``value`` BINARY, ``topic``, ``partition``, ``offset``,
``timestamp``, ``headers``) for a sink connector, or a source connector's records (``key`` JSON
text, ``value``, ...) when the sink is named by a source connector's ``sink.*`` keys:
``context.input`` says which. ``batch_id`` grows by one per batch and survives a new checkpoint
(the query's batch ids would restart at 0); a replayed batch comes with the id it had, so a
writer that records the last id it committed (Delta's ``txnVersion``) writes each batch once.

This is Spark's ``DataSourceStreamWriter`` contract (``commit``/``abort`` per batch id) at the
level of the DataFrame: the writer uses Spark's writers, which do the per-partition work on the
executors. A sink whose records need Python per record implements ``SinkTask.put`` instead; one
that Spark can write with no Python per batch implements ``SinkConnector.native_write``.

Example, a sink that appends each batch's values to a Parquet directory, once per batch id::

    >>> class ParquetBatches(BatchWriter):
    ...     def __init__(self, path): self.path, self.written = path, []
    ...     def write(self, batch, batch_id):
    ...         if batch_id in self.written: return  # a replay of a batch already written
    ...         batch.select("value").write.mode("append").parquet(self.path)
    ...         self.written.append(batch_id)
    >>> from sparkcat.api import SinkConnector, SinkTask
    >>> class ParquetSink(SinkConnector):
    ...     def start(self, config): ...
    ...     def task_class(self): return SinkTask
    ...     def task_configs(self, max_tasks): return [{}] * max_tasks
    ...     def batch_writer(self, context): return ParquetBatches(context.config["path"])
    >>> ParquetSink.writes_batches()
    True
    >>> ParquetSink().batch_writer(BatchWriteContext("p", {"path": "/tmp/p"}, "kafka")).path
    '/tmp/p'
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:  # pyspark is imported by the runtime; connector modules import it themselves
    from pyspark.sql import DataFrame

__all__ = ["BatchWriter", "BatchWriteContext"]


@dataclass(frozen=True)
class BatchWriteContext:
    """What the runtime tells a batch writer's connector when the query starts (driver side).

    ``config`` is the sink's config: the connector's, or the ``sink.*`` keys of a source connector
    (prefix removed). ``input``: ``"kafka"`` (Spark's Kafka rows) or ``"source"`` (a source
    connector's records).
    """

    connector: str
    config: Mapping[str, str]
    input: Literal["kafka", "source"]


class BatchWriter(ABC):
    """Writes one micro-batch whole (driver side); see the module's documentation for the contract."""

    @abstractmethod
    def write(self, batch: DataFrame, batch_id: int) -> None:
        """Write ``batch``; a replay of ``batch_id`` must not write it twice. A raise fails the batch."""

    def abort(self, batch_id: int, error: BaseException) -> None:
        """Undo what a failed ``write`` of ``batch_id`` left behind, if anything (default: nothing)."""
