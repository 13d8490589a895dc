"""foreachBatch handlers: which one writes a connector's micro-batches (``handler_for``), and each handler.

(A native sink, e.g. the ``kafka`` copy, has no handler: Spark writes it, ``sparkcat.spark.driver.native_queries``.)

A handler, ``handler(batch_df, batch_id) -> BatchResult`` (``batch_reports``), runs in the driver's main
Python process (foreachBatch): it prepares the batch (routing, transforms), hands each Spark partition to
an executor-side function through ``mapInArrow`` and merges the rows they report:

- ``batch_writer_handler`` (``batch_writers``): a sink connector that answers ``batch_writer``
  (Delta merges, and Delta behind a source's ``sink.*`` keys) writes the whole batch DataFrame;
- ``from_kafka_to_sink_task``: a sink connector's Kafka records into its tasks (``executor.sink_tasks``);
- ``to_sink_task``: a source connector's records into the sink its ``sink.*`` keys name, skipping Kafka;
- ``to_kafka``: a source connector's records to Kafka (the default, as in Connect), at least once
  (``executor.source_to_kafka``); ``to_kafka_exactly_once`` when the plan is exactly-once (``executor.source_txn``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from sparkcat.kafka.dead_letter_queue import ensure_topic
from sparkcat.kafka.producers import LeaderLease
from sparkcat.spark.driver.batch_reports import Handler, SinkBatchIds, batch_result
from sparkcat.spark.driver.batch_writers import batch_writer_for, batch_writer_handler
from sparkcat.spark.driver.java_sink import java_sink_handler
from sparkcat.spark.driver.java_source import java_source_handler
from sparkcat.spark.driver.kafka_input import Assignment, connector_admin, route, subscribed_partitions
from sparkcat.spark.driver import source_transform_errors, transform_errors
from sparkcat.spark.driver.leases import write_under_lease
from sparkcat.spark.executor.batch_results import RESULT_SCHEMA, SOURCE_RESULT_SCHEMA
from sparkcat.spark.executor.error_handling import ErrorSettings, RecordErrors
from sparkcat.spark.executor.kafka_serialisation import key_type_of, value_type_of
from sparkcat.spark.executor.sink_chain import chain_of, transform_batch
from sparkcat.spark.executor.sink_tasks import put_kafka_rows, put_source_rows, task_contexts, wants_raw_bytes
from sparkcat.spark.executor.source_to_kafka import produce_partition, producer_config
from sparkcat.spark.executor.source_txn import EOS_RESULT_SCHEMA, produce_task_batch
from sparkcat.policy.input_policy import prepare
from sparkcat.spark.query_plan import BatchResult, LeaseSource, QueryPlan, no_lease

__all__ = ["Handler", "handler_for", "writes_to_kafka", "ensure_dead_letter_queue", "to_kafka", "to_kafka_exactly_once",
           "to_sink_task", "from_kafka_to_sink_task"]

log = logging.getLogger(__name__)


def handler_for(plan: QueryPlan, lease: LeaseSource = no_lease) -> Handler:
    """The handler a plan needs: a sink's DataFrame writer, Kafka sink connector, ``sink.*`` sink, or Kafka.

    ``lease`` gives exactly-once writers the driver's proof of leadership at each batch (``LeaderLease``).
    A connector with a dead letter queue gets its topic first (``ensure_dead_letter_queue``), as Connect
    creates it when a task starts: a topic that cannot be created fails the connector's query now.
    """
    if plan.java_host:  # Java tasks, in the executors' JVMs: the rows are their reports
        return java_sink_handler(plan) if plan.connector_type == "sink" else java_source_handler(plan)
    ensure_dead_letter_queue(plan)
    writer = batch_writer_for(plan)
    if writer is not None:  # its writes are idempotent by batch id: no lease needed
        return batch_writer_handler(plan, writer)
    if plan.connector_type == "sink":
        return from_kafka_to_sink_task(plan)
    if plan.sink_class:
        return to_sink_task(plan)
    return to_kafka_exactly_once(plan, lease) if plan.exactly_once else to_kafka(plan)


def writes_to_kafka(plan: QueryPlan) -> bool:
    """Whether the plan is a Python source connector writing to Kafka (``to_kafka``, ``to_kafka_exactly_once``):
    its handler, not its stream, applies its transforms (``source_transform_errors``)."""
    return plan.connector_type != "sink" and not plan.java_host and not plan.sink_class


def _through_chain(plan: QueryPlan, rows: DataFrame, write: source_transform_errors.Write) -> BatchResult:
    """``write`` of the batch through the connector's transforms, a record they fail on skipped or failing its task
    as ``errors.tolerance`` says (``source_transform_errors``)."""
    chain = chain_of(plan)
    if not chain:
        return write(rows, False)
    settings = ErrorSettings.of(prepare(plan.connector_config))
    errors = lambda: RecordErrors(plan.connector, settings, producer_config(plan))  # noqa: E731
    return source_transform_errors.written_through_chain(rows, chain, errors, write)


def ensure_dead_letter_queue(plan: QueryPlan) -> None:
    """Create the connector's dead letter queue topic if it names one (DeadLetterQueueError if that fails)."""
    if not str(plan.connector_config.get("errors.deadletterqueue.topic.name") or "").strip():
        return
    settings = ErrorSettings.of(prepare(plan.connector_config))
    if settings.dlq_topic:
        admin = connector_admin(plan)
        ensure_topic(admin, settings.dlq_topic, settings.dlq_replication_factor, plan.connector)


def to_kafka(plan: QueryPlan) -> Handler:
    """Handler that produces a source connector's rows to Kafka with its key/value converters."""
    conf = producer_config(plan)

    def handler(batch_df: DataFrame, batch_id: int) -> BatchResult:
        started = time.monotonic()

        def written(df: DataFrame, _replay: bool) -> BatchResult:
            value_type = value_type_of(df.schema["value"])  # named by SetSchemaMetadata
            key_type = key_type_of(df.schema["key"])  # a key ValueToKey built, maybe named

            def write(batches: Iterator[Any]) -> Iterator[Any]:
                return produce_partition(plan, conf, value_type, batches, key_type)

            rows = df.mapInArrow(write, SOURCE_RESULT_SCHEMA).collect()
            return batch_result(plan.connector, batch_id, rows, started)

        return _through_chain(plan, batch_df, written)

    return handler


def to_kafka_exactly_once(plan: QueryPlan, lease: LeaseSource = no_lease) -> Handler:
    """Handler writing each task's share of a batch and its offsets in one Kafka transaction.

    Each transaction commits under the driver's ``lease`` as the batch began: a driver that lost the
    leadership meanwhile (paused past its session) cannot commit it, though it may fence the new leader's
    producer, whose batch then fails transiently and is replayed.
    """
    conf = producer_config(plan)
    fresh = [True]  # the query's first batch may be a replay of one the last run wrote

    def handler(batch_df: DataFrame, batch_id: int) -> BatchResult:
        started = time.monotonic()
        if fresh[0]:  # one line per query: where a (re)start's time goes before its first record
            log.info("Connector %s: first batch %d of this query begins", plan.connector, batch_id)
        rows: list[Any] = []

        def written(df: DataFrame, again: bool) -> BatchResult:  # again: the batch's second write, a replay
            value_type = value_type_of(df.schema["value"])  # named by SetSchemaMetadata
            key_type = key_type_of(df.schema["key"])  # a key ValueToKey built, maybe named

            def run(held: LeaderLease | None, replay: bool) -> list[Any]:
                def write(batches: Iterator[Any]) -> Iterator[Any]:
                    return produce_task_batch(plan, conf, value_type, replay, batch_id, held, batches, key_type)
                return df.mapInArrow(write, EOS_RESULT_SCHEMA).collect()

            rows[:] = write_under_lease(lease, run, fresh[0] or again, plan.connector, batch_id)
            return batch_result(plan.connector, batch_id, rows, started)

        result = _through_chain(plan, batch_df, written)
        fresh[0] = False
        result.transaction_ms = max((r.transaction_ms for r in rows), default=None)
        skipped = sorted(r.task for r in rows if r.skipped)
        if skipped:
            log.info("Connector %s: batch %d was replayed; task(s) %s had committed it already and skipped it",
                     plan.connector, batch_id, skipped)
        return result

    return handler


def to_sink_task(plan: QueryPlan) -> Handler:
    """Handler that writes a source connector's rows into its ``sink.*`` sink tasks, skipping Kafka."""
    if not plan.sink_task_class or not plan.sink_task_configs:
        raise ValueError(f"connector {plan.connector} names a sink but the plan has no sink task configs")
    n_sink, n_source = len(plan.sink_task_configs), len(plan.task_configs)
    batch_ids = SinkBatchIds(plan.checkpoint_dir)
    contexts = task_contexts(plan)

    def handler(batch_df: DataFrame, batch_id: int) -> BatchResult:
        started = time.monotonic()
        sink_batch = batch_ids(batch_df.sparkSession, batch_id)
        df = batch_df
        if n_sink < n_source:  # several source tasks share a sink task: all its rows must meet in one partition
            df = batch_df.repartition(n_sink, F.pmod(F.col("_task"), F.lit(n_sink)))

        def write(batches: Iterator[Any]) -> Iterator[Any]:
            return put_source_rows(plan, sink_batch, contexts, batches)

        rows = df.mapInArrow(write, RESULT_SCHEMA).collect()
        return batch_result(plan.connector, batch_id, rows, started)

    return handler


def from_kafka_to_sink_task(plan: QueryPlan) -> Handler:
    """Handler for sink connectors: Spark's Kafka rows, routed to their tasks, into SinkTasks (``put``).

    Per micro-batch the driver reads the subscribed partitions (metadata) and assigns them to
    the live tasks (``kafka_input``); each task's rows meet in one Spark partition, so each
    task runs as one SinkTask instance per batch on the executor that ran that partition.
    """
    batch_ids = SinkBatchIds(plan.checkpoint_dir)
    contexts = task_contexts(plan)
    live = plan.live_tasks
    raw = wants_raw_bytes(plan.task_class)
    dlq_producer = producer_config(plan)  # the dead letter queue's producer: the connector's, as in Connect

    chain = chain_of(plan)
    settings = ErrorSettings.of(prepare(plan.connector_config))

    def handler(batch_df: DataFrame, batch_id: int) -> BatchResult:
        started = time.monotonic()
        sink_batch = batch_ids(batch_df.sparkSession, batch_id)
        routed = route(batch_df, Assignment.of(subscribed_partitions(plan), live))
        sides, transformed = None, routed
        if chain:  # decoded and transformed in Spark; positions stay the original ones
            routed = routed.persist()  # read once for the schema of the batch and once to write it
            if not routed.isEmpty():
                transformed, sides = transform_batch(routed, plan.connector_config, raw, chain)

        def write(batches: Iterator[Any]) -> Iterator[Any]:
            return put_kafka_rows(plan, sink_batch, contexts, raw, sides, dlq_producer, batches)

        def written(df: DataFrame) -> BatchResult:
            return batch_result(plan.connector, batch_id, df.mapInArrow(write, RESULT_SCHEMA).collect(), started)

        try:
            return written(transformed)
        except Exception as e:
            if sides is None or not transform_errors.tolerated(settings, e):
                raise
            # a record whose transforms fail, with errors.tolerance=all: skipped, as Connect skips it
            return transform_errors.rerun_without_bad(
                routed, chain, transform_errors.chain_transform(routed, plan.connector_config, raw), settings,
                lambda: RecordErrors(plan.connector, settings, dlq_producer), e, written)
        finally:
            if chain:
                routed.unpersist()

    return handler
