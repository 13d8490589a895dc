"""The foreachBatch handler of a whole-batch writer (``sparkcat.api.batch_writer``): bookkeeping around ``write``.

Per batch, on the driver: the input is tagged with each record's task (Kafka rows: the task that owns
its topic-partition, as for every sink connector; a source connector's records carry ``_task``),
persisted so it is read once, and tallied on the executors that hold it (records and last position
per task, ``worker_id``: ``executor.batch_results.tally_source``/``tally_kafka``), as the other handlers report. Then the writer gets the batch without the
records a transform filtered out and without the runtime's columns, with a batch id that survives a
new checkpoint (``SinkBatchIds``). The writer owns the write; the runtime owns the positions.
"""

from __future__ import annotations

import logging
import time

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from sparkcat.api.batch_writer import BatchWriteContext, BatchWriter
from sparkcat.api.connector import SinkConnector
from sparkcat.errors import ConfigError
from sparkcat.plugins import load_class
from sparkcat.spark.driver.batch_reports import Handler, SinkBatchIds, batch_result
from sparkcat.spark.driver.kafka_input import Assignment, subscribed_partitions, tag_tasks
from sparkcat.spark.executor.batch_results import RESULT_SCHEMA, tally_kafka, tally_source
from sparkcat.spark.query_plan import BatchResult, QueryPlan
from sparkcat.transforms import KEEP

__all__ = ["batch_writer_for", "batch_writer_handler"]

log = logging.getLogger(__name__)

#: The runtime's columns on a source connector's records, dropped before ``write``.
SOURCE_COLUMNS = ("_task", "_partition", "_offset", KEEP)


def _sink(plan: QueryPlan) -> tuple[str | None, dict[str, str], str]:
    """The sink connector class, its config and the input kind: the connector's own, or its ``sink.*`` sink."""
    if plan.connector_type == "sink":
        return plan.connector_class, dict(plan.connector_config), "kafka"
    if not plan.sink_class:
        return None, {}, "source"
    if not plan.sink_task_configs:
        raise ConfigError(f"connector {plan.connector} names a sink but the plan has no sink task configs")
    return plan.sink_class, dict(plan.sink_task_configs[0]), "source"


def batch_writer_for(plan: QueryPlan) -> BatchWriter | None:
    """The batch writer of the plan's sink, or None when its tasks take records through ``put``."""
    name, config, kind = _sink(plan)
    try:
        cls = load_class(name) if name else None
    except Exception:  # an unloadable class fails on the executors, blamed on its task
        return None
    if not (isinstance(cls, type) and issubclass(cls, SinkConnector) and cls.writes_batches()):
        return None
    return cls().batch_writer(BatchWriteContext(plan.connector, config, kind))  # type: ignore[arg-type]


def _to_write(tagged: DataFrame, kind: str) -> DataFrame:
    """The batch as the writer gets it: no filtered-out record, none of the runtime's columns."""
    if kind == "kafka":
        return tagged.drop("_task")
    if KEEP in tagged.columns:
        tagged = tagged.where(F.coalesce(F.col(KEEP), F.lit(True)))
    return tagged.drop(*SOURCE_COLUMNS)


def batch_writer_handler(plan: QueryPlan, writer: BatchWriter) -> Handler:
    """The foreachBatch handler that runs ``writer`` for the plan's connector."""
    _, _, kind = _sink(plan)
    tally = tally_kafka if kind == "kafka" else tally_source
    live = plan.live_tasks or [0]
    # raw batch ids restart at 0 with a new checkpoint: a writer that skips ids it saw would skip new batches
    versions = SinkBatchIds(plan.checkpoint_dir, required="a batch writer needs batch ids that survive a checkpoint")

    def handler(batch_df: DataFrame, batch_id: int) -> BatchResult:
        started = time.monotonic()
        version = versions(batch_df.sparkSession, batch_id)
        if kind == "kafka":
            batch_df = tag_tasks(batch_df, Assignment.of(subscribed_partitions(plan), live))
        tagged = batch_df.persist()
        try:
            results = tagged.mapInArrow(tally, RESULT_SCHEMA).collect()
            if results:
                _write(writer, _to_write(tagged, kind), version)
        finally:
            tagged.unpersist()
        log.debug("Connector %s: batch %d written by %s as batch %d", plan.connector, batch_id,
                  type(writer).__name__, version)
        return batch_result(plan.connector, batch_id, results, started)

    return handler


def _write(writer: BatchWriter, batch: DataFrame, batch_id: int) -> None:
    """``write``, and ``abort`` when it raised; the write's error is what fails the batch."""
    try:
        writer.write(batch, batch_id)
    except BaseException as error:
        try:
            writer.abort(batch_id, error)
        except Exception:
            log.exception("%s.abort(%d) failed after a failed write", type(writer).__name__, batch_id)
        raise
