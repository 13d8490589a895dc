"""The ``kafka`` sink's keys, their ConfigDef and checks, and the topic routing and producer settings they give:
shared by the connector (``kafka_sink``) and its native copy (``kafka_copy``).

What each key does is in ``kafka_sink``'s documentation.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from sparkcat.api.config import ConfigDef, Custom, Importance, Range, Type, ValidString
from sparkcat.errors import ConfigError, ConnectorError
from sparkcat.kafka.client_settings import ClientKind, connector_overrides

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
                f"{key}={value}: the kafka sink copies keys and values as bytes; leave {key} unset (here and in "
                f"the worker config, whose {key} connectors naming none inherit) or set "
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


def check_kafka_sink_config(config: dict[str, str]) -> None:
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
