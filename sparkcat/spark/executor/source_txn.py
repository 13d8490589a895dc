"""Exactly-once source → Kafka (KIP-618 on micro-batches) on executors: ``produce_task_batch``.

It is the ``mapInArrow`` function of the driver's ``to_kafka_exactly_once`` handler, which pickles it the plan,
the producer settings and the driver's ``LeaderLease``.

Each Spark partition is one connector task's share of the micro-batch. On its executor:

1. a fresh transactional producer, ``transactional.id = {group.id}-{connector}-{task}``
   (Connect's), metadata first, then ``init_transactions``, which fences every earlier
   instance of the task (a zombie of a killed driver, a failed attempt);
2. on a possible replay (the query's first batch, or a Spark task retry), the task's stored
   offsets, read ``read_committed`` once every transaction open at that moment has ended;
3. one transaction with the records and, to the offsets topic (partition 0, Connect's key and
   value), the task's new source offsets;
4. if the stored offsets already equal the batch's end, that transaction had committed before
   the replay: this one is aborted and the task reports the batch as skipped. Otherwise (it
   aborted, or never ran) the batch is written again;
5. the commit carries the driver's ``LeaderLease``: the group coordinator refuses it when the
   driver that planned the batch no longer leads (``kafka.producers.commit_under_lease``).

The driver then stores no offsets for the batch (``BatchAccounting.on_batch``): they are in the
transaction.

A record Kafka refuses (over the topic's ``max.message.bytes``, say) cannot be skipped here, as in
Connect's ``ExactlyOnceWorkerSourceTask``: the transaction is aborted and the task fails, whatever
``errors.tolerance`` says (``source_sends``); records that fail conversion are still skipped or
dead-lettered with ``errors.tolerance=all``, since they never reach the producer.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from itertools import chain
from typing import Any

from pyspark.sql.types import DataType

from sparkcat.converters import converter_for
from sparkcat.kafka.partitioner import keyed_partition
from sparkcat.kafka.producers import LeaderLease, commit_under_lease, task_transactional_id, transactional_producer
from sparkcat.spark.executor.batch_results import SOURCE_RESULT_SCHEMA, Tallies, raise_task_error, result_batch
from sparkcat.spark.executor.error_handling import record_errors
from sparkcat.spark.executor.source_sends import SourceSends
from sparkcat.spark.executor.source_to_kafka import produce_arrow_rows
from sparkcat.spark.executor.topic_creator import SourceTopics
from sparkcat.spark.query_plan import QueryPlan
from sparkcat.storage import json_codec
from sparkcat.storage.offsets import record_key

__all__ = ["produce_task_batch", "EOS_RESULT_SCHEMA"]

log = logging.getLogger(__name__)
_CLIENT_LOG = logging.getLogger("sparkcat.spark.kafka.client")

EOS_RESULT_SCHEMA = SOURCE_RESULT_SCHEMA + ", skipped BOOLEAN, transaction_ms DOUBLE"
TIMEOUT_S = 60.0


def _offset_records(connector: str, offsets: dict[str, tuple[str, str]]) -> tuple[list[bytes], list[bytes]]:
    """Connect's offsets records of one task (key ``["NAME",{partition}]``), from the tally's JSON texts."""
    keys = [record_key(connector, pkey).encode() for pkey in offsets]
    values = [json_codec.dumps(json.loads(offset)) for _, offset in offsets.values()]
    return keys, values


def _committed_before(plan: QueryPlan, offsets: dict[str, tuple[str, str]]) -> bool:
    """Whether the offsets store already holds this batch's end for every partition the task wrote."""
    from sparkcat.storage.factory import open_offsets_store
    store = open_offsets_store(plan.offsets_store)
    try:
        stored = store.get(plan.connector, stable=True)
    finally:
        store.close()
    return bool(offsets) and all(k in stored and stored[k] == json.loads(o) for k, (_, o) in offsets.items())


class _TaskTransaction:
    """One task's transaction in one Spark partition: producer, records, offsets, commit or abort."""

    def __init__(self, plan: QueryPlan, conf: dict[str, str], task: int) -> None:
        self.plan, self.task = plan, task
        started = time.monotonic()
        self.producer = transactional_producer(conf, task_transactional_id(plan.group_id, plan.connector, task),
                                               _CLIENT_LOG, TIMEOUT_S)
        self.init_ms = (time.monotonic() - started) * 1000
        self.producer.begin_transaction()

    def finish(self, offsets: dict[str, tuple[str, str]], deliveries: SourceSends, replay: bool,
               batch_id: int, lease: LeaderLease | None) -> tuple[bool, float]:
        """Commit records and offsets; abort instead when a replay finds them committed. (skipped, ms)."""
        from confluent_kafka import KafkaException
        p = self.producer
        if replay and _committed_before(self.plan, offsets):
            p.abort_transaction(TIMEOUT_S)
            return True, self.init_ms
        keys, values = _offset_records(self.plan.connector, offsets)
        topic = self.plan.offsets_store["topic"]
        try:
            for key, value in zip(keys, values):  # each to its key's partition, as Connect's producer writes offsets
                p.produce(topic, value, key, partition=keyed_partition(p, topic, key), on_delivery=deliveries)
        except KafkaException as e:  # the transaction failed already: a record Kafka refused, say
            deliveries.explain(p, e)
        p.flush(TIMEOUT_S)  # as the at-least-once path does: not part of the cost of exactly-once
        deliveries.raise_error()
        started = time.monotonic()
        commit_under_lease(p, lease, TIMEOUT_S)
        return False, self.init_ms + (time.monotonic() - started) * 1000

    def abort(self) -> None:
        """After an error: abort what is abortable; a fenced producer just goes."""
        try:
            self.producer.abort_transaction(TIMEOUT_S)
        except Exception as e:  # fenced or fatal: the coordinator aborts it, or the fencer did
            log.warning("Aborting the transaction of task %s-%d failed: %s", self.plan.connector, self.task, e)


def produce_task_batch(plan: QueryPlan, conf: dict[str, str], value_type: DataType, replay: bool, batch_id: int,
                       lease: LeaderLease | None, batches: Iterator[Any],
                       key_type: DataType | None = None) -> Iterator[Any]:
    """Executor: one task's rows and offsets in one transaction; yields its result row (``EOS_RESULT_SCHEMA``)."""
    from pyspark import TaskContext
    batches = (b for b in batches if b.num_rows)
    first = next(batches, None)
    if first is None:
        return
    task = first.column(first.schema.get_field_index("_task"))[0].as_py()
    ctx = TaskContext.get()
    replay = replay or (ctx is not None and ctx.attemptNumber() > 0)
    convs = (converter_for(plan.connector_config, True), converter_for(plan.connector_config, False))
    tallies, txn, sends_to = Tallies(), None, SourceTopics(plan)
    try:
        txn = _TaskTransaction(plan, conf, task)
        errors = record_errors(plan, conf, txn.producer)  # dead letters commit or abort with the batch
        # a record Kafka refuses aborts the transaction and fails the task, as in Connect, whatever errors.tolerance says
        deliveries = SourceSends(plan.connector, errors, tallies, exactly_once=True)
        for batch in chain([first], batches):
            produce_arrow_rows(txn.producer, batch, convs, value_type, deliveries, tallies, errors=errors,
                               key_type=key_type, sends_to=sends_to)
        errors.flush()
        if set(tallies) != {task}:
            raise RuntimeError(f"one Spark partition holds tasks {sorted(tallies)}; exactly-once needs one")
        skipped, ms = txn.finish(tallies[task].offsets, deliveries, replay, batch_id, lease)
    except Exception as e:
        if txn is not None:
            txn.abort()
        raise_task_error(plan.connector, task, e)
    tally = tallies[task]
    if skipped:
        tally.records = 0
    base = result_batch({task: tally.decoded()}, None if skipped else errors.counts,  # an abort drops its counts
                        topics={task: [] if skipped else sends_to.topics_of(task)})
    import pyarrow as pa
    yield pa.RecordBatch.from_arrays([*base.columns, pa.array([skipped]), pa.array([ms], pa.float64())],
                                     names=[*base.schema.names, "skipped", "transaction_ms"])


