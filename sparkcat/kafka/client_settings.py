"""The one owner of Kafka client settings: the worker's ``kafka.*`` and a connector's overrides, per client kind.

Kafka Connect builds every client's settings in one place (``Worker.baseProducerConfigs``,
``baseConsumerConfigs``, ``adminConfigs``); this module is sparkcat's counterpart, used by every client
it creates: the stores and leader election, the Python producers of source connectors and dead letter
queues, the admin clients of sink input and consumer groups, and Spark's Kafka source and writer.

The layers, each winning over the one before:

1. the caller's defaults (sparkcat's throughput or safety defaults for that client);
2. the worker's ``kafka.*`` settings (the ``worker_kafka`` mapping, ``kafka.`` already stripped):
   a key without a role prefix goes to every client, ``producer.x`` only to producers, ``consumer.x``
   only to consumers, ``admin.x`` only to admin clients (prefix stripped; it wins over the same key
   unprefixed);
3. the connector's ``producer.override.*`` / ``consumer.override.*`` / ``admin.override.*``
   (``connector_overrides``), for the clients of that connector;
4. ``bootstrap.servers``, always the caller's.

Then the result is put in the dialect of the client that takes it (``client_dialects``: librdkafka's
``sasl.mechanisms`` or Java's ``sasl.mechanism``, ``ssl.ca.location`` or ``ssl.truststore.location``):
``producer_settings``, ``consumer_settings`` and ``admin_settings`` for confluent-kafka clients;
``spark_source_options`` and ``spark_writer_options`` for Spark's Kafka source and writer (Java names,
``kafka.``-prefixed, without the keys Spark sets itself).
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from typing import Any

from sparkcat.kafka.client_dialects import ClientSettingsError, to_java, to_librdkafka

__all__ = ["ClientKind", "ClientSettingsError", "ROLE_PREFIXES", "role_settings", "connector_overrides",
           "connection_settings", "producer_settings", "consumer_settings", "admin_settings", "spark_source_options",
           "spark_writer_options", "java_producer_settings", "java_admin_settings", "SPARK_SOURCE_REFUSED", "SPARK_WRITER_REFUSED",
           "WORKER_REFUSED", "worker_setting_errors"]


class ClientKind(Enum):
    """A kind of Kafka client; its value is the role prefix of worker keys and connector overrides."""

    PRODUCER = "producer"
    CONSUMER = "consumer"
    ADMIN = "admin"


#: ``producer.``, ``consumer.``, ``admin.``: a worker key under one of these is for that kind of client only.
ROLE_PREFIXES = tuple(f"{kind.value}." for kind in ClientKind)
#: Options the Java consumer of Spark's Kafka source refuses (it manages them itself).
SPARK_SOURCE_REFUSED = frozenset({"auto.offset.reset", "enable.auto.commit", "key.deserializer", "value.deserializer",
                                  "interceptor.classes", "group.id", "bootstrap.servers"})
#: Options Spark's Kafka writer refuses (keys and values are always bytes).
SPARK_WRITER_REFUSED = frozenset({"key.serializer", "value.serializer"})
#: Worker ``kafka.*`` settings sparkcat's clients set themselves -> the roles they concern, and why a worker value
#: cannot be honoured. Spark's Kafka source and writer dropped them, and any of them would have overridden what
#: the stores' own consumers and producers need (e.g. ``enable.auto.commit``), so they are refused.
WORKER_REFUSED: dict[str, tuple[frozenset[ClientKind], str]] = {
    "auto.offset.reset": (frozenset({ClientKind.CONSUMER}),
                          "a sink starts each partition at its stored offsets, else at the earliest offset (Connect's "
                          "default for sinks); reset a sink's positions with PATCH /connectors/NAME/offsets"),
    "enable.auto.commit": (frozenset({ClientKind.CONSUMER}),
                           "sparkcat commits a sink's offsets itself after each batch its tasks wrote"),
    "key.deserializer": (frozenset({ClientKind.CONSUMER}), "keys are read as bytes and turned into data by the "
                                                          "connector's key.converter"),
    "value.deserializer": (frozenset({ClientKind.CONSUMER}), "values are read as bytes and turned into data by the "
                                                            "connector's value.converter"),
    "key.serializer": (frozenset({ClientKind.PRODUCER}), "keys are written as the bytes the connector's "
                                                        "key.converter made"),
    "value.serializer": (frozenset({ClientKind.PRODUCER}), "values are written as the bytes the connector's "
                                                          "value.converter made"),
    "group.id": (frozenset(ClientKind), "sparkcat names its consumer groups itself: the worker's group.id, and "
                                        "connect-NAME for a sink's offsets"),
    "bootstrap.servers": (frozenset(ClientKind), "the cluster is the worker's bootstrap.servers (a top-level key)"),
}


def worker_setting_errors(worker_kafka: Mapping[str, Any]) -> dict[str, str]:
    """The worker's ``kafka.*`` keys (``kafka.`` stripped) that sparkcat refuses -> why (``WORKER_REFUSED``).

    >>> worker_setting_errors({"consumer.auto.offset.reset": "latest", "producer.auto.offset.reset": "x",
    ...                        "acks": "all", "group.id": "g"})  # doctest: +NORMALIZE_WHITESPACE
    {'consumer.auto.offset.reset': "a sink starts each partition at its stored offsets, else at the earliest offset
      (Connect's default for sinks); reset a sink's positions with PATCH /connectors/NAME/offsets",
     'group.id': "sparkcat names its consumer groups itself: the worker's group.id, and connect-NAME for a sink's
      offsets"}
    """
    out = {}
    for key in worker_kafka:
        role = next((kind for kind in ClientKind if str(key).startswith(f"{kind.value}.")), None)
        name = str(key)[len(role.value) + 1:] if role else str(key)
        refused = WORKER_REFUSED.get(name)
        if refused is not None and (role is None or role in refused[0]):
            out[str(key)] = refused[1]
    return out


#: What identifies a cluster and authenticates to it: the part of one client's settings another client of the
#: same cluster can reuse (the copy's admin client of a target cluster, from the producer's overrides).
_CONNECTION_PREFIXES = ("security.", "sasl.", "ssl.")


def role_settings(worker_kafka: Mapping[str, Any], kind: ClientKind) -> dict[str, str]:
    """The worker's settings for one kind of client: unprefixed keys, then its role's keys without the prefix.

    >>> role_settings({"acks": "1", "producer.acks": "all", "consumer.fetch.min.bytes": "1", "admin.x": "y",
    ...                "security.protocol": "SSL"}, ClientKind.PRODUCER)
    {'acks': 'all', 'security.protocol': 'SSL'}
    """
    own = f"{kind.value}."
    out = {str(k): str(v) for k, v in worker_kafka.items() if not str(k).startswith(ROLE_PREFIXES)}
    out.update({str(k)[len(own):]: str(v) for k, v in worker_kafka.items() if str(k).startswith(own)})
    return out


def connector_overrides(connector_config: Mapping[str, Any], kind: ClientKind) -> dict[str, str]:
    """A connector's ``<kind>.override.*`` settings, prefix stripped (Connect's client config overrides).

    >>> connector_overrides({"producer.override.linger.ms": "5", "consumer.override.x": "1"}, ClientKind.PRODUCER)
    {'linger.ms': '5'}
    """
    prefix = f"{kind.value}.override."
    return {str(k)[len(prefix):]: str(v) for k, v in connector_config.items() if str(k).startswith(prefix)}


def connection_settings(settings: Mapping[str, Any]) -> dict[str, str]:
    """Only the settings that say how to reach and authenticate to a cluster (``security.*``, ``sasl.*``, ``ssl.*``).

    >>> connection_settings({"security.protocol": "SSL", "linger.ms": "5"})
    {'security.protocol': 'SSL'}
    """
    return {str(k): str(v) for k, v in settings.items() if str(k).startswith(_CONNECTION_PREFIXES)}


def _merged(kind: ClientKind, worker_kafka: Mapping[str, Any], overrides: Mapping[str, Any] | None,
            defaults: Mapping[str, Any] | None) -> dict[str, Any]:
    """Defaults < the worker's settings for ``kind`` < the connector's overrides (see the module doc)."""
    out: dict[str, Any] = dict(defaults or {})
    out.update(role_settings(worker_kafka, kind))
    out.update({str(k): str(v) for k, v in (overrides or {}).items()})
    return out


def _librdkafka(kind: ClientKind, bootstrap: str, worker_kafka: Mapping[str, Any],
                overrides: Mapping[str, Any] | None, defaults: Mapping[str, Any] | None) -> dict[str, Any]:
    conf = to_librdkafka(_merged(kind, worker_kafka, overrides, defaults))
    conf["bootstrap.servers"] = bootstrap
    return conf


def producer_settings(bootstrap: str, worker_kafka: Mapping[str, Any], overrides: Mapping[str, Any] | None = None,
                      defaults: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A confluent-kafka Producer's settings (Connect's ``Worker.baseProducerConfigs`` + ``producer.override.*``).

    >>> producer_settings("b:9092", {"producer.acks": "all", "consumer.fetch.min.bytes": "1"}, {"linger.ms": "5"})
    {'acks': 'all', 'linger.ms': '5', 'bootstrap.servers': 'b:9092'}
    """
    return _librdkafka(ClientKind.PRODUCER, bootstrap, worker_kafka, overrides, defaults)


def consumer_settings(bootstrap: str, worker_kafka: Mapping[str, Any], overrides: Mapping[str, Any] | None = None,
                      defaults: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A confluent-kafka Consumer's settings (Connect's ``Worker.baseConsumerConfigs`` + ``consumer.override.*``)."""
    return _librdkafka(ClientKind.CONSUMER, bootstrap, worker_kafka, overrides, defaults)


def admin_settings(bootstrap: str, worker_kafka: Mapping[str, Any], overrides: Mapping[str, Any] | None = None,
                   defaults: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A confluent-kafka AdminClient's settings (Connect's ``Worker.adminConfigs`` + ``admin.override.*``).

    >>> admin_settings("b:9092", {"producer.acks": "all", "admin.request.timeout.ms": "9000"})
    {'request.timeout.ms': '9000', 'bootstrap.servers': 'b:9092'}
    """
    return _librdkafka(ClientKind.ADMIN, bootstrap, worker_kafka, overrides, defaults)


def _java_settings(kind: ClientKind, refused: frozenset[str], bootstrap: str, worker_kafka: Mapping[str, Any],
                   overrides: Mapping[str, Any] | None, defaults: Mapping[str, Any] | None) -> dict[str, str]:
    conf = to_java(_merged(kind, worker_kafka, overrides, defaults))
    settings = {k: str(v) for k, v in sorted(conf.items()) if k not in refused}
    settings["bootstrap.servers"] = bootstrap
    return settings


def _spark_options(kind: ClientKind, refused: frozenset[str], bootstrap: str, worker_kafka: Mapping[str, Any],
                   overrides: Mapping[str, Any] | None, defaults: Mapping[str, Any] | None) -> dict[str, str]:
    java = _java_settings(kind, refused, bootstrap, worker_kafka, overrides, defaults)
    return {f"kafka.{k}": v for k, v in java.items()}


def spark_source_options(bootstrap: str, worker_kafka: Mapping[str, Any], overrides: Mapping[str, Any] | None = None,
                         defaults: Mapping[str, Any] | None = None) -> dict[str, str]:
    """``kafka.``-prefixed options of Spark's Kafka source (a Java consumer): the consumer's settings in Java names.

    Keys Spark's source sets itself (``group.id``, ``auto.offset.reset``, deserializers, ...) are left out.

    >>> spark_source_options("b:9092", {"consumer.fetch.min.bytes": "1", "group.id": "g", "sasl.mechanisms": "PLAIN"})
    {'kafka.fetch.min.bytes': '1', 'kafka.sasl.mechanism': 'PLAIN', 'kafka.bootstrap.servers': 'b:9092'}
    """
    return _spark_options(ClientKind.CONSUMER, SPARK_SOURCE_REFUSED, bootstrap, worker_kafka, overrides, defaults)


def spark_writer_options(bootstrap: str, worker_kafka: Mapping[str, Any], overrides: Mapping[str, Any] | None = None,
                         defaults: Mapping[str, Any] | None = None) -> dict[str, str]:
    """``kafka.``-prefixed options of Spark's Kafka writer or sparkcat's JVM writer (Java producers).

    >>> spark_writer_options("b:9092", {"producer.acks": "all", "admin.retries": "1", "key.serializer": "x"})
    {'kafka.acks': 'all', 'kafka.bootstrap.servers': 'b:9092'}
    """
    return _spark_options(ClientKind.PRODUCER, SPARK_WRITER_REFUSED, bootstrap, worker_kafka, overrides, defaults)


def java_producer_settings(bootstrap: str, worker_kafka: Mapping[str, Any],
                           overrides: Mapping[str, Any] | None = None) -> dict[str, str]:
    """A Java producer's settings in Java names, unprefixed (the Kafka Connect host's producers); serializers are
    the host's to set, as for Spark's writer.

    >>> java_producer_settings("b:9092", {"producer.acks": "all", "sasl.mechanisms": "PLAIN", "key.serializer": "x"})
    {'acks': 'all', 'sasl.mechanism': 'PLAIN', 'bootstrap.servers': 'b:9092'}
    """
    return _java_settings(ClientKind.PRODUCER, SPARK_WRITER_REFUSED, bootstrap, worker_kafka, overrides, None)


def java_admin_settings(bootstrap: str, worker_kafka: Mapping[str, Any],
                        overrides: Mapping[str, Any] | None = None) -> dict[str, str]:
    """A Java AdminClient's settings in Java names, unprefixed (a Java source task's topic creation in the Kafka
    Connect host: the worker's settings for admins, then ``admin.override.*``, as Connect's ``Worker.adminConfigs``).

    >>> java_admin_settings("b:9092", {"admin.request.timeout.ms": "9000", "producer.acks": "all"})
    {'request.timeout.ms': '9000', 'bootstrap.servers': 'b:9092'}
    """
    return _java_settings(ClientKind.ADMIN, frozenset(), bootstrap, worker_kafka, overrides, None)
