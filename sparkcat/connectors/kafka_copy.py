"""How the ``kafka`` copy runs natively: the rows, options and trigger of its streaming query (driver side).

``native_copy(config, context)`` answers ``KafkaSinkConnector.native_write``. Per query start it prepares the
target topics (``CopyTargets``: routing, the self-feeding guard, creation with the source's partition count,
partition counts), then describes one of two writes:

- **at least once** (``exactly.once.support=requested``): Spark's own Kafka sink (``format("kafka")``). Its
  rows have no timestamp column, so the record's timestamp travels in the reserved header
  ``TIMESTAMP_HEADER``, which sparkcat's producer interceptor (``org.sparkcat.kafka.HeaderTimestampInterceptor``,
  ``jvm/sparkcat``) turns back into the timestamp. Spark's asynchronous progress tracking is on by default,
  and ``trigger.mode=realtime`` runs the copy in Spark's real-time mode.
- **exactly once** (``exactly.once.support=required``): sparkcat's JVM writer (``format("sparkcat-kafka-eos")``,
  ``jvm/sparkcat``): each task's share of a batch in one Kafka transaction with the task's positions in the
  offsets topic, committed under the driver's lease (see ``TransactionalDataWriter``).

Either way a record keeps its key, value, headers, timestamp and, when the target has it, its partition
number (else the producer's partitioner, by key); no record passes through Python.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from sparkcat.api.native import NativeWrite, NativeWriteContext, TriggerMode
from sparkcat.connectors.kafka_sink_settings import (
    ASYNC_PROGRESS_CONFIG,
    ASYNC_PROGRESS_INTERVAL_CONFIG,
    CONFIG_DEF,
    COPY_PRODUCER_DEFAULTS,
    METADATA_MAX_AGE_S,
    REAL_TIME_BATCH_CONFIG,
    TARGET_BOOTSTRAP_CONFIG,
    TARGET_REPLICATION_CONFIG,
    TARGET_TOPIC_CREATE_CONFIG,
    TARGET_TOPIC_FORMAT_CONFIG,
    TOPIC_PLACEHOLDER,
    TRIGGER_MODE_CONFIG,
    TopicRouter,
    exactly_once_required,
    producer_overrides,
    target_servers,
)
from sparkcat.errors import ConfigError, ConnectorError
from sparkcat.kafka.client_settings import (
    ClientKind,
    admin_settings,
    connection_settings,
    connector_overrides,
    spark_writer_options,
)

__all__ = ["native_copy", "writer_options", "spark_kafka_rows", "transactional_rows", "CopyTargets",
           "TIMESTAMP_HEADER", "INTERCEPTOR", "EOS_FORMAT"]

log = logging.getLogger(__name__)

#: The reserved header carrying a record's timestamp (8 bytes, big-endian epoch ms) to the interceptor.
TIMESTAMP_HEADER = "sparkcat.timestamp"
#: sparkcat's producer interceptor (``jvm/sparkcat``, in ``.jars/spark``).
INTERCEPTOR = "org.sparkcat.kafka.HeaderTimestampInterceptor"
#: sparkcat's exactly-once Kafka writer (``jvm/sparkcat``: ``org.sparkcat.kafka.eos.TransactionalKafkaSink``).
EOS_FORMAT = "sparkcat-kafka-eos"
METADATA_TIMEOUT_S = 30.0


def native_copy(config: Mapping[str, str], context: NativeWriteContext) -> NativeWrite:
    """The copy's native write for this query start (see the module doc); ConfigError for what cannot run."""
    parsed = CONFIG_DEF.parse(dict(config))
    servers = target_servers(dict(config), context.bootstrap_servers)
    same_cluster = servers == context.bootstrap_servers
    targets = CopyTargets(TopicRouter.of(dict(config), same_cluster), bool(parsed[TARGET_TOPIC_CREATE_CONFIG]),
                          int(parsed[TARGET_REPLICATION_CONFIG]), _target_admin(context, servers, config))
    counts = targets.prepare(sorted({t for t, _ in context.task_of}), _partition_counts(context))
    fmt = str(parsed[TARGET_TOPIC_FORMAT_CONFIG])
    options = writer_options(config, context.bootstrap_servers, context.kafka_config)
    if exactly_once_required(config):
        return _transactional(context, servers, fmt, counts, options)
    mode = TriggerMode(str(parsed[TRIGGER_MODE_CONFIG]).lower())
    asynchronous = bool(parsed[ASYNC_PROGRESS_CONFIG]) and mode is TriggerMode.PROCESSING_TIME
    return NativeWrite("kafka", options, lambda records: spark_kafka_rows(records, fmt, counts), trigger=mode,
                       real_time_batch_ms=int(parsed[REAL_TIME_BATCH_CONFIG]),
                       async_progress_ms=int(parsed[ASYNC_PROGRESS_INTERVAL_CONFIG]) if asynchronous else None)


def _transactional(context: NativeWriteContext, servers: str, fmt: str, counts: Mapping[str, int],
                   options: Mapping[str, str]) -> NativeWrite:
    if servers != context.bootstrap_servers or not context.offsets_topic:
        raise ConfigError(f"connector {context.connector}: exactly.once.support=required writes the copy's positions "
                          "to the offsets topic in the same transaction as its records, so the target must be the "
                          "worker's own Kafka cluster; leave target.bootstrap.servers unset",
                          {TARGET_BOOTSTRAP_CONFIG: ["must be the worker's cluster for exactly-once"]})
    import json
    eos = {k: v for k, v in options.items() if k != "kafka.interceptor.classes"}  # timestamps set by the writer
    interceptors = [c for c in options.get("kafka.interceptor.classes", "").split(",") if c and c != INTERCEPTOR]
    if interceptors:
        eos["kafka.interceptor.classes"] = ",".join(interceptors)
    eos.update({"sparkcat.connector": context.connector, "sparkcat.connector.json": json.dumps(
        context.connector, ensure_ascii=False), "sparkcat.group.id": context.group_id or "sparkcat-cluster",
        "sparkcat.offsets.topic": context.offsets_topic, "sparkcat.lease.key": context.lease_key,
        "sparkcat.replay.through.epoch": str(context.replay_through_epoch)})
    return NativeWrite(EOS_FORMAT, eos, lambda records: transactional_rows(records, fmt, counts), transactional=True)


def _partition_counts(context: NativeWriteContext) -> dict[str, int]:
    counts: dict[str, int] = {}
    for topic, _ in context.task_of:
        counts[topic] = counts.get(topic, 0) + 1
    return counts


# ---------------------------------------------------------------- producer settings


def writer_options(config: Mapping[str, str], worker_bootstrap: str,
                   worker_kafka: Mapping[str, Any]) -> dict[str, str]:
    """Options of the copy's Java producer: ``kafka.``-prefixed settings for the target cluster.

    Copy defaults < the worker's settings for producers (own cluster only) < ``producer.override.*``,
    in the Java client's names (``client_settings.spark_writer_options``). The interceptor that restores
    timestamps is always set (after any interceptor the settings name). Raises ConfigError for
    overrides the writer cannot honour (``kafka_sink_settings.producer_overrides``).
    """
    servers = target_servers(dict(config), worker_bootstrap)
    own_cluster = worker_kafka if servers == worker_bootstrap else {}
    options = spark_writer_options(servers, own_cluster, producer_overrides(dict(config)), COPY_PRODUCER_DEFAULTS)
    interceptors = [c.strip() for c in options.get("kafka.interceptor.classes", "").split(",") if c.strip()]
    options["kafka.interceptor.classes"] = ",".join([c for c in interceptors if c != INTERCEPTOR] + [INTERCEPTOR])
    return dict(sorted(options.items()))


# ---------------------------------------------------------------- the written rows


def _target_topic(fmt: str) -> Column:
    """``target.topic.format`` as a column: literal pieces around the row's ``topic``."""
    pieces = fmt.split(TOPIC_PLACEHOLDER)
    cols: list[Column] = []
    for i, piece in enumerate(pieces):
        if i:
            cols.append(F.col("topic"))
        if piece:
            cols.append(F.lit(piece))
    return F.concat(*cols) if len(cols) > 1 else cols[0]


def _kept_partition(partitions: Mapping[str, int]) -> Column:
    """The row's partition when its target has that partition, else null (the producer's partitioner)."""
    counts = F.create_map(*[x for t, n in sorted(partitions.items()) for x in (F.lit(t), F.lit(n))]) \
        if partitions else F.create_map().cast("map<string,int>")
    keep = F.col("partition") < F.coalesce(counts[F.col("topic")], F.lit(0))
    return F.when(keep, F.col("partition")).cast("int")


def spark_kafka_rows(records: DataFrame, fmt: str, partitions: Mapping[str, int]) -> DataFrame:
    """The rows Spark's Kafka writer takes: topic, key, value, headers (+ the timestamp header), partition.

    ``partitions`` maps each source topic to its target's partition count. A negative timestamp (none in
    Kafka) is not carried, so the producer stamps the record.
    """
    stamp = F.struct(F.lit(TIMESTAMP_HEADER).alias("key"),
                     F.unhex(F.lpad(F.hex(F.col("timestamp")), 16, "0")).alias("value"))
    # Most records have no headers (null): a new one-element array is cheaper than a concat there.
    with_stamp = F.when(F.col("headers").isNull(), F.array(stamp)).otherwise(F.concat(F.col("headers"), F.array(stamp)))
    headers = F.when(F.col("timestamp") >= 0, with_stamp).otherwise(F.col("headers"))
    return records.select(_target_topic(fmt).alias("topic"), "key", "value", headers.alias("headers"),
                          _kept_partition(partitions).alias("partition"))


def transactional_rows(records: DataFrame, fmt: str, partitions: Mapping[str, int]) -> DataFrame:
    """The rows of sparkcat's exactly-once writer: the target record, its task, and its source position."""
    return records.select(F.col("_task").cast("int").alias("_task"), _target_topic(fmt).alias("topic"),
                          _kept_partition(partitions).alias("partition"), "key", "value", "headers",
                          F.col("timestamp").cast("long").alias("timestamp"), F.col("topic").alias("src_topic"),
                          F.col("partition").cast("int").alias("src_partition"),
                          F.col("offset").cast("long").alias("src_offset"))


# ---------------------------------------------------------------- target topics (driver)


@dataclass
class CopyTargets:
    """Target topics of one connector: routing, creation and partition counts (metadata cached)."""

    router: TopicRouter
    create: bool
    replication: int
    target_admin: Any
    counts: dict[str, tuple[float, int]] = field(default_factory=dict)
    created: set[str] = field(default_factory=set)

    def prepare(self, topics: Sequence[str], source_partitions: Mapping[str, int]) -> dict[str, int]:
        """Source topic -> its target's partition count (0: unknown, left to the partitioner).

        Raises ConnectorError naming the topic when a target would feed the copy itself or
        cannot be created; ``source_partitions`` gives the partition count a new target gets.
        """
        out = {}
        for topic in topics:
            target = self.router(topic)
            if self.create and target not in self.created:
                self._ensure(target, source_partitions.get(topic, 1))
            out[topic] = self._count(target)
        return out

    def _ensure(self, target: str, partitions: int) -> None:
        """Create ``target`` unless it exists; either way its partition count is known from here on.

        The count of a topic just created is the one asked for: metadata may not show the topic yet,
        and a count of 0 would hand the first batch's records to the partitioner.
        """
        from confluent_kafka.admin import NewTopic
        existing = self.target_admin.list_topics(timeout=METADATA_TIMEOUT_S).topics  # a full listing never auto-creates
        md = existing.get(target)
        if md is not None and md.error is None and md.partitions:
            self.counts[target] = (time.monotonic(), len(md.partitions))
        else:
            future = self.target_admin.create_topics([NewTopic(target, partitions, self.replication)])[target]
            try:
                future.result(timeout=METADATA_TIMEOUT_S)
                log.info("Created target topic %s with %d partition(s)", target, partitions)
                self.counts[target] = (time.monotonic(), partitions)
            except Exception as e:
                if "TOPIC_ALREADY_EXISTS" not in str(e):  # another copy created it first: its metadata says how many
                    raise ConnectorError(f"creating target topic {target!r} failed: {e}") from e
        self.created.add(target)

    def _count(self, target: str) -> int:
        cached = self.counts.get(target)
        now = time.monotonic()
        if cached is not None and now - cached[0] < METADATA_MAX_AGE_S:
            return cached[1]
        md = self.target_admin.list_topics(timeout=METADATA_TIMEOUT_S).topics.get(target)
        count = len(md.partitions) if md is not None and md.error is None else 0
        self.counts[target] = (now, count)
        return count


def _target_admin(context: NativeWriteContext, servers: str, config: Mapping[str, str]) -> Any:
    """An AdminClient for the target cluster (the worker's settings on its own cluster, else the overrides')."""
    from confluent_kafka.admin import AdminClient
    if servers == context.bootstrap_servers:
        return AdminClient(admin_settings(servers, context.kafka_config, connector_overrides(config, ClientKind.ADMIN)))
    overrides = connection_settings(connector_overrides(config, ClientKind.PRODUCER))  # how to reach the target
    return AdminClient(admin_settings(servers, {}, overrides))
