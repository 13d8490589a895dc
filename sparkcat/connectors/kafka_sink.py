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
- Producer settings: ``producer.override.*`` (e.g. ``producer.override.compression.type=none``).
  Defaults favour throughput: lz4, ``linger.ms=100``, 1 MB batches, idempotence with
  ``acks=all``. The end of every micro-batch flushes, so linger never delays a batch's commit.

Partitions
----------
A record keeps its partition number when the target topic has that partition (always the case
for targets this connector creates); otherwise the producer's partitioner picks one (by key hash
when the record has a key). The partition counts of target topics are looked up again every
``METADATA_MAX_AGE_S`` seconds, so partitions added to a target are used.

Delivery guarantee
------------------
At-least-once: ``flush`` returns only when every record of the micro-batch is acknowledged
(``acks=all``) and raises on any delivery error, which fails the micro-batch; Spark then replays it
from the query's checkpoint, so nothing is lost, and a replay may write records of the failed
attempt a second time. Within a partition the order of the source is kept (idempotent producer).
Record headers are copied too (order and repeated keys kept).

The runtime reads the source topics with Spark's Kafka source and hands each task its records
as ``SinkRecord`` objects with the bytes of Kafka (``wants_raw_bytes``: no converter runs).
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Iterable, Sequence
from typing import Any

from sparkcat import __version__
from sparkcat.api.config import ConfigDef, Custom, Importance, Type
from sparkcat.api.connector import SinkConnector, SinkTask
from sparkcat.api.records import SinkRecord
from sparkcat.errors import ConfigError, ConnectorError

__all__ = ["KafkaSinkConnector", "KafkaSinkTask", "CONFIG_DEF", "TopicRouter", "target_topic",
           "copy_producer_config", "close_cached_producers"]

log = logging.getLogger(__name__)
_CLIENT_LOG = logging.getLogger("sparkcat.connectors.kafka_sink.client")  # librdkafka's own messages

TARGET_TOPIC_FORMAT_CONFIG = "target.topic.format"
TARGET_BOOTSTRAP_CONFIG = "target.bootstrap.servers"
TARGET_TOPIC_CREATE_CONFIG = "target.topic.create"
TARGET_REPLICATION_CONFIG = "target.topic.replication.factor"
TASK_ID_CONFIG = "task.id"
TOPIC_PLACEHOLDER = "${topic}"
DEFAULT_FORMAT = "${topic}.copy"
METADATA_MAX_AGE_S = 30.0
METADATA_TIMEOUT_S = 30.0
BYTE_ARRAY_CONVERTERS = frozenset({"org.apache.kafka.connect.converters.ByteArrayConverter", "ByteArrayConverter",
                                   "bytearray", "bytes"})

# Throughput defaults for the copy's producer; worker settings and producer.override.* win.
# Measured (bench/RESULTS.md): lz4 beat none, and big linger/batches cost nothing in
# latency because every micro-batch ends with flush(), which sends at once whatever lingers.
COPY_PRODUCER_DEFAULTS: dict[str, str] = {
    "enable.idempotence": "true",
    "acks": "all",
    "linger.ms": "100",
    "batch.size": "1000000",
    "batch.num.messages": "100000",
    "queue.buffering.max.messages": "1000000",
    "queue.buffering.max.kbytes": "1048576",
    "message.timeout.ms": "120000",
    "delivery.report.only.error": "true",
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


# ---------------------------------------------------------------- producers and metadata (per process)


def _lz4_available() -> bool:
    from confluent_kafka import KafkaException, Producer
    try:
        Producer({"builtin.features": "lz4", "log_level": 0})
        return True
    except KafkaException:
        return False


_LZ4: list[bool] = []


def _has_lz4() -> bool:
    if not _LZ4:
        _LZ4.append(_lz4_available())
    return _LZ4[0]


def copy_producer_config(config: dict[str, str], worker_bootstrap: str,
                         worker_kafka: dict[str, str] | None = None) -> dict[str, str]:
    """The producer settings of a copy task: defaults < worker settings (same cluster only) < overrides."""
    target = str(config.get(TARGET_BOOTSTRAP_CONFIG) or "").strip()
    conf = dict(COPY_PRODUCER_DEFAULTS)
    conf["compression.type"] = "lz4" if _has_lz4() else "none"
    if not target or target == worker_bootstrap:
        for key, value in (worker_kafka or {}).items():
            if key.startswith(("consumer.", "admin.")):
                continue
            conf[key.removeprefix("producer.")] = str(value)
    for key, value in config.items():
        if key.startswith("producer.override."):
            conf[key[len("producer.override."):]] = str(value)
    conf["bootstrap.servers"] = target or worker_bootstrap
    if not conf["bootstrap.servers"]:
        raise ConfigError(f"the kafka sink needs {TARGET_BOOTSTRAP_CONFIG} or a worker with bootstrap.servers",
                          {TARGET_BOOTSTRAP_CONFIG: ["no Kafka to write to"]})
    return conf


class _Errors:
    """Delivery errors of the producer it belongs to (only failures are reported)."""

    def __init__(self) -> None:
        self.first: Any = None
        self.count = 0

    def __call__(self, err: Any, msg: Any) -> None:
        if err is not None:
            self.count += 1
            if self.first is None:
                self.first = (err, msg.topic(), msg.partition())

    def reset(self) -> None:
        self.first, self.count = None, 0


class _CachedProducer:
    """One producer per (config) in this process, with its delivery errors and topic metadata."""

    def __init__(self, conf: dict[str, str]) -> None:
        from confluent_kafka import Producer
        self.errors = _Errors()
        settings: dict[str, Any] = dict(conf)
        if "delivery.report.only.error" in settings:  # a Python client setting: a real bool, not text
            settings["delivery.report.only.error"] = str(settings["delivery.report.only.error"]).lower() == "true"
        self.producer = Producer({**settings, "logger": _CLIENT_LOG, "on_delivery": self.errors})
        self.partitions: dict[str, tuple[float, int]] = {}

    def partition_count(self, topic: str) -> int:
        """Partitions of ``topic`` on the target (metadata at most METADATA_MAX_AGE_S old)."""
        cached = self.partitions.get(topic)
        now = time.monotonic()
        if cached is not None and now - cached[0] < METADATA_MAX_AGE_S:
            return cached[1]
        md = self.producer.list_topics(topic, timeout=METADATA_TIMEOUT_S).topics.get(topic)
        if md is None or md.error is not None or not md.partitions:
            raise ConnectorError(f"target topic {topic!r} is not available: {md.error if md is not None else 'missing'}")
        count = len(md.partitions)
        self.partitions[topic] = (now, count)
        return count


_PRODUCERS: dict[tuple[tuple[str, str], ...], _CachedProducer] = {}
_CREATED: set[tuple[str, str]] = set()
_LOCK = threading.Lock()


def _cached_producer(conf: dict[str, str]) -> _CachedProducer:
    key = tuple(sorted(conf.items()))
    with _LOCK:
        cached = _PRODUCERS.get(key)
        if cached is None:
            cached = _PRODUCERS[key] = _CachedProducer(conf)
        return cached


def _drop_producer(conf: dict[str, str]) -> None:
    """Forget a producer after a failure, dropping whatever it still queued (the batch is replayed)."""
    with _LOCK:
        cached = _PRODUCERS.pop(tuple(sorted(conf.items())), None)
    if cached is not None:
        try:
            cached.producer.purge()
            cached.producer.flush(0)
        except Exception:  # a broken producer: nothing more to release
            pass


def close_cached_producers() -> None:
    """Flush and forget every cached producer of this process (tests, shutdown)."""
    with _LOCK:
        cached = list(_PRODUCERS.values())
        _PRODUCERS.clear()
        _CREATED.clear()
    for c in cached:
        try:
            c.producer.flush(10)
        except Exception:
            pass


def _admin_settings(conf: dict[str, str]) -> dict[str, str]:
    """The connection settings of a producer config that an AdminClient accepts."""
    producer_only = set(COPY_PRODUCER_DEFAULTS) | {"compression.type", "compression.codec", "acks",
                                                    "enable.idempotence", "transactional.id",
                                                    "max.in.flight.requests.per.connection", "retries",
                                                    "partitioner", "sticky.partitioning.linger.ms"}
    return {k: v for k, v in conf.items() if k not in producer_only}


def _ensure_topic(target_conf: dict[str, str], source_conf: dict[str, str], source_topic: str, target: str,
                  replication: int) -> None:
    """Create ``target`` with the partition count of ``source_topic`` unless it exists (once per process)."""
    bootstrap = target_conf["bootstrap.servers"]
    if (bootstrap, target) in _CREATED:
        return
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({**_admin_settings(target_conf), "logger": _CLIENT_LOG})
    existing = admin.list_topics(timeout=METADATA_TIMEOUT_S).topics  # a full listing never auto-creates
    if target not in existing:
        src_admin = admin if source_conf["bootstrap.servers"] == bootstrap else \
            AdminClient({**_admin_settings(source_conf), "logger": _CLIENT_LOG})
        md = src_admin.list_topics(source_topic, timeout=METADATA_TIMEOUT_S).topics.get(source_topic)
        partitions = len(md.partitions) if md is not None and md.error is None and md.partitions else 1
        future = admin.create_topics([NewTopic(target, partitions, replication)])[target]
        try:
            future.result(timeout=METADATA_TIMEOUT_S)
            log.info("Created target topic %s with %d partition(s) at %s", target, partitions, bootstrap)
        except Exception as e:
            if "TOPIC_ALREADY_EXISTS" not in str(e):  # another task created it first: fine
                raise ConnectorError(f"creating target topic {target!r} at {bootstrap} failed: {e}") from e
    with _LOCK:
        _CREATED.add((bootstrap, target))


# ---------------------------------------------------------------- connector and task


class KafkaSinkConnector(SinkConnector):
    """Hands ``tasks.max`` copies of its config to tasks; the runtime splits the topic-partitions."""

    def __init__(self) -> None:
        self._props: dict[str, str] = {}

    def version(self) -> str:
        return __version__

    def config_def(self) -> ConfigDef:
        return CONFIG_DEF

    def start(self, config: dict[str, str]) -> None:
        CONFIG_DEF.parse(config)
        _check_converters(config)
        self._props = dict(config)

    def task_class(self) -> type[KafkaSinkTask]:
        return KafkaSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{**self._props, TASK_ID_CONFIG: str(i)} for i in range(max_tasks)]


class KafkaSinkTask(SinkTask):
    """Produces each record to its target topic; ``flush`` waits for every acknowledgement."""

    #: The runtime hands this task keys and values as the bytes in Kafka (no converter runs).
    wants_raw_bytes = True

    def __init__(self) -> None:
        self._context: Any = None
        self._config: dict[str, str] = {}
        self._conf: dict[str, str] = {}
        self._source_conf: dict[str, str] = {}
        self._cached: _CachedProducer | None = None
        self._router: TopicRouter | None = None
        self._create = True
        self._replication = -1
        self._targets: dict[str, tuple[str, int]] = {}
        self._unflushed = False

    def version(self) -> str:
        return __version__

    def initialize(self, context: Any) -> None:
        """The runtime's context: ``bootstrap_servers`` and ``kafka_config`` of the worker (Connect's SinkTaskContext)."""
        self._context = context

    def start(self, config: dict[str, str]) -> None:
        parsed = CONFIG_DEF.parse(config)
        _check_converters(config)
        worker_bootstrap = str(getattr(self._context, "bootstrap_servers", "") or "")
        worker_kafka = dict(getattr(self._context, "kafka_config", None) or {})
        self._config = dict(config)
        self._conf = copy_producer_config(config, worker_bootstrap, worker_kafka)
        source_settings = {k.removeprefix("admin."): str(v) for k, v in worker_kafka.items()
                           if not k.startswith(("consumer.", "producer."))}
        self._source_conf = {**source_settings, "bootstrap.servers": worker_bootstrap or self._conf["bootstrap.servers"]}
        same = self._conf["bootstrap.servers"] == self._source_conf["bootstrap.servers"]
        self._router = TopicRouter.of(config, same_cluster=same)
        self._create = bool(parsed[TARGET_TOPIC_CREATE_CONFIG])
        self._replication = int(parsed[TARGET_REPLICATION_CONFIG])
        self._targets = {}
        self._unflushed = False
        self._cached = _cached_producer(self._conf)
        self._cached.errors.reset()

    # ---- routing

    def _target(self, topic: str) -> tuple[str, int]:
        """(target topic, its partition count) for a source topic; creates the target when asked."""
        assert self._router is not None and self._cached is not None
        entry = self._targets.get(topic)
        if entry is None:
            target = self._router(topic)
            if self._create:
                _ensure_topic(self._conf, self._source_conf, topic, target, self._replication)
            entry = (target, self._cached.partition_count(target))
            self._targets[topic] = entry
        return entry

    # ---- writing

    def put(self, records: Iterable[SinkRecord]) -> None:
        """Queue each record (key and value bytes, or None) for its target topic, with its headers.

        The hot loop of a topic copy: one ``produce`` per record; a full local queue waits for
        deliveries and resumes.
        """
        cached = self._require()
        producer = cached.producer
        produce = producer.produce
        self._unflushed = True
        topic = target = None
        count = 0
        try:
            for r in records:
                if r.topic != topic:
                    topic = r.topic
                    target, count = self._target(topic)
                p = r.kafka_partition
                partition = p if p is not None and 0 <= p < count else -1
                value, key = r.value, r.key
                if not (value is None or type(value) is bytes) or not (key is None or type(key) is bytes):
                    value, key = _raw(value, "value"), _raw(key, "key")
                while True:
                    try:
                        produce(target, value, key, partition, timestamp=r.timestamp_ms or 0,
                                headers=r.headers or None)
                        break
                    except BufferError:
                        producer.poll(0.05)
            producer.poll(0)
            self._check_errors()
        except Exception:
            self._fail()
            raise

    def flush(self, batch_id: int) -> None:
        """Wait until every queued record is acknowledged; raise on any delivery error."""
        cached = self._require()
        try:
            timeout_s = int(self._conf.get("message.timeout.ms", "120000")) / 1000 + 30
            remaining = cached.producer.flush(timeout_s)
            self._check_errors()
            if remaining:
                raise ConnectorError(f"{remaining} record(s) not delivered to {self._conf['bootstrap.servers']} "
                                     f"within {timeout_s:g}s")
            self._unflushed = False
        except Exception:
            self._fail()
            raise

    def stop(self) -> None:
        """Keep the producer for the next micro-batch of this process; after records that were never
        flushed (the batch failed elsewhere) drop it with them, so a replay does not follow stale copies."""
        if self._unflushed and self._cached is not None:
            self._fail()
        self._cached = None

    # ---- helpers

    def _require(self) -> _CachedProducer:
        if self._cached is None:
            raise ConnectorError("KafkaSinkTask is not started")
        return self._cached

    def _check_errors(self) -> None:
        cached = self._cached
        if cached is not None and cached.errors.first is not None:
            err, topic, partition = cached.errors.first
            raise ConnectorError(f"delivery of {cached.errors.count} record(s) to "
                                 f"{self._conf['bootstrap.servers']} failed, first to {topic}:{partition}: {err}")

    def _fail(self) -> None:
        """After an error: drop the producer and what it still holds (the micro-batch is replayed)."""
        if self._conf:
            _drop_producer(self._conf)
        self._cached = None
        self._targets = {}


def _raw(value: Any, what: str) -> bytes | None:
    """A key or value as bytes (ByteArrayConverter's rule; text is accepted as UTF-8)."""
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str):
        return value.encode("utf-8")
    raise ConnectorError(f"the kafka sink copies bytes; a record {what} of type {type(value).__name__} "
                         f"cannot be written (ByteArrayConverter semantics)")
