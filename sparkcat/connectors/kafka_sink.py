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

import re
from collections.abc import Iterable, Mapping, Sequence

from sparkcat import __version__
from sparkcat.api.config import ConfigDef, Custom, Importance, Range, Type, ValidString
from sparkcat.api.connector import CopiesConfigToTasks, ExactlyOnceSupport, SinkConnector, SinkTask
from sparkcat.api.native import NativeWrite, NativeWriteContext
from sparkcat.api.records import SinkRecord
from sparkcat.errors import ConfigError, ConnectorError
from sparkcat.kafka.client_settings import ClientKind, connector_overrides

__all__ = ["KafkaSinkConnector", "KafkaSinkTask", "CONFIG_DEF", "TopicRouter", "target_topic", "target_servers",
           "producer_overrides", "COPY_PRODUCER_DEFAULTS", "METADATA_MAX_AGE_S", "exactly_once_required"]

TARGET_TOPIC_FORMAT_CONFIG = "target.topic.format"
TARGET_BOOTSTRAP_CONFIG = "target.bootstrap.servers"
TARGET_TOPIC_CREATE_CONFIG = "target.topic.create"
TARGET_REPLICATION_CONFIG = "target.topic.replication.factor"
TRIGGER_MODE_CONFIG = "trigger.mode"
REAL_TIME_BATCH_CONFIG = "trigger.realtime.batch.duration.ms"
ASYNC_PROGRESS_CONFIG = "async.progress.tracking.enabled"
ASYNC_PROGRESS_INTERVAL_CONFIG = "async.progress.tracking.checkpoint.interval.ms"
TASK_ID_CONFIG = "task.id"
TOPIC_PLACEHOLDER = "${topic}"
DEFAULT_FORMAT = "${topic}.copy"
METADATA_MAX_AGE_S = 30.0
METADATA_TIMEOUT_S = 30.0
BYTE_ARRAY_CONVERTERS = frozenset({"org.apache.kafka.connect.converters.ByteArrayConverter", "ByteArrayConverter",
                                   "bytearray", "bytes"})

# Throughput defaults for the copy's (Java) producer; worker settings and producer.override.* win.
# Measured earlier with the Python producer (bench/RESULTS.md): lz4 beat none, and big linger/batches
# cost nothing in latency, as Spark's writer flushes at the end of each write task.
COPY_PRODUCER_DEFAULTS: dict[str, str] = {
    "enable.idempotence": "true",
    "acks": "all",
    "linger.ms": "100",
    "batch.size": "1000000",
    "compression.type": "lz4",
    "delivery.timeout.ms": "120000",
}

_PLACEHOLDER = re.compile(r"\$\{([^}]*)\}")
_TOPIC_CHARS = re.compile(r"[a-zA-Z0-9._-]*")


def _check_format(name: str, value: str | None) -> str | None:
    """Only ``${topic}`` may be substituted, and the rest must be legal topic characters."""
    if value is None or not value.strip():
        return "must not be empty"
    unknown = [m for m in _PLACEHOLDER.findall(value) if m != "topic"]
    if unknown:
        return f"unknown placeholder ${{{unknown[0]}}}; only {TOPIC_PLACEHOLDER} is replaced"
    static = _PLACEHOLDER.sub("", value)
    if not _TOPIC_CHARS.fullmatch(static):
        return "may only contain ASCII letters, digits, '.', '_', '-' besides ${topic}"
    return None


CONFIG_DEF: ConfigDef = (
    ConfigDef()
    .define(TARGET_TOPIC_FORMAT_CONFIG, Type.STRING, DEFAULT_FORMAT, Custom(_check_format, "a topic name format"),
            Importance.HIGH, "The target topic of each source topic; ${topic} is replaced by the source topic.")
    .define(TARGET_BOOTSTRAP_CONFIG, Type.STRING, "", None, Importance.HIGH,
            "Kafka to write to; empty means the worker's bootstrap.servers (the cluster the records come from).")
    .define(TARGET_TOPIC_CREATE_CONFIG, Type.BOOLEAN, True, None, Importance.MEDIUM,
            "Create a missing target topic with the partition count of its source topic.")
    .define(TARGET_REPLICATION_CONFIG, Type.SHORT, -1, None, Importance.LOW,
            "Replication factor of target topics this connector creates; -1 means the broker's default.")
    .define(TRIGGER_MODE_CONFIG, Type.STRING, "processingtime", ValidString.in_ignore_case("processingtime", "realtime"),
            Importance.MEDIUM, "Spark's trigger: 'processingtime' runs micro-batches every trigger.interval.ms; "
            "'realtime' runs Spark's real-time mode (long batches that copy each record as it arrives; one core per "
            "subscribed partition; at least once only).")
    .define(REAL_TIME_BATCH_CONFIG, Type.LONG, 5000, Range.at_least(5000), Importance.LOW,
            "With trigger.mode=realtime: the duration of one real-time batch, after which positions are stored "
            "(Spark's minimum, spark.sql.streaming.realTimeMode.minBatchDuration, is 5000).")
    .define(ASYNC_PROGRESS_CONFIG, Type.BOOLEAN, True, None, Importance.LOW,
            "Spark's asynchronous progress tracking for the at-least-once copy: batches do not wait for checkpoint "
            "writes; a restart may replay what was copied since the last one (the offsets store, when ahead, limits "
            "that). Not with exactly.once.support=required.")
    .define(ASYNC_PROGRESS_INTERVAL_CONFIG, Type.LONG, 1000, Range.at_least(0), Importance.LOW,
            "With asynchronous progress tracking: how often the checkpoint's offset and commit logs are written.")
    .freeze()
)
"""The connector's keys; task configs carry the same keys plus ``task.id``."""


def target_topic(fmt: str, topic: str) -> str:
    """The target of ``topic`` under ``target.topic.format``."""
    return fmt.replace(TOPIC_PLACEHOLDER, topic)


def _check_converters(config: dict[str, str]) -> None:
    for key in ("key.converter", "value.converter"):
        value = str(config.get(key) or "").strip()
        if value and value not in BYTE_ARRAY_CONVERTERS:
            raise ConfigError(
                f"{key}={value}: the kafka sink copies keys and values as bytes; leave {key} unset or use "
                f"org.apache.kafka.connect.converters.ByteArrayConverter", {key: ["must be ByteArrayConverter"]})


class TopicRouter:
    """Source topic -> target topic, refusing targets that would feed the copy back into itself."""

    def __init__(self, fmt: str, topics: Sequence[str], topics_regex: str | None, same_cluster: bool) -> None:
        self.fmt = fmt
        self.topics = frozenset(topics)
        self.regex = re.compile(topics_regex) if topics_regex else None
        self.same_cluster = same_cluster
        self._cache: dict[str, str] = {}

    def subscribed(self, topic: str) -> bool:
        if self.regex is not None:
            return self.regex.fullmatch(topic) is not None and not topic.startswith("__")
        return topic in self.topics

    def __call__(self, topic: str) -> str:
        target = self._cache.get(topic)
        if target is None:
            target = target_topic(self.fmt, topic)
            if self.same_cluster and self.subscribed(target):
                raise ConnectorError(
                    f"target topic {target!r} of {topic!r} is itself one of the subscribed topics on the same "
                    f"cluster: the copy would feed itself; change {TARGET_TOPIC_FORMAT_CONFIG} or the subscription")
            self._cache[topic] = target
        return target

    @classmethod
    def of(cls, config: dict[str, str], same_cluster: bool) -> TopicRouter:
        parsed = CONFIG_DEF.parse(config)
        topics = [t.strip() for t in str(config.get("topics") or "").split(",") if t.strip()]
        regex = str(config.get("topics.regex") or "").strip() or None
        return cls(parsed[TARGET_TOPIC_FORMAT_CONFIG], topics, regex, same_cluster)


# ---------------------------------------------------------------- the target cluster's clients


def target_servers(config: dict[str, str], worker_bootstrap: str) -> str:
    """The cluster the copy writes to: ``target.bootstrap.servers``, else the worker's own."""
    servers = str(config.get(TARGET_BOOTSTRAP_CONFIG) or "").strip() or worker_bootstrap
    if not servers:
        raise ConfigError(f"the kafka sink needs {TARGET_BOOTSTRAP_CONFIG} or a worker with bootstrap.servers",
                          {TARGET_BOOTSTRAP_CONFIG: ["no Kafka to write to"]})
    return servers


def producer_overrides(config: dict[str, str]) -> dict[str, str]:
    """The connector's ``producer.override.*`` settings (prefix stripped), refusing those the writer cannot honour.

    The copy is written by Spark's Kafka writer, a Java producer: its keys and values are
    always ``ByteArraySerializer``, it has no transactions, and librdkafka's own names (which
    the Python producer of earlier versions took) would be ignored with only a log warning.
    """
    overrides = connector_overrides(config, ClientKind.PRODUCER)
    errors: dict[str, list[str]] = {}
    for key in overrides:
        reason = REFUSED_PRODUCER_KEYS.get(key)
        if reason is None and key in LIBRDKAFKA_PRODUCER_KEYS:
            java = LIBRDKAFKA_PRODUCER_KEYS[key]
            reason = ("a librdkafka setting the Java producer does not know"
                      + (f"; use {PRODUCER_OVERRIDE_PREFIX}{java}" if java else ""))
        if reason is not None:
            errors[PRODUCER_OVERRIDE_PREFIX + key] = [reason]
    if errors:
        raise ConfigError("the kafka sink writes with Spark's Kafka writer, which cannot honour "
                          + "; ".join(f"{k} ({v[0]})" for k, v in sorted(errors.items())), errors)
    return overrides


PRODUCER_OVERRIDE_PREFIX = "producer.override."

#: ``producer.override.*`` keys Spark's Kafka writer cannot honour, and why.
REFUSED_PRODUCER_KEYS: dict[str, str] = {
    "key.serializer": "Spark's Kafka writer always serializes keys with ByteArraySerializer",
    "value.serializer": "Spark's Kafka writer always serializes values with ByteArraySerializer",
    "transactional.id": "the copy names its own transactional ids ({group.id}-{connector}-{task}) with "
                        "exactly.once.support=required, and writes without transactions otherwise",
    "bootstrap.servers": f"the cluster to write to is {TARGET_BOOTSTRAP_CONFIG}",
}

#: librdkafka producer settings without a Java equivalent of that name -> the Java name (None: none).
LIBRDKAFKA_PRODUCER_KEYS: dict[str, str | None] = {
    "message.timeout.ms": "delivery.timeout.ms",
    "queue.buffering.max.ms": "linger.ms",
    "queue.buffering.max.kbytes": "buffer.memory",
    "queue.buffering.max.messages": None,
    "batch.num.messages": None,
    "compression.codec": "compression.type",
    "delivery.report.only.error": None,
}



# ---------------------------------------------------------------- connector and task


def exactly_once_required(config: Mapping[str, object]) -> bool:
    """Whether ``exactly.once.support`` is ``required`` (case-insensitive, as Connect reads it)."""
    return str(config.get("exactly.once.support") or "requested").strip().lower() == "required"


def _check_kafka_sink_config(config: dict[str, str]) -> None:
    """Parse the keys, refuse converters the copy cannot honour, bad producer overrides, and an exactly-once copy
    asked for what only the at-least-once one does."""
    parsed = CONFIG_DEF.parse(config)
    _check_converters(config)
    producer_overrides(config)
    if not exactly_once_required(config):
        return
    if str(parsed[TRIGGER_MODE_CONFIG]).lower() == "realtime":
        raise ConfigError("trigger.mode=realtime runs Spark's own Kafka sink, which has no transactions; it cannot "
                          "be combined with exactly.once.support=required", {TRIGGER_MODE_CONFIG: ["at least once only"]})
    if str(config.get(ASYNC_PROGRESS_CONFIG) or "").strip().lower() == "true":
        raise ConfigError("async.progress.tracking.enabled=true is Spark's Kafka sink's; the exactly-once copy "
                          "commits each batch in transactions and tracks progress synchronously",
                          {ASYNC_PROGRESS_CONFIG: ["at least once only"]})


class KafkaSinkConnector(CopiesConfigToTasks, SinkConnector):
    """Hands ``tasks.max`` copies of its config to tasks; the runtime splits the topic-partitions."""

    task_id_key = TASK_ID_CONFIG

    def version(self) -> str:
        return __version__

    def config_def(self) -> ConfigDef:
        return CONFIG_DEF

    def check_config(self, config: dict[str, str]) -> None:
        _check_kafka_sink_config(config)

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


class KafkaSinkTask(SinkTask):
    """The copy's task. Its records never reach Python: Spark writes them (``KafkaSinkConnector.native_write``),
    so ``put`` is never called; the task carries its config and id as any task does."""

    def version(self) -> str:
        return __version__

    def start(self, config: dict[str, str]) -> None:
        _check_kafka_sink_config(config)

    def put(self, records: Iterable[SinkRecord]) -> None:
        raise ConnectorError("the kafka sink's records are written by Spark (KafkaSinkConnector.native_write), "
                             "never through put")

    def stop(self) -> None:
        pass
