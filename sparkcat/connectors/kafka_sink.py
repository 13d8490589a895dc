"""Kafka sink: copies topics to other topics (on the same or another cluster), like a one-way MirrorMaker.

Name: ``kafka`` (also ``kafka-sink``, ``KafkaSinkConnector``, ``KafkaSink``).

Each record of the subscribed topics (``topics`` or ``topics.regex``, the common sink keys) is
written to the target topic named by ``target.topic.format`` with its key, value and timestamp
unchanged, as bytes: the connector never decodes a record (Connect's ``ByteArrayConverter``
semantics; ``key.converter`` / ``value.converter`` must be unset or ``ByteArrayConverter``).

Options
-------
- ``target.topic.format`` (STRING, default ``${topic}.copy``): the target topic of a source
  topic; ``${topic}`` is replaced by the source topic's name (a constant name sends every topic to
  one target). A target that is one of the subscribed topics on the same cluster is an error (the
  copy would feed itself).
- ``target.bootstrap.servers`` (STRING, default empty = the worker's ``bootstrap.servers``): the
  cluster to write to. The worker's ``kafka.*`` client settings apply only when the target is the
  worker's own cluster; ``producer.override.*`` always applies.
- ``target.topic.create`` (BOOLEAN, default true): create a missing target topic with as many
  partitions as its source topic (``target.topic.replication.factor``, default -1 = the broker's
  default). When false, a missing topic is left to the broker's auto-creation.
- Producer settings: ``producer.override.*``, Java producer names (e.g.
  ``producer.override.compression.type=none``). Defaults favour throughput: lz4,
  ``linger.ms=100``, 1 MB batches, idempotence with ``acks=all``. Keys the writer cannot honour
  (serializers, ``transactional.id``, librdkafka-only names such as ``message.timeout.ms``) are
  refused when the connector starts, naming the key.

- ``trigger.mode`` (STRING, ``processingtime`` or ``realtime``, default ``processingtime``): Spark's
  trigger. ``realtime`` runs the at-least-once copy in Spark's real-time mode (``Trigger.RealTime``,
  Spark 4.1+): long-running batches of ``trigger.realtime.batch.duration.ms`` (default 5000) during
  which each record is copied as it arrives; it needs a core per subscribed partition for the whole
  batch (refused otherwise) and is refused with ``exactly.once.support=required``.
- ``async.progress.tracking.enabled`` (BOOLEAN, default true): Spark's asynchronous progress tracking
  for the at-least-once copy (micro-batches do not wait for the checkpoint's offset and commit logs;
  they are written every ``async.progress.tracking.checkpoint.interval.ms``, default 1000). A restart
  may then replay what was copied since the last checkpoint write; sparkcat starts from the offsets
  store instead when it is ahead (see docs/running.md, Resuming), so the replay is at most the batches whose
  progress had not reached the store. Refused with ``exactly.once.support=required``.

How records are written
-----------------------
Records never pass through Python: the copy is a native sink (``KafkaSinkConnector.native_write``,
``sparkcat.connectors.kafka_copy``): one streaming query from Spark's Kafka source to Spark's Kafka
sink (at least once) or to sparkcat's exactly-once writer in the JVM (``jvm/sparkcat``), on the
executors. Its positions, task statuses and metrics come from the query's progress. Spark's Kafka
sink has no timestamp column, so the timestamp travels in a reserved header that sparkcat's producer
interceptor (``org.sparkcat.kafka.HeaderTimestampInterceptor``, built from ``jvm/sparkcat``) turns back
into the record's timestamp.

Partitions
----------
A record keeps its partition number when the target topic has that partition (always the case
for targets this connector creates); otherwise the producer's partitioner picks one (by key hash
when the record has a key). The partition counts of target topics are looked up again every
``METADATA_MAX_AGE_S`` seconds, so partitions added to a target are used.

Delivery guarantee
------------------
``exactly.once.support=requested`` (default): at-least-once: the write of a micro-batch ends only
when every record is acknowledged (``acks=all``), and any delivery error fails the micro-batch;
Spark then replays it from the query's checkpoint, so nothing is lost, and a replay may write
records of the failed attempt a second time. Within a partition the order of the source is kept
(idempotent producer). Record headers are copied too (order and repeated keys kept).

``exactly.once.support=required`` (a sparkcat extension for sinks): exactly once, for readers
reading ``read_committed``. Each task's share of a micro-batch is one Kafka transaction of a Java
producer (``transactional.id`` ``{group.id}-{connector}-{task}``, Connect's pattern) in sparkcat's
exactly-once writer, which also carries the task's positions in the offsets topic and the driver's
leader lease, so the target must be the worker's cluster (``target.bootstrap.servers`` unset;
``exactly_once_support`` says UNSUPPORTED otherwise). The same records as the at-least-once path.
A replayed batch skips the records below the committed positions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from sparkcat import __version__
from sparkcat.api.configured import ConfiguredConnector, Versioned
from sparkcat.api.connector import CopiesConfigToTasks, ExactlyOnceSupport, SinkConnector, SinkTask
from sparkcat.api.native import NativeWrite, NativeWriteContext
from sparkcat.api.records import SinkRecord
from sparkcat.connectors.kafka_sink_settings import (
    CONFIG_DEF,
    COPY_PRODUCER_DEFAULTS,
    METADATA_MAX_AGE_S,
    TARGET_BOOTSTRAP_CONFIG,
    TASK_ID_CONFIG,
    TopicRouter,
    check_kafka_sink_config,
    exactly_once_required,
    producer_overrides,
    target_servers,
    target_topic,
)
from sparkcat.errors import ConnectorError

__all__ = ["KafkaSinkConnector", "KafkaSinkTask", "CONFIG_DEF", "TopicRouter", "target_topic", "target_servers",
           "producer_overrides", "COPY_PRODUCER_DEFAULTS", "METADATA_MAX_AGE_S", "exactly_once_required"]


class KafkaSinkConnector(ConfiguredConnector, CopiesConfigToTasks, SinkConnector):
    """Hands ``tasks.max`` copies of its config to tasks; the runtime splits the topic-partitions."""

    task_id_key = TASK_ID_CONFIG
    plugin_version = __version__
    definition = CONFIG_DEF

    def check_config(self, config: dict[str, str]) -> None:
        check_kafka_sink_config(config)

    def task_class(self) -> type[KafkaSinkTask]:
        return KafkaSinkTask

    def native_write(self, context: NativeWriteContext) -> NativeWrite:
        """Spark copies the records itself (``sparkcat.connectors.kafka_copy``); no task's ``put`` is called."""
        from sparkcat.connectors.kafka_copy import native_copy  # pyspark: imported where the query starts
        return native_copy(context.config, context)

    def exactly_once_support(self, config: Mapping[str, str]) -> ExactlyOnceSupport:
        """Supported when the copy writes to the worker's own cluster, where its positions live (the offsets
        topic): records and positions then go in one transaction. Not for another target cluster."""
        if str(config.get(TARGET_BOOTSTRAP_CONFIG) or "").strip():
            return ExactlyOnceSupport.UNSUPPORTED
        return ExactlyOnceSupport.SUPPORTED


class KafkaSinkTask(Versioned, SinkTask):
    """The copy's task. Its records never reach Python: Spark writes them (``KafkaSinkConnector.native_write``),
    so ``put`` is never called; the task carries its config and id as any task does."""

    plugin_version = __version__

    def start(self, config: dict[str, str]) -> None:
        check_kafka_sink_config(config)

    def put(self, records: Iterable[SinkRecord]) -> None:
        raise ConnectorError("the kafka sink's records are written by Spark (KafkaSinkConnector.native_write), "
                             "never through put")

    def stop(self) -> None:
        pass
