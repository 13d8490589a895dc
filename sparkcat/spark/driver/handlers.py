"""foreachBatch handlers: which one writes a connector's micro-batches (``handler_for``).

(A native sink, e.g. the ``kafka`` copy, has no handler: Spark writes it, ``sparkcat.spark.driver.native_queries``.)

Each factory takes the ``QueryPlan`` and returns ``handler(batch_df, batch_id) -> BatchResult``
(``batch_results``). The handler runs in the driver's main Python process (foreachBatch); the
writing itself runs on executors through ``mapInArrow``, or, for a batch writer, through Spark's
own writers.

- ``batch_writer_handler`` (``batch_writers``): a sink connector that answers ``batch_writer``
  (Delta merges, and Delta behind a source's ``sink.*`` keys) writes the whole batch DataFrame;
- ``from_kafka_to_sink_task`` (``sink_tasks``): a sink connector's Kafka records into its tasks;
- ``to_sink_task`` (``sink_tasks``): a source connector's records into the sink its ``sink.*``
  keys name, skipping Kafka;
- ``to_kafka`` (``source_to_kafka``): a source connector's records to Kafka (the default, as in Connect),
  at least once; ``to_kafka_exactly_once`` (``source_txn``) when the plan is exactly-once.
"""

from __future__ import annotations

from sparkcat.spark.executor.batch_results import Handler
from sparkcat.spark.driver.batch_writers import batch_writer_for, batch_writer_handler
from sparkcat.spark.executor.error_handling import ensure_dead_letter_queue
from sparkcat.spark.query_plan import LeaseSource, QueryPlan, no_lease
from sparkcat.spark.executor.sink_tasks import from_kafka_to_sink_task, to_sink_task
from sparkcat.spark.executor.source_to_kafka import to_kafka
from sparkcat.spark.executor.source_txn import to_kafka_exactly_once

__all__ = ["Handler", "handler_for"]


def handler_for(plan: QueryPlan, lease: LeaseSource = no_lease) -> Handler:
    """The handler a plan needs: a sink's DataFrame writer, Kafka sink connector, ``sink.*`` sink, or Kafka.

    ``lease`` gives exactly-once writers the driver's proof of leadership at each batch (``LeaderLease``).
    A connector with a dead letter queue gets its topic first (``error_handling``), as Connect
    creates it when a task starts: a topic that cannot be created fails the connector's query now.
    """
    ensure_dead_letter_queue(plan)
    writer = batch_writer_for(plan)
    if writer is not None:  # its writes are idempotent by batch id: no lease needed
        return batch_writer_handler(plan, writer)
    if plan.connector_type == "sink":
        return from_kafka_to_sink_task(plan)
    if plan.sink_class:
        return to_sink_task(plan)
    return to_kafka_exactly_once(plan, lease) if plan.exactly_once else to_kafka(plan)
