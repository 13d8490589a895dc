"""The keys the framework adds to every connector: Connect's ``ConnectorConfig``,
``SourceConnectorConfig`` and ``SinkConnectorConfig``, plus sparkcat's "Spark" group.

A connector declares only its own keys (``Connector.config_def``); validation merges
them with ``SOURCE_CONNECTOR_CONFIG`` or ``SINK_CONNECTOR_CONFIG``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sparkcat.api.config import (
    NO_DEFAULT,
    ConfigDef,
    Custom,
    Importance,
    NonEmptyString,
    NonEmptyStringWithoutControlChars,
    Range,
    Type,
    ValidString,
    Validator,
    Width,
    config_error,
)
from sparkcat.config.plugin_versions import spec_problem

__all__ = ["COMMON_CONNECTOR_CONFIG", "SINK_CONNECTOR_CONFIG", "SOURCE_CONNECTOR_CONFIG"]


COMMON_GROUP = "Common"
TRANSFORMS_GROUP = "Transforms"
PREDICATES_GROUP = "Predicates"
ERROR_GROUP = "Error Handling"
SPARK_GROUP = "Spark"
TOPIC_CREATION_GROUP = "Topic Creation"
EXACTLY_ONCE_SUPPORT_GROUP = "Exactly Once Support"
OFFSETS_TOPIC_GROUP = "offsets.topic"


class _UniqueAliases(Validator):
    """Connect's alias validator: a non-null list without duplicates (a class, so it pickles)."""

    def __init__(self, kind: str):
        self.kind = kind

    def ensure_valid(self, name: str, value: Any) -> None:
        if value is None:
            raise config_error(name, "null", "entry must be non null")
        if len(value) > len(set(value)):
            raise config_error(name, value, "Duplicate alias provided.")

    def __str__(self) -> str:
        return f"non-null string, unique {self.kind} aliases"


def _valid_regex(name: str, value: Any) -> str | None:
    try:
        re.compile(value or "")
    except re.error as e:
        return f"Invalid regex: {e}"
    return None


def _at_least_zero_or_null(name: str, value: Any) -> str | None:
    """Connect's validator of ``transaction.boundary.interval.ms``: unset, or at least 0."""
    if value is not None and value < 0:
        return "Value must be at least 0"
    return None


def _version_spec_problem(name: str, value: Any) -> str | None:
    """Connect's ``PluginVersionValidator``: unset, ``latest``, or a spec Maven parses (KIP-891)."""
    return spec_problem(value)


_PLUGIN_VERSION = Custom(_version_spec_problem, "a Maven version or version range (KIP-891)")


_CONVERTER_DOC = (
    "Converter class used to convert between Kafka Connect format and the serialized form that is written"
    " to Kafka. This controls the format of the {part} in messages written to or read from Kafka, and since"
    " this is independent of connectors it allows any connector to work with any serialization format."
    " Examples of common formats include JSON and Avro."
)


def _common_connector_config() -> ConfigDef:
    return (
        ConfigDef()
        .define("name", Type.STRING, NO_DEFAULT, NonEmptyStringWithoutControlChars(), Importance.HIGH,
                "Globally unique name to use for this connector.", COMMON_GROUP, 1, Width.MEDIUM, "Connector name")
        .define("connector.class", Type.STRING, NO_DEFAULT, None, Importance.HIGH,
                "Name or alias of the class for this connector.", COMMON_GROUP, 2, Width.LONG, "Connector class")
        .define("connector.plugin.version", Type.STRING, None, _PLUGIN_VERSION, Importance.MEDIUM,
                "Version of the connector.", COMMON_GROUP, 3, Width.MEDIUM, "Connector version")
        .define("tasks.max", Type.INT, 1, Range.at_least(1), Importance.HIGH,
                "Maximum number of tasks to use for this connector.", COMMON_GROUP, 4, Width.SHORT, "Tasks max")
        .define("tasks.max.enforce", Type.BOOLEAN, True, None, Importance.LOW,
                "(Deprecated) Whether to enforce that the tasks.max property is respected by the connector. By "
                "default, a connector that generates more task configs than tasks.max fails; if false, all of "
                "them run (KIP-1004).", COMMON_GROUP, 5, Width.SHORT, "Enforce tasks max")
        .define("key.converter", Type.CLASS, None, None, Importance.LOW,
                _CONVERTER_DOC.format(part="keys"), COMMON_GROUP, 6, Width.SHORT, "Key converter class")
        .define("key.converter.plugin.version", Type.STRING, None, _PLUGIN_VERSION, Importance.LOW,
                "Version of the key converter.", COMMON_GROUP, 7, Width.SHORT, "Key converter version")
        .define("value.converter", Type.CLASS, None, None, Importance.LOW,
                _CONVERTER_DOC.format(part="values"), COMMON_GROUP, 8, Width.SHORT, "Value converter class")
        .define("value.converter.plugin.version", Type.STRING, None, _PLUGIN_VERSION, Importance.LOW,
                "Version of the value converter.", COMMON_GROUP, 9, Width.SHORT, "Value converter version")
        .define("header.converter", Type.CLASS, None, None, Importance.LOW,
                "HeaderConverter class used to convert between Kafka Connect format and the serialized form that is"
                " written to Kafka. Unset means the worker's setting is used.",
                COMMON_GROUP, 10, Width.SHORT, "Header converter class")
        .define("header.converter.plugin.version", Type.STRING, None, _PLUGIN_VERSION, Importance.LOW,
                "Version of the header converter.", COMMON_GROUP, 11, Width.SHORT, "Header converter version")
        .define("transforms", Type.LIST, "", _UniqueAliases("transformation"), Importance.LOW,
                "Aliases for the transformations to be applied to records.",
                TRANSFORMS_GROUP, 8, Width.LONG, "Transforms")
        .define("predicates", Type.LIST, "", _UniqueAliases("predicate"), Importance.LOW,
                "Aliases for the predicates used by transformations.", PREDICATES_GROUP, 9, Width.LONG, "Predicates")
        .define("config.action.reload", Type.STRING, "restart", ValidString.in_("none", "restart"), Importance.LOW,
                "The action to take on the connector when external configuration providers change its"
                " configuration: 'none' does nothing, 'restart' restarts it with the updated configuration.",
                COMMON_GROUP, 12, Width.MEDIUM, "Reload Action")
        .define("errors.retry.timeout", Type.LONG, 0, None, Importance.MEDIUM,
                "The maximum duration in milliseconds that a failed operation will be reattempted. The default is 0,"
                " which means no retries will be attempted. Use -1 for infinite retries.",
                ERROR_GROUP, 1, Width.MEDIUM, "Retry Timeout for Errors")
        .define("errors.retry.delay.max.ms", Type.LONG, 60000, None, Importance.MEDIUM,
                "The maximum duration in milliseconds between consecutive retry attempts.",
                ERROR_GROUP, 2, Width.MEDIUM, "Maximum Delay Between Retries for Errors")
        .define("errors.tolerance", Type.STRING, "none", ValidString.in_("none", "all"), Importance.MEDIUM,
                "Behavior for tolerating errors during connector operation. 'none' is the default value and signals"
                " that any error will result in an immediate connector task failure; 'all' changes the behavior to"
                " skip over problematic records.", ERROR_GROUP, 3, Width.SHORT, "Error Tolerance")
        .define("errors.log.enable", Type.BOOLEAN, False, None, Importance.MEDIUM,
                "If true, write each error and the details of the failed operation and problematic record to the"
                " application log.", ERROR_GROUP, 4, Width.SHORT, "Log Errors")
        .define("errors.log.include.messages", Type.BOOLEAN, False, None, Importance.MEDIUM,
                "Whether to include in the log the record that resulted in a failure. False by default, so record"
                " keys, values and headers are not written to log files.", ERROR_GROUP, 5, Width.SHORT,
                "Log Error Details")
        .define("batch.max.records", Type.LONG, 100000, Range.at_least(1), Importance.MEDIUM,
                "Maximum number of records each task contributes to one Spark micro-batch (Spark admission"
                " control), bounding batch size and latency. Sinks that Spark writes itself (the Delta append,"
                " the at-least-once Kafka copy) have no bound unless this is set.", SPARK_GROUP, 1, Width.SHORT, "Max records per batch")
        .define("trigger.interval.ms", Type.LONG, 1000, Range.at_least(0), Importance.MEDIUM,
                "Interval in milliseconds between Spark micro-batch triggers; 0 starts the next batch as soon as the"
                " previous one finishes.", SPARK_GROUP, 2, Width.SHORT, "Trigger interval (ms)")
    )


def _source_keys() -> ConfigDef:
    return (
        ConfigDef()
        .define("topic.creation.groups", Type.LIST, "", _UniqueAliases("topic creation group"), Importance.LOW,
                "Groups of configurations for topics created by source connectors",
                TOPIC_CREATION_GROUP, 1, Width.LONG, "Topic Creation Groups")
        .define("exactly.once.support", Type.STRING, "requested", ValidString.in_ignore_case("requested", "required"),
                Importance.MEDIUM,
                "Permitted values are requested, required. If set to \"required\", forces a preflight check that"
                " the connector can provide exactly-once semantics with the given configuration.",
                EXACTLY_ONCE_SUPPORT_GROUP, 2, Width.SHORT, "Exactly once support")
        .define("transaction.boundary", Type.STRING, "poll",
                ValidString.in_ignore_case("poll", "interval", "connector"), Importance.MEDIUM,
                "Permitted values are: poll, interval, connector. 'poll' commits a transaction for every batch of"
                " records a task provides; 'connector' relies on connector-defined boundaries; 'interval' commits"
                " after a user-defined time interval.", EXACTLY_ONCE_SUPPORT_GROUP, 3, Width.SHORT,
                "Transaction Boundary")
        .define("transaction.boundary.interval.ms", Type.LONG, None, Custom(_at_least_zero_or_null, "[0,...]"),
                Importance.LOW,
                "If 'transaction.boundary' is set to 'interval', determines the interval for producer transaction"
                " commits by connector tasks. If unset, defaults to the value of the worker-level"
                " 'offset.flush.interval.ms' property (60000). It has no effect if a different transaction.boundary"
                " is specified. sparkcat commits one transaction per task per micro-batch, so 'interval' stretches"
                " the trigger interval to at least this.", EXACTLY_ONCE_SUPPORT_GROUP, 4, Width.SHORT,
                "Transaction boundary interval")
        .define("offsets.storage.topic", Type.STRING, None, NonEmptyString(), Importance.LOW,
                "The name of a separate offsets topic to use for this connector. If empty or not specified, the"
                " worker's global offsets topic name will be used.", OFFSETS_TOPIC_GROUP, 1, Width.LONG,
                "Offsets topic")
    )


def _sink_keys() -> ConfigDef:
    return (
        ConfigDef()
        .define("topics", Type.LIST, "", None, Importance.HIGH,
                "List of topics to consume, separated by commas", COMMON_GROUP, 4, Width.LONG, "Topics")
        .define("topics.regex", Type.STRING, "", Custom(_valid_regex, "valid regex"), Importance.HIGH,
                "Regular expression giving topics to consume. Only one of topics or topics.regex should be"
                " specified.", COMMON_GROUP, 4, Width.LONG, "Topics regex")
        .define("exactly.once.support", Type.STRING, "requested", ValidString.in_ignore_case("requested", "required"),
                Importance.MEDIUM,
                "Permitted values are requested, required. A sparkcat extension (Connect has this key for source"
                " connectors only): \"required\" forces a preflight check that the sink connector can deliver each"
                " record exactly once with the given configuration, and makes the kafka copy sink write each"
                " micro-batch in Kafka transactions; \"requested\" keeps the connector's default guarantee.",
                EXACTLY_ONCE_SUPPORT_GROUP, 2, Width.SHORT, "Exactly once support")
        .define("errors.deadletterqueue.topic.name", Type.STRING, "", None, Importance.MEDIUM,
                "The name of the topic to be used as the dead letter queue (DLQ) for messages that result in an"
                " error when processed by this sink connector, or its transformations or converters. Blank by"
                " default, which means that no messages are to be recorded in the DLQ.",
                ERROR_GROUP, 6, Width.MEDIUM, "Dead Letter Queue Topic Name")
        .define("errors.deadletterqueue.topic.replication.factor", Type.SHORT, 3, None, Importance.MEDIUM,
                "Replication factor used to create the dead letter queue topic when it doesn't already exist.",
                ERROR_GROUP, 7, Width.MEDIUM, "Dead Letter Queue Topic Replication Factor")
        .define("errors.deadletterqueue.context.headers.enable", Type.BOOLEAN, False, None, Importance.MEDIUM,
                "If true, add headers containing error context to the messages written to the dead letter queue."
                " All error context header keys start with __connect.errors.",
                ERROR_GROUP, 8, Width.MEDIUM, "Enable Error Context Headers")
    )


COMMON_CONNECTOR_CONFIG: ConfigDef = _common_connector_config().freeze()
"""Keys every connector accepts (Connect's ``ConnectorConfig``) plus sparkcat's "Spark" group."""

DEAD_LETTER_QUEUE_KEYS = ("errors.deadletterqueue.topic.name", "errors.deadletterqueue.topic.replication.factor",
                          "errors.deadletterqueue.context.headers.enable")


def _source_dead_letter_queue_keys() -> ConfigDef:
    """The sink connectors' dead letter queue keys, for source connectors too (a sparkcat extension)."""
    sink = _sink_keys().keys
    out = ConfigDef()
    for name in DEAD_LETTER_QUEUE_KEYS:
        out.define_key(sink[name])
    return out


SOURCE_CONNECTOR_CONFIG: ConfigDef = COMMON_CONNECTOR_CONFIG.merge(_source_keys()) \
    .merge(_source_dead_letter_queue_keys()).freeze()
"""Keys of a source connector (Connect's ``SourceConnectorConfig``, plus the dead letter queue's keys)."""

SINK_CONNECTOR_CONFIG: ConfigDef = COMMON_CONNECTOR_CONFIG.merge(_sink_keys()).freeze()
"""Keys of a sink connector (Connect's ``SinkConnectorConfig``)."""


@dataclass(frozen=True)
class ConnectorSettings:
    """The framework's keys the runtime acts on, typed once (Connect's ``ConnectorConfig.tasksMax()`` and kin).

    Parsed with the ConfigDef's own defaults, so no module restates a default; source-only keys
    (``transaction.boundary*``) keep their defaults in a sink's settings, where nothing reads them.
    """

    tasks_max: int
    batch_max_records: int
    trigger_interval_ms: int
    retry_timeout_ms: int            # errors.retry.timeout: 0 no retries, -1 forever
    retry_delay_max_ms: int          # errors.retry.delay.max.ms
    tolerate_all: bool               # errors.tolerance=all
    log_errors: bool                 # errors.log.enable
    log_error_messages: bool         # errors.log.include.messages
    exactly_once_required: bool      # exactly.once.support=required
    transaction_boundary: str        # poll | interval | connector
    transaction_boundary_interval_ms: int | None
    dlq_topic: str = ""              # errors.deadletterqueue.topic.name: "" no dead letter queue
    dlq_replication_factor: int = 3
    dlq_context_headers: bool = False
    tasks_max_enforce: bool = True   # tasks.max.enforce (KIP-1004): more task configs than tasks.max fail


_SETTINGS_KEYS = ("tasks.max", "tasks.max.enforce", "batch.max.records", "trigger.interval.ms", "errors.retry.timeout",
                  "errors.retry.delay.max.ms", "errors.tolerance", "errors.log.enable", "errors.log.include.messages",
                  "exactly.once.support", "transaction.boundary", "transaction.boundary.interval.ms",
                  *DEAD_LETTER_QUEUE_KEYS)


def _settings_definition() -> ConfigDef:
    keys = SOURCE_CONNECTOR_CONFIG.keys
    definition = ConfigDef()
    for name in _SETTINGS_KEYS:
        definition.define_key(keys[name])
    return definition.freeze()


_SETTINGS_DEF = _settings_definition()


def connector_settings(config: Mapping[str, Any]) -> ConnectorSettings:
    """``config``'s framework settings, with the ConfigDef's defaults (``ConfigError`` naming a bad key).

    >>> s = connector_settings({"errors.tolerance": "all", "exactly.once.support": "required"})
    >>> s.tasks_max, s.trigger_interval_ms, s.tolerate_all, s.exactly_once_required, s.transaction_boundary
    (1, 1000, True, True, 'poll')
    """
    v = _SETTINGS_DEF.parse(config)
    interval = v["transaction.boundary.interval.ms"]
    return ConnectorSettings(
        int(v["tasks.max"]), int(v["batch.max.records"]), int(v["trigger.interval.ms"]),
        int(v["errors.retry.timeout"]), int(v["errors.retry.delay.max.ms"]),
        str(v["errors.tolerance"]).strip().lower() == "all", bool(v["errors.log.enable"]),
        bool(v["errors.log.include.messages"]), str(v["exactly.once.support"]).strip().lower() == "required",
        str(v["transaction.boundary"]).strip().lower(), None if interval is None else int(interval),
        str(v["errors.deadletterqueue.topic.name"] or "").strip(),
        int(v["errors.deadletterqueue.topic.replication.factor"]),
        bool(v["errors.deadletterqueue.context.headers.enable"]), bool(v["tasks.max.enforce"]))
