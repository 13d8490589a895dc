"""A source connector's records produced to Kafka on executors, at least once (the default, as in Connect).

``produce_partition`` is the ``mapInArrow`` function of the driver's ``to_kafka`` handler; it runs in Spark's
Python workers with the pickled ``QueryPlan`` and producer settings (``producer_config``, built on the driver).

Each Spark partition produces its rows with one cached confluent-kafka producer per executor
Python process (``sparkcat.kafka.producers``), keys and values converted column-wise
(``kafka_serialisation``), then flushes: a micro-batch ends only when every record is
acknowledged. A record Kafka refuses is skipped with ``errors.tolerance=all`` (its offset still
counts) and fails its task otherwise, as in Connect (``source_sends``). This is the at-least-once
path (``exactly.once.source.support=disabled``); ``source_txn`` writes each task's batch and its
offsets in one transaction instead, reusing ``producer_config`` and ``produce_arrow_rows``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

from pyspark.sql.types import DataType

from sparkcat.kafka.client_settings import ClientKind, connector_overrides, producer_settings
from sparkcat.kafka.producers import cached_producer, drop_producer, lz4_available, produce_all
from sparkcat.policy.input_policy import prepare
from sparkcat.spark.executor.batch_results import Tallies, raise_task_error, result_batch
from sparkcat.converters import converter_for
from sparkcat.spark.executor.error_handling import RecordErrors, convert_source_batch, record_errors, without_rows
from sparkcat.spark.query_plan import QueryPlan
from sparkcat.spark.executor.source_sends import SourceSends
from sparkcat.spark.executor.topic_creator import SourceTopics
from sparkcat.transforms import KEEP

__all__ = ["produce_partition", "produce_arrow_rows", "producer_config"]

_CLIENT_LOG = logging.getLogger("sparkcat.spark.kafka.client")  # librdkafka's own messages, served by poll()


def producer_config(plan: QueryPlan) -> dict[str, str]:
    """Producer settings (``client_settings.producer_settings``): these defaults < the worker's settings for
    producers < ``producer.override.*``."""
    # Every micro-batch ends with flush(), which sends at once what lingers, so linger.ms only sets how
    # full batches get while a micro-batch is being produced, never how late its end is.
    conf = {"enable.idempotence": "true", "linger.ms": "50", "acks": "all", "message.timeout.ms": "120000",
            "batch.size": "1000000", "queue.buffering.max.messages": "1000000",
            "queue.buffering.max.kbytes": "1048576",
            # Java's default partitioner (murmur2 of the key), so a keyed record lands where Connect puts it.
            "partitioner": "murmur2_random"}
    if lz4_available():
        conf["compression.type"] = "lz4"
    overrides = connector_overrides(prepare(plan.connector_config), ClientKind.PRODUCER)  # placeholders resolved
    return producer_settings(plan.bootstrap_servers, plan.kafka_config, overrides, conf)  # here, on the executor


def _tally_rows(batch: Any, tasks: list[int], tallies: Tallies) -> None:
    """Count one batch's rows per task, with the last offset of each source partition."""
    col, index = batch.column, batch.schema.get_field_index
    partitions, offsets = col(index("_partition")).to_pylist(), col(index("_offset")).to_pylist()
    first_task = tasks[0]
    if tasks.count(first_task) == len(tasks):
        tally = tallies.of(first_task)
        tally.records += len(tasks)
        for pkey, offset in dict(zip(partitions, offsets)).items():  # the last offset of each source partition
            tally.offsets[pkey] = (pkey, offset)
    else:
        for task, pkey, offset in zip(tasks, partitions, offsets):
            tallies.of(task).add(pkey, pkey, offset)


def kept_rows(batch: Any) -> tuple[Any, list[int]]:
    """The rows of an Arrow batch a ``Filter`` transform kept, and the tasks of the ones it dropped."""
    import pyarrow.compute as pc
    index = batch.schema.get_field_index(KEEP)
    if index < 0:
        return batch, []
    keep = pc.fill_null(batch.column(index), True)
    dropped = batch.filter(pc.invert(keep)).column(batch.schema.get_field_index("_task")).to_pylist()
    return (batch.filter(keep) if dropped else batch), dropped


def header_pairs(batch: Any) -> list[Any] | None:
    """The ``headers`` column as confluent-kafka's (key, bytes) lists, or None when no row has any."""
    index = batch.schema.get_field_index("headers")
    if index < 0 or batch.column(index).null_count == batch.num_rows:
        return None
    return [None if h is None else [(e["key"], e["value"]) for e in h] for h in batch.column(index).to_pylist()]


def produce_arrow_rows(producer: Any, batch: Any, convs: tuple[Any, Any], value_type: DataType,
                       deliveries: SourceSends, tallies: Tallies, *, errors: RecordErrors,
                       key_type: DataType | None = None, sends_to: SourceTopics | None = None) -> None:
    """Queue one Arrow batch of connector-source rows: columns converted whole, one ``produce`` per row.

    ``errors`` (``error_handling.record_errors(plan, conf)``, flushed before the batch reports):
    the connector's error handling; a row that fails conversion is skipped (and reported) with
    ``errors.tolerance=all``, or fails the task naming its source partition and offset.
    ``deliveries``: the delivery reports, and what a record Kafka refuses does (``source_sends``).
    ``sends_to``: creates the topics new to the task before their first record (KIP-158) and notes each
    task's topics (KIP-558).
    """
    import pyarrow.compute as pc
    if batch.num_rows == 0:
        return
    col, index = batch.column, batch.schema.get_field_index
    tasks = col(index("_task")).to_pylist()
    tallies.of(tasks[0])
    written, dropped = kept_rows(batch)
    _tally_rows(batch, tasks, tallies)  # every row's source offset counts, written or dropped by a Filter
    for task in dropped:
        tallies.of(task).records -= 1
    if written.num_rows == 0:
        return
    col, index = written.column, written.schema.get_field_index
    topics_col = col(index("topic"))
    if topics_col.null_count or pc.any(pc.equal(pc.utf8_length(topics_col), 0)).as_py():
        raise ValueError("a record without a topic cannot be written to Kafka")
    keys, values, skipped = convert_source_batch(written, value_type, convs, errors, key_type)
    stamps = pc.fill_null(col(index("timestamp_ms")), 0).to_pylist()  # 0: the producer's "now"
    single_topic = pc.count_distinct(topics_col).as_py() == 1
    topics = without_rows(topics_col[0].as_py() if single_topic else topics_col.to_pylist(), skipped)
    headers = without_rows(header_pairs(written), skipped)
    written_tasks = col(index("_task")).to_pylist()
    if sends_to is not None:
        sends_to.before_send(without_rows(written_tasks, skipped), topics)
    on_delivery, on_error = deliveries.callbacks(producer, written, skipped, topics, keys, values, headers)
    produce_all(producer, topics, values, keys, timestamps=without_rows(stamps, skipped),
                on_delivery=on_delivery, headers=headers, on_error=on_error)
    for i in skipped:  # consumed (their offsets count) but not written
        tallies.of(written_tasks[i]).records -= 1
    producer.poll(0)
    deliveries.raise_error()


def produce_partition(plan: QueryPlan, conf: dict[str, str], value_type: DataType,
                       batches: Iterator[Any], key_type: DataType | None = None) -> Iterator[Any]:
    """Executor: produce every row of one Spark partition to Kafka, flush, report per task (``key_type``: the
    keys' schema, ``kafka_serialisation.key_type_of``)."""
    convs = (converter_for(plan.connector_config, True), converter_for(plan.connector_config, False))
    tallies = Tallies()
    errors = record_errors(plan, conf)
    deliveries, producer = SourceSends(plan.connector, errors, tallies), None
    sends_to = SourceTopics(plan)
    try:
        for batch in batches:
            producer = producer or cached_producer(conf, _CLIENT_LOG)
            produce_arrow_rows(producer, batch, convs, value_type, deliveries, tallies, errors=errors,
                               key_type=key_type, sends_to=sends_to)
        if producer is not None:
            producer.flush()
            deliveries.raise_error()
        errors.flush()
    except Exception as e:
        drop_producer(conf)
        raise_task_error(plan.connector, tallies.current, e)
    if tallies:
        yield result_batch({t: tally.decoded() for t, tally in tallies.items()}, errors.counts,
                           topics={t: sends_to.topics_of(t) for t in tallies})


