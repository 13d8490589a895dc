"""Builds and starts the streaming query of one connector from its ``QueryPlan``.

Source connectors read through the ``sparkcat-connector`` data source; sink
connectors through the ``sparkcat-kafka`` one, or ``sparkcat-kafka-direct`` when their
task takes messages in the reader (``put_messages``). Either way the query writes with
``foreachBatch``, whose function runs in the driver's main Python process (one thread
per query): the handler writes the batch on executors, and ``on_batch(plan, result)``
then runs on that same thread, before Spark commits the batch to its checkpoint.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from sparkcat.spark import connector_source
from sparkcat.spark.batch_writers import handler_for, uses_direct_path
from sparkcat.spark.plan import BatchResult, QueryPlan

__all__ = ["KAFKA_FORMAT", "register_sources", "start_query", "read_stream", "sink_starting_offsets"]

log = logging.getLogger(__name__)

KAFKA_FORMAT = "sparkcat-kafka"
OnBatch = Callable[[QueryPlan, BatchResult], None]
# Spark decides whether an error that ends a stopping query is "just the stop" by matching the
# Python error text with a regex that recurses once per character; the long Java stack trace of
# a cancelled job overflows the JVM stack (StackOverflowError in the stream thread). A batch cut
# by stop() therefore raises this short text instead, which the regex accepts cheaply.
STOP_INTERRUPTION = ("py4j.protocol.Py4JJavaError: An error occurred while calling foreachBatch of {name}: "
                     "java.lang.InterruptedException (the query was stopped during batch {batch})")
BatchGate = Callable[[Callable[[], None]], None]


def register_sources(spark: SparkSession) -> None:
    """Register sparkcat's data sources with the session (the Kafka one once it exists)."""
    spark.dataSource.register(connector_source.ConnectorSource)
    try:
        from sparkcat.spark.kafka_source import KafkaSource
    except ImportError as e:
        log.warning("Kafka data source not available (%s); sink connectors cannot run", e)
        return
    spark.dataSource.register(KafkaSource)
    from sparkcat.spark.kafka_direct_sink import KafkaDirectSinkSource
    spark.dataSource.register(KafkaDirectSinkSource)


def sink_starting_offsets(plan: QueryPlan) -> dict[str, int]:
    """``{"topic:partition": next offset}`` from the offsets store, for a sink's fresh checkpoint."""
    if not plan.offsets_store:
        return {}
    from sparkcat.storage.factory import open_offsets_store
    store = open_offsets_store(plan.offsets_store)
    try:
        pairs = store.partitions(plan.connector)
    finally:
        store.close()
    out = {}
    for partition, offset in pairs:
        topic, kp = partition.get("kafka_topic"), partition.get("kafka_partition")
        if topic is not None and kp is not None and isinstance(offset, dict) and "kafka_offset" in offset:
            out[f"{topic}:{kp}"] = int(offset["kafka_offset"])
    return out


def _kafka_reader(spark: SparkSession, plan: QueryPlan, fmt: str = KAFKA_FORMAT) -> Any:
    """readStream of the Kafka source for a sink connector: one Spark partition per task."""
    config = plan.connector_config
    reader = (spark.readStream.format(fmt)
              .option("bootstrap.servers", plan.bootstrap_servers)
              .option("tasks", str(len(plan.task_configs)))
              .option("connector", plan.connector)
              .option("max.records.per.task", str(plan.batch_max_records)))
    for key in ("topics", "topics.regex"):
        if config.get(key):
            reader = reader.option(key, config[key])
    for key, value in plan.kafka_config.items():
        if not key.startswith(("producer.", "admin.")):
            reader = reader.option("kafka." + key.removeprefix("consumer."), str(value))
    starting = sink_starting_offsets(plan)
    if starting:
        reader = reader.option("starting.offsets", json.dumps(starting, sort_keys=True))
    return reader


def _direct_reader(spark: SparkSession, plan: QueryPlan) -> DataFrame:
    """The ``sparkcat-kafka-direct`` source: the tasks run in the reading; rows are their results.

    The observed metric ``records`` puts the record count back in the query progress, since
    Spark's own input-row count sees one row per task here.
    """
    from sparkcat.spark.kafka_direct_sink import FORMAT
    spec = {"task_class": plan.task_class, "task_configs": plan.task_configs,
            "context": {"connector": plan.connector, "bootstrap_servers": plan.bootstrap_servers,
                        "kafka_config": dict(plan.kafka_config)}}
    df = _kafka_reader(spark, plan, FORMAT).option("sink", json.dumps(spec, sort_keys=True)).load()
    return df.observe("sparkcat", F.coalesce(F.sum("records"), F.lit(0)).alias("records"))


def read_stream(spark: SparkSession, plan: QueryPlan) -> DataFrame:
    """The streaming DataFrame of a plan: connector source, or Kafka for sink connectors."""
    if plan.connector_type == "sink":
        if uses_direct_path(plan):
            return _direct_reader(spark, plan)
        return _kafka_reader(spark, plan).load()
    return spark.readStream.format(connector_source.FORMAT).option("plan", plan.to_json()).load()


def start_query(spark: SparkSession, plan: QueryPlan, on_batch: OnBatch,
                gate: BatchGate | None = None) -> StreamingQuery:
    """Start the connector's query; ``on_batch`` gets each non-empty batch's result on the query thread.

    ``gate``, when given, is called with a thunk that runs the batch (writing and
    ``on_batch``); it may hold a lock around it, or raise instead of calling it to leave
    the batch uncommitted for replay.
    """
    handler = handler_for(plan)
    started: list[StreamingQuery] = []

    def run(batch_df: DataFrame, batch_id: int) -> None:
        result = handler(batch_df, batch_id)
        if result.tasks:
            on_batch(plan, result)

    def foreach_batch(batch_df: DataFrame, batch_id: int) -> None:
        try:
            if gate is None:
                run(batch_df, batch_id)
            else:
                gate(lambda: run(batch_df, batch_id))
        except Exception:
            if started and not started[0].isActive:  # stop() was called: report a plain interruption
                raise InterruptedError(STOP_INTERRUPTION.format(name=plan.query_name, batch=batch_id)) from None
            raise

    query = (read_stream(spark, plan).writeStream
             .foreachBatch(foreach_batch)
             .queryName(plan.query_name)
             .option("checkpointLocation", plan.checkpoint_dir)
             .trigger(processingTime=f"{plan.trigger_interval_ms} milliseconds")
             .start())
    started.append(query)
    return query
