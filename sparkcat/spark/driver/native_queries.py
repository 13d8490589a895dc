"""Native sink queries: ``readStream.format("kafka")`` -> the connector's projection -> ``writeStream.format(...)``.

A sink connector whose ``native_write`` answers (``sparkcat.api.native``) runs as one streaming query with no
``foreachBatch``: no Python per batch, no persist, no job of sparkcat's own. Its batches are reported from the
query's progress (``sparkcat.spark.driver.progress``). The records carry ``_task`` (the Connect task owning their
topic-partition, ``kafka_input.tag_tasks``); a transactional writer gets one Spark partition per task
(``kafka_input.route``), since each task's share of a batch is one Kafka transaction.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from sparkcat.api.connector import Connector
from sparkcat.api.native import NativeWrite, NativeWriteContext, TriggerMode
from sparkcat.errors import ConfigError
from sparkcat.policy.input_policy import prepare
from sparkcat.spark.driver.checkpoint_log import read_offset_log
from sparkcat.spark.driver.kafka_input import Assignment, reader_options, route, subscribed_partitions, tag_tasks
from sparkcat.spark.query_plan import tp_key
from sparkcat.spark.query_plan import QueryPlan, task_failure_message
from sparkcat.spark.driver.progress import ProgressListener, Tracked
from sparkcat.spark.driver.queries import sink_starting_offsets

__all__ = ["NativeQueries", "KAFKA_RECORD_COLUMNS", "native_reader_options"]

log = logging.getLogger(__name__)

#: The records a native sink's ``rows`` gets (timestamp in epoch ms), plus ``_task``.
KAFKA_RECORD_COLUMNS = ("topic", "partition", "offset", "timestamp", "key", "value", "headers")


class NativeQueries:
    """Starts native sink queries on the driver's session and reports their batches to ``on_batch``."""

    def __init__(self, spark: SparkSession, on_batch: Any):
        self.spark = spark
        self._listener: ProgressListener | None = None
        self._on_batch = on_batch
        self._transactional: dict[str, bool] = {}  # query id -> its writer reports each task's executor

    def reports_executors(self, query: StreamingQuery) -> bool:
        """Whether ``query``'s batches name the executor of each task: only a transactional writer's do (one Spark
        partition per task, ``progress._reported_tasks``); the others are reported ``HOST:driver``."""
        return self._transactional.get(str(query.id), False)

    def _progress(self) -> ProgressListener:
        if self._listener is None:
            self._listener = ProgressListener(self.spark, self._on_batch)
        return self._listener

    def start(self, plan: QueryPlan, connector: Connector | None, lease_key: str) -> StreamingQuery | None:
        """Start ``plan``'s query when its connector writes natively; None when it does not (the record path)."""
        if plan.connector_type != "sink" or connector is None:
            return None
        partitions = subscribed_partitions(plan)
        assignment = Assignment.of(partitions, plan.live_tasks or [0])
        starting = sink_starting_offsets(plan, partitions=partitions)
        context = self._context(plan, assignment, lease_key, starting, partitions)
        try:
            native = connector.native_write(context)
            if native is None:
                return None
            _check_real_time(self.spark, plan, native, len(partitions))
        except Exception as e:  # the connector's own refusal: each of its tasks fails to start, with the reason
            raise RuntimeError("\n".join(task_failure_message(plan.connector, t, e) for t in plan.live_tasks)) from e
        records = self._records(plan, native, starting, partitions)
        records = route(records, assignment) if native.transactional else tag_tasks(records, assignment)
        writer = self._writer(plan, native, native.rows(records))
        query = writer.toTable(native.table) if native.table else writer.start(*([native.path] if native.path else []))
        self._transactional[str(query.id)] = native.transactional
        began = {(t, p): starting.get(tp_key(t, p), 0) for t, p in partitions}
        self._progress().track(str(query.id), Tracked(plan, dict(assignment.owners), native.transactional, began),
                               lambda: _recent(query))
        log.info("Connector %s runs natively: Spark writes format %s (%s trigger%s)", plan.connector, native.format,
                 native.trigger.value, ", asynchronous progress tracking" if native.async_progress_ms else "")
        return query

    def finished(self, query: StreamingQuery) -> None:
        """After ``query`` stopped (or failed): every batch it committed has been reported when this returns."""
        self._transactional.pop(str(query.id), None)
        if self._listener is not None:
            self._listener.finish(str(query.id), lambda: _recent(query))

    def close(self) -> None:
        """The driver stops: its native queries' progress is no longer taken."""
        if self._listener is not None:
            self._listener.close()

    def _context(self, plan: QueryPlan, assignment: Assignment, lease_key: str, starting: dict[str, int],
                 partitions: list[tuple[str, int]]) -> NativeWriteContext:
        ck = read_offset_log(self.spark, plan.checkpoint_dir)
        return NativeWriteContext(
            connector=plan.connector, config=prepare(plan.connector_config), bootstrap_servers=plan.bootstrap_servers,
            kafka_config=dict(plan.kafka_config), task_of=dict(assignment.owners), group_id=plan.group_id,
            offsets_topic=plan.offsets_store.get("topic", "") if plan.offsets_store.get("backend") == "kafka" else "",
            lease_key=lease_key, replay_through_epoch=ck.batches[-1] if ck.batches else -1,
            checkpoint_dir=plan.checkpoint_dir,
            starting_offsets={(t, p): starting.get(tp_key(t, p), 0) for t, p in partitions})

    def _records(self, plan: QueryPlan, native: NativeWrite, starting: dict[str, int],
                 partitions: list[tuple[str, int]]) -> DataFrame:
        df = self.spark.readStream.format("kafka").options(**native_reader_options(plan, native, starting,
                                                                                  partitions)).load()
        return df.select("topic", "partition", "offset", F.unix_millis("timestamp").alias("timestamp"),
                         "key", "value", "headers")

    @staticmethod
    def _writer(plan: QueryPlan, native: NativeWrite, rows: DataFrame) -> Any:
        writer = (rows.writeStream.format(native.format).options(**native.options).queryName(plan.query_name)
                  .option("checkpointLocation", plan.checkpoint_dir))
        if native.partition_by:
            writer = writer.partitionBy(*native.partition_by)
        if native.trigger is TriggerMode.REAL_TIME:
            return writer.outputMode("update").trigger(realTime=f"{native.real_time_batch_ms} milliseconds")
        if native.async_progress_ms is not None:
            writer = writer.option("asyncProgressTrackingEnabled", "true") \
                .option("asyncProgressTrackingCheckpointIntervalMs", str(native.async_progress_ms))
        return writer.trigger(processingTime=f"{plan.trigger_interval_ms} milliseconds")


def _recent(query: StreamingQuery) -> list[dict[str, Any]]:
    """The progress of the query's last batches as Spark renders it (Spark keeps the last 100 by default)."""
    return [json.loads(p.json) for p in query.recentProgress]


def native_reader_options(plan: QueryPlan, native: NativeWrite, starting: dict[str, int],
                          partitions: list[tuple[str, int]]) -> dict[str, str]:
    """The Kafka source's options for a native sink: as the record path's, but without a batch-size limit
    unless the connector sets ``batch.max.records`` or its writer is transactional.

    Spark's own writers stream a batch's rows, so a limit only splits a backlog into batches that each
    pay the sink's fixed cost (Delta: a commit and a snapshot). A transactional writer keeps the limit:
    one batch is one Kafka transaction, which must end within ``transaction.timeout.ms``.
    """
    options = reader_options(plan, starting, partitions)
    if native.trigger is TriggerMode.REAL_TIME:
        options.pop("maxOffsetsPerTrigger", None)  # real-time batches read what arrives, for their duration
    elif not native.transactional and "batch.max.records" not in plan.connector_config:
        options.pop("maxOffsetsPerTrigger", None)
    return options


def _check_real_time(spark: SparkSession, plan: QueryPlan, native: NativeWrite, partitions: int) -> None:
    """Spark's real-time mode runs every task of a batch at once for the batch's duration: with fewer cores
    than partitions some partitions are not read at all (measured: local[1], 2 partitions, one copied)."""
    if native.trigger is not TriggerMode.REAL_TIME:
        return
    cores = spark.sparkContext.defaultParallelism
    if partitions > cores:
        raise ConfigError(f"connector {plan.connector}: trigger.mode=realtime needs a core per subscribed partition "
                          f"for the whole batch; it subscribes {partitions} partition(s) and the application has "
                          f"{cores} core(s) (spark.default.parallelism); use trigger.mode=processingtime or more "
                          f"executor cores", {"trigger.mode": [f"{partitions} partitions > {cores} cores"]})
