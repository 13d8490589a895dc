"""Builds and starts the streaming query of one connector from its ``QueryPlan``.

Source connectors read through ``planned_source`` (a JVM stream planned in the driver's Python); sink
connectors through Spark's own Kafka source (``format("kafka")``, options from
``kafka_input.reader_options``). Either way the query writes with
``foreachBatch``, whose function runs in the driver's main Python process (one thread
per query): the handler writes the batch on executors, and ``on_batch(plan, result)``
then runs on that same thread, before Spark commits the batch to its checkpoint.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from sparkcat.spark.driver import java_source, planned_source
from sparkcat.spark.driver.handlers import handler_for, writes_to_kafka
from sparkcat.spark.driver.kafka_input import reader_options, subscribed_partitions
from sparkcat.spark.query_plan import tp_key
from sparkcat.spark.query_plan import BatchResult, LeaseSource, QueryPlan, no_lease

__all__ = ["KAFKA_FORMAT", "KAFKA_COLUMNS", "register_sources", "start_query", "read_stream",
           "sink_starting_offsets"]

log = logging.getLogger(__name__)

KAFKA_FORMAT = "kafka"
#: The columns a sink connector's batches carry: Spark's Kafka rows with the timestamp in epoch ms.
KAFKA_COLUMNS = ("topic", "partition", "offset", "timestamp", "key", "value", "headers")
OnBatch = Callable[[QueryPlan, BatchResult], None]
# Spark decides whether an error that ends a stopping query is "just the stop" by matching the
# Python error text with a regex that recurses once per character; the long Java stack trace of
# a cancelled job overflows the JVM stack (StackOverflowError in the stream thread). A batch cut
# by stop() therefore raises this short text instead, which the regex accepts cheaply.
STOP_INTERRUPTION = ("py4j.protocol.Py4JJavaError: An error occurred while calling foreachBatch of {name}: "
                     "java.lang.InterruptedException (the query was stopped during batch {batch})")
BatchGate = Callable[[Callable[[], None]], None]


def interrupted_if_stopped(query: StreamingQuery | None, name: str, batch_id: int) -> None:
    """In a batch's error handler: raise ``STOP_INTERRUPTION`` instead when ``query`` was stopped meanwhile (else
    return, and the handler re-raises its error)."""
    if query is not None and not query.isActive:
        raise InterruptedError(STOP_INTERRUPTION.format(name=name, batch=batch_id)) from None


def register_sources(spark: SparkSession) -> None:
    """Ready the session for source connectors' streams: py4j's callback server, through which the JVM calls
    their planners (``planned_source``)."""
    from pyspark.java_gateway import ensure_callback_server_started
    ensure_callback_server_started(spark.sparkContext._gateway)


def sink_starting_offsets(plan: QueryPlan, store: Any = None,
                          partitions: list[tuple[str, int]] | None = None) -> dict[str, int]:
    """``{"topic:partition": next offset}`` for a sink's fresh checkpoint: per partition the larger of the offsets
    store's position and the one committed to the sink's consumer group ``connect-NAME`` (which is ahead when a
    Kafka Connect worker ran the connector since). ``store``: an open ``OffsetStore`` (else one is opened);
    ``partitions``: the subscribed ones, when known (else asked from the broker)."""
    from sparkcat.kafka.client_settings import consumer_settings
    from sparkcat.kafka.sink_groups import committed_positions, sink_group_id

    out = {tp_key(p["kafka_topic"], p["kafka_partition"]): int(o["kafka_offset"])
           for p, o in _stored_sink_pairs(plan, store)
           if isinstance(o, dict) and "kafka_offset" in o and "kafka_topic" in p and "kafka_partition" in p}
    if not plan.bootstrap_servers:
        return out
    group = sink_group_id(plan.connector, plan.connector_config)
    ahead = 0
    asked = subscribed_partitions(plan) if partitions is None else partitions
    for topic, partition, offset in committed_positions(consumer_settings(plan.bootstrap_servers, plan.kafka_config),
                                                        group, asked):
        key = tp_key(topic, partition)
        if offset > out.get(key, -1):
            out[key], ahead = offset, ahead + 1
    if ahead:
        log.info("Connector %s: group %s committed past the offsets store in %d partition(s); those start there",
                 plan.connector, group, ahead)
    return out


def _stored_sink_pairs(plan: QueryPlan, store: Any) -> list[tuple[dict[str, Any], Any]]:
    """The sink's ``(partition, offset)`` pairs in the offsets store, read once no transaction is open."""
    if store is not None:
        store.get(plan.connector, stable=True)  # an exactly-once copy's positions come in transactions
        return store.partitions(plan.connector)
    if not plan.offsets_store:
        return []
    from sparkcat.storage.factory import open_offsets_store
    opened = open_offsets_store(plan.offsets_store)
    try:
        opened.get(plan.connector, stable=True)
        return opened.partitions(plan.connector)
    finally:
        opened.close()


def _kafka_stream(spark: SparkSession, plan: QueryPlan) -> DataFrame:
    """Spark's Kafka source for a sink connector, positioned by the offsets store on a fresh checkpoint."""
    partitions = subscribed_partitions(plan)
    stored = sink_starting_offsets(plan, partitions=partitions)
    df = spark.readStream.format(KAFKA_FORMAT).options(**reader_options(plan, stored, partitions)).load()
    return df.select("topic", "partition", "offset", F.unix_millis("timestamp").alias("timestamp"),
                     "key", "value", "headers")


def read_stream(spark: SparkSession, plan: QueryPlan, store: Any = None, lease: LeaseSource = no_lease) -> DataFrame:
    """The streaming DataFrame of a plan: connector source, or Kafka for sink connectors (``lease``: what a Java
    source's exactly-once tasks commit under)."""
    if plan.connector_type == "sink":
        return _kafka_stream(spark, plan)
    if plan.java_host:
        return java_source.java_source_stream(spark, plan, store, lease)
    rows = planned_source.source_stream(spark, plan, store)
    checked = transformed(rows, plan)
    return rows if writes_to_kafka(plan) else checked  # to Kafka: its handler applies the chain, per batch


def transformed(rows: DataFrame, plan: QueryPlan) -> DataFrame:
    """A source connector's rows through its ``transforms`` chain: one projection per stage, on the executors.

    Raises ConfigError (``transforms.DataError``) when a transformation cannot apply to the task's
    value schema, so the connector fails before any record is read. (A source writing to Kafka is given
    its rows untransformed: its handler applies the chain to each batch, ``source_transform_errors``, to skip
    a record the chain fails on.)
    """
    from sparkcat.policy.input_policy import prepare
    from sparkcat.transforms import Records, apply_chain, parse_chain

    chain = parse_chain(prepare(plan.connector_config))
    if not chain:
        return rows
    log.info("Connector %s applies transforms %s", plan.connector, ", ".join(s.alias for s in chain.stages))
    return apply_chain(Records(rows), chain).df


def _trigger_ms(plan: QueryPlan) -> int:
    """Spark's trigger interval: ``trigger.interval.ms``; for a Java source how often its planner is asked whether
    a batch is due (it paces them itself, ``java_source.JavaPlanner.latestOffset``)."""
    if plan.java_host and plan.connector_type == "source":
        return java_source.CHECK_MS
    return plan.trigger_interval_ms


def start_query(spark: SparkSession, plan: QueryPlan, on_batch: OnBatch,
                gate: BatchGate | None = None, lease: LeaseSource = no_lease, store: Any = None) -> StreamingQuery:
    """Start the connector's query; ``on_batch`` gets each non-empty batch's result on the query thread.

    ``gate``, when given, is called with a thunk that runs the batch (writing and
    ``on_batch``); it may hold a lock around it, or raise instead of calling it to leave
    the batch uncommitted for replay. ``lease``: the driver's proof of leadership, which
    exactly-once writers commit with (``kafka.producers.LeaderLease``).
    """
    handler = handler_for(plan, lease)
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
            interrupted_if_stopped(started[0] if started else None, plan.query_name, batch_id)
            raise

    query = (read_stream(spark, plan, store, lease).writeStream
             .foreachBatch(foreach_batch)
             .queryName(plan.query_name)
             .option("checkpointLocation", plan.checkpoint_dir)
             .trigger(processingTime=f"{_trigger_ms(plan)} milliseconds")
             .start())
    started.append(query)
    return query
