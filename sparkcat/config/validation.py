"""Validates connector configs before anything runs: types, required keys, unknown keys, sink topics.

One function serves the CLI (``sparkcat validate``), the REST API and the herder,
so every entry point rejects the same configs with the same messages.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from sparkcat import plugins, redact
from sparkcat.api.config import ConfigDef, ConfigValue, Type
from sparkcat.api.connector import Connector, SinkConnector
from sparkcat.errors import ConfigError, NotFoundError
from sparkcat.policy.config_providers import has_placeholder
from sparkcat.policy.input_policy import InputPolicy
from sparkcat.config import exactly_once
from sparkcat.config.avro import avro_converter_errors
from sparkcat.config.consumer_overrides import consumer_override_errors
from sparkcat.config.converter_keys import REFUSED_CONVERTERS, converter_setting_errors
from sparkcat.config.infos import validate_response
from sparkcat.config.connector import SINK_CONNECTOR_CONFIG, SOURCE_CONNECTOR_CONFIG
from sparkcat.config.error_handling import error_handling_errors
from sparkcat.config.names import name_problem
from sparkcat.config.plugin_versions import java_version_errors, plugin_version_errors
from sparkcat.config.sink_guarantees import sink_exactly_once_errors
from sparkcat.config.topic_creation import (PREFIX as TOPIC_CREATION_PREFIX, add_java_topic_creation_errors,
                                            topic_creation_errors)

#: Keys under these prefixes configure converters and the producer: a converter's settings are checked against
#: the keys it takes (``converter_keys``), the producer's where they are used (librdkafka).
ALLOWED_PREFIXES = ("key.converter.", "value.converter.", "producer.override.", "admin.override.", "transforms.",
                    "predicates.")
#: A sink connector's consumer settings go to Spark's Kafka source (``kafka.``-prefixed options); those it cannot
#: take are refused (``consumer_overrides``).
SINK_ALLOWED_PREFIXES = ("consumer.override.",)
SINK_PREFIX = "sink."

#: Connect key prefixes sparkcat has no implementation for: refused rather than silently ignored.
UNSUPPORTED_PREFIXES = {
    "header.converter.": "Header converters are not supported by sparkcat yet",
    "consumer.override.": "Consumer overrides apply to sink connectors only (their Kafka input); a source "
                          "connector has no consumer",
    "topic.creation.": "Topic creation settings apply to source connectors only (KIP-158): a sink creates no topics",
}


@dataclass
class ValidationResult:
    """Connect's validate response plus the errors per key, for callers that print or raise."""

    connector_class: str
    connector_type: str
    response: dict
    errors: dict[str, list[str]] = field(default_factory=dict)

    @property
    def error_count(self) -> int:
        return self.response["error_count"]

    def raise_if_invalid(self, where: str = "") -> None:
        """Raise ConfigError naming every bad key (``where`` prefixes the message, e.g. a file)."""
        if not self.errors:
            return
        details = "; ".join(f"{k}: {' '.join(msgs)}" for k, msgs in self.errors.items())
        prefix = f"{where}: " if where else ""
        raise ConfigError(f"{prefix}Connector configuration is invalid and contains the following "
                          f"{sum(map(len, self.errors.values()))} error(s): {details}", dict(self.errors))


def is_sink(cls: type[Connector]) -> bool:
    """Whether ``cls`` is a sink connector (everything else is treated as a source)."""
    return plugins.connector_type(cls) == "sink"


def framework_definition(cls: type[Connector]) -> ConfigDef:
    """The keys the framework reads from every connector of ``cls``'s kind (Connect's ConnectorConfig)."""
    return SINK_CONNECTOR_CONFIG if is_sink(cls) else SOURCE_CONNECTOR_CONFIG


def connector_definition(cls: type[Connector]) -> ConfigDef:
    """The common keys of the connector's kind plus its own keys."""
    return framework_definition(cls).merge(cls().config_def())


def _unknown_keys(definition: ConfigDef, config: Mapping[str, object], allow_sink: bool,
                  is_sink: bool = False) -> list[ConfigValue]:
    out = []
    for key, value in config.items():
        if key in definition or key.startswith(ALLOWED_PREFIXES):
            continue
        if not is_sink and key.startswith(TOPIC_CREATION_PREFIX):  # judged by topic_creation_errors
            continue
        if is_sink and key.startswith(SINK_ALLOWED_PREFIXES):
            continue
        if allow_sink and key.startswith(SINK_PREFIX):
            continue
        prefix = next((p for p in UNSUPPORTED_PREFIXES if key.startswith(p)), None)
        if prefix is not None:
            out.append(ConfigValue(key, value, errors=[f"{UNSUPPORTED_PREFIXES[prefix]}; remove {key!r}"]))
            continue
        out.append(ConfigValue(key, value, errors=[
            f"Unknown configuration key {key!r}: not defined by this connector or the common connector "
            f"configs (check for a typo)"]))
    return out


def _sink_topic_errors(config: Mapping[str, object]) -> list[ConfigValue]:
    """Connect's rule: exactly one of ``topics`` and ``topics.regex``."""
    topics = str(config.get("topics") or "").strip()
    regex = str(config.get("topics.regex") or "").strip()
    if topics and regex:
        msg = "topics and topics.regex are mutually exclusive options, but both are set."
        return [ConfigValue("topics", topics, errors=[msg]), ConfigValue("topics.regex", regex, errors=[msg])]
    if not topics and not regex:
        msg = "Must configure one of topics or topics.regex"
        return [ConfigValue("topics", topics, errors=[msg]), ConfigValue("topics.regex", regex, errors=[msg])]
    return []


#: Connect features whose keys we accept by name but cannot honour yet: refusing them is
#: better than running a pipeline that silently skips its transforms or error handling.
UNSUPPORTED = {
    "offsets.storage.topic": "Per-connector offsets topics are not supported by sparkcat yet; offsets go to "
                             "the worker's offset.storage.topic; remove 'offsets.storage.topic'",
}

#: Keys whose default is what sparkcat does; any other value asks for something it does not do yet.
UNSUPPORTED_VALUES = {
}


def _unsupported(config: Mapping[str, object]) -> list[ConfigValue]:
    out = [ConfigValue(k, config[k], errors=[msg]) for k, msg in UNSUPPORTED.items()
           if str(config.get(k) or "").strip()]
    for key, (default, message) in UNSUPPORTED_VALUES.items():
        value = str(config.get(key) if config.get(key) is not None else default).strip().lower()
        if value != default:
            out.append(ConfigValue(key, config[key], errors=[message]))
    return out


def _converter_errors(config: Mapping[str, object], packages: Sequence[str]) -> list[ConfigValue]:
    """Converter classes that are neither built in nor in the worker's plugin.packages (checked without importing)."""
    from sparkcat.converters import is_builtin_converter

    out = []
    for key in ("key.converter", "value.converter"):
        name = str(config.get(key) or "").strip()
        if name in REFUSED_CONVERTERS:
            out.append(ConfigValue(key, name, errors=[REFUSED_CONVERTERS[name]]))
            continue
        if name and not is_builtin_converter(name) and not plugins.in_packages(name, packages):
            out.append(ConfigValue(key, name, errors=[
                f"{name} is neither a built-in converter nor in the worker's plugin.packages "
                f"({', '.join(packages)}); it was not loaded"]))
    return out + avro_converter_errors(config) + converter_setting_errors(config, packages)


def _whole_batch_writer(cls: type[Connector]) -> str | None:
    """The connector's name when Spark writes its whole batches (a native sink, or a batch writer)."""
    if issubclass(cls, SinkConnector) and (cls.writes_natively() or cls.writes_batches()):
        return cls.__name__
    return None


def _transform_errors(config: Mapping[str, object], sink: bool, batch_writer: str | None) -> list[ConfigValue]:
    """Connect's messages for the ``transforms`` / ``predicates`` keys; refusals for what sparkcat does not do."""
    from sparkcat.converters import HEADER_CONVERTERS
    from sparkcat.transforms import chain_errors

    out = []
    header_converter = str(config.get("header.converter") or "").strip()
    if header_converter and header_converter not in HEADER_CONVERTERS:
        out.append(ConfigValue("header.converter", header_converter, errors=[
            f"header.converter {header_converter} is not supported by sparkcat yet; only "
            "org.apache.kafka.connect.storage.SimpleHeaderConverter (the default) is"]))
    if batch_writer and str(config.get("transforms") or "").strip():
        return out + [ConfigValue("transforms", config.get("transforms"), errors=[
            f"{batch_writer} writes whole micro-batches with Spark and has no record for a transformation to "
            "change, so its 'transforms' would be ignored; remove 'transforms', or use a sink connector driven "
            "through put (file-sink, plugin sinks)"])]
    errors = chain_errors(config)
    out += _schema_metadata_errors(config, sink)
    return out + [ConfigValue(k, config.get(k), errors=msgs) for k, msgs in errors.items()
                  if k not in ("transforms", "predicates")]  # duplicate aliases: the ConfigDef's own check


def _schema_metadata_errors(config: Mapping[str, object], sink: bool) -> list[ConfigValue]:
    """SetSchemaMetadata ($Value or $Key) where no converter would write the name: a sink, or a source's ``sink.*``
    sink."""
    from sparkcat.transforms.schema_metadata import SET_SCHEMA_METADATA

    if sink:
        reason = "a sink task gets plain keys and values without a Connect schema"
    elif any(str(k).startswith(SINK_PREFIX) for k in config):
        reason = "the records go to the sink.* sink without a converter, so no schema is written"
    else:
        return []
    keys = [f"transforms.{a.strip()}.type" for a in str(config.get("transforms") or "").split(",") if a.strip()]
    out = []
    for key in keys:
        name = str(config.get(key) or "").strip().removeprefix(SET_SCHEMA_METADATA[:-len("SetSchemaMetadata")])
        if name in ("SetSchemaMetadata$Value", "SetSchemaMetadata$Key"):
            out.append(ConfigValue(key, config.get(key), errors=[
                f"{SET_SCHEMA_METADATA}{name[len('SetSchemaMetadata'):]} would have no effect here: {reason}; "
                "remove the transformation"]))
    return out


def _path_errors(cls: type[Connector], config: Mapping[str, str], policy: InputPolicy) -> list[ConfigValue]:
    return [ConfigValue(k, config.get(k), errors=msgs)
            for k, msgs in policy.path_problems(config, getattr(cls, "path_keys", ())).items()]


def secret_keys(config: Mapping[str, object], policy: InputPolicy | None = None) -> set[str]:
    """PASSWORD-typed keys of the connector's plugin and of its embedded sink (``sink.``-prefixed).

    Unknown or refused plugins contribute none (their keys are still masked by name).
    """
    packages = (policy or InputPolicy.default()).plugin_packages
    keys: set[str] = set()
    for prefix in ("", SINK_PREFIX):
        try:
            cls = plugins.connector_class(str(config.get(prefix + "connector.class") or ""), packages)
        except (NotFoundError, ConfigError):
            continue
        keys |= {prefix + k.name for k in connector_definition(cls).keys.values() if k.type is Type.PASSWORD}
    return keys


def mask_connector_config(config: Mapping[str, object], policy: InputPolicy | None = None) -> dict:
    """``config`` as every response and CLI output shows it: sensitive values ``[hidden]``."""
    return redact.mask_config(config, secret_keys(config, policy))


def _mask_response(response: dict, raw: Mapping[str, object], password_keys: set[str]) -> dict:
    """The validate response with the raw (unresolved) values, masked, and secrets scrubbed from messages."""
    for entry in response["configs"]:
        value = entry.get("value")
        if not value:
            continue
        name = value["name"]
        if name in raw and (redact.is_sensitive(name, password_keys) or has_placeholder(raw[name])):
            value["value"] = redact.mask_value(name, raw[name], password_keys)  # never the resolved value
        elif isinstance(value.get("value"), str):
            value["value"] = redact.scrub(value["value"])  # a secret a validator recognised inside a value (a URL)
        value["errors"] = [redact.scrub(e) for e in value["errors"]]
    return response


def _class_error(config: Mapping[str, object], error: Exception) -> ValidationResult:
    name = str(config.get("connector.class") or "")
    message = redact.scrub(getattr(error, "message", str(error)))
    value = ConfigValue("connector.class", name, errors=[message])
    response = validate_response(ConfigDef(), name, config, [value])
    return ValidationResult(name, "unknown", response, {"connector.class": [message]})


def validate_connector_config(config: Mapping[str, object], policy: InputPolicy | None = None, *,
                              _nested: bool = False) -> ValidationResult:
    """Every error of ``config``, per key, in Connect's validate response shape.

    ``policy`` is the worker's (``InputPolicy.of(worker)``; the defaults' when None):
    classes outside its plugin packages are refused without being imported, config
    provider placeholders are resolved (the response shows them unresolved), and the
    connector's path keys must lie under its allowed directories. Sensitive values
    are ``[hidden]`` in the response. The config is checked with the converters it would run with:
    the worker's on every side it names none for (``policy/worker_converters.py``).
    """
    policy = policy or InputPolicy.default()
    if not _nested:  # the converters it runs with: the worker's where it names none (an embedded sink has none)
        config = policy.with_worker_converters(config)
    java_type = None if _nested else policy.java_connector(config.get("connector.class"))
    if java_type is not None:
        return _java_validation(config, policy, java_type)
    try:
        cls = plugins.connector_class(str(config.get("connector.class") or ""), policy.plugin_packages)
    except (NotFoundError, ConfigError) as e:
        return _class_error(config, e)
    raw = config
    resolved, provider_errors = policy.config_providers.resolve(
        {k: v for k, v in config.items() if isinstance(v, str)})
    config = {**config, **resolved}
    definition = connector_definition(cls)
    sink = is_sink(cls)
    extra = _unknown_keys(definition, config, allow_sink=not sink and not _nested, is_sink=sink) \
        + _unsupported(config)
    extra += _converter_errors(config, policy.plugin_packages) + _path_errors(cls, config, policy)
    extra += _transform_errors(config, sink, _whole_batch_writer(cls) if sink else None)
    if sink and not _nested:
        extra += _sink_topic_errors(config) + consumer_override_errors(config)
    extra += error_handling_errors(cls, config, sink, _nested)
    extra += sink_exactly_once_errors(cls, config) if sink else []
    if not _nested and "name" in raw and name_problem(raw["name"]) is not None:
        extra.append(ConfigValue("name", raw["name"], errors=[str(name_problem(raw["name"]))]))
    if not sink and not _nested:
        extra += _embedded_sink_errors(raw, policy) + ConfigValue.for_problems(config, topic_creation_errors(
            config, policy.topic_creation, to_kafka=embedded_sink_config(config) is None))  # KIP-158's keys
        extra += exactly_once.source_errors(cls, config, embedded_sink_config(config), policy)
    extra += [ConfigValue(k, raw.get(k), errors=msgs) for k, msgs in provider_errors.items()]
    extra += ConfigValue.for_problems(config, plugin_version_errors(cls, config, policy.plugin_packages))
    extra += cls().validate(config)
    response = validate_response(definition, cls.__name__, config, extra)
    response = _mask_response(response, raw, secret_keys(raw, policy))
    errors = {c["value"]["name"]: list(c["value"]["errors"]) for c in response["configs"]
              if c["value"] and c["value"]["errors"]}
    return ValidationResult(cls.__name__, plugins.connector_type(cls), response, errors)


def _java_validation(config: Mapping[str, object], policy: InputPolicy, connector_type: str) -> ValidationResult:
    """A Java connector on plugin.path, validated by Connect's own classes (``JavaPluginCatalog.validate``).

    Placeholders are resolved for the connector and shown unresolved in the response, as for Python connectors;
    Connect hides PASSWORD values itself.
    """
    raw = {k: str(v) for k, v in config.items() if v is not None}
    resolved, provider_errors = policy.config_providers.resolve(raw)
    response = policy.java_plugins.validate({**raw, **resolved},
                                            exactly_once=policy.exactly_once_source and policy.kafka_stores)
    added = java_version_errors({**raw, **resolved}, policy.java_plugins, provider_errors)
    if connector_type == "source":
        add_java_topic_creation_errors(response, {**raw, **resolved}, policy.topic_creation, added)
    for entry in response.get("configs", []):
        value = entry.get("value") or {}
        name = value.get("name")
        if name in raw and has_placeholder(raw[name]) and value.get("value") not in (None, "[hidden]"):
            value["value"] = raw[name]
        if name in added:
            value["errors"] = list(value.get("errors") or []) + added[name]
    response["error_count"] = sum(len((c.get("value") or {}).get("errors") or []) for c in response.get("configs", []))
    errors = {c["value"]["name"]: list(c["value"]["errors"]) for c in response.get("configs", [])
              if c.get("value") and c["value"].get("errors")}
    return ValidationResult(str(config.get("connector.class")), connector_type, response, errors)


JAVA_EMBEDDED_SINK = ("{cls} is a Java source connector found on plugin.path: its records go to Kafka, as on Connect. "
                      "sink.* keys (a sink instead of Kafka) are for Python source connectors; remove them")
JAVA_UNSUPPORTED_KEYS = ("{cls} is a Java source connector found on plugin.path; sparkcat does not give it an offsets "
                         "topic of its own yet, so {keys} is refused rather than ignored")
JAVA_CONNECTOR_BOUNDARIES = ("{cls} is a Java source connector found on plugin.path; sparkcat does not give Java "
                             "tasks a TransactionContext yet, so transaction.boundary=connector is refused: use poll "
                             "(a transaction per micro-batch) or interval")


def java_connector_refusal(config: Mapping[str, object], policy: InputPolicy) -> str | None:
    """Why a connector naming a Java connector on plugin.path cannot be created or started (else None).

    sparkcat runs Java connectors (never a Python port in a Java connector's place), but not every way of
    running them yet.
    """
    name = config.get("connector.class")
    kind = policy.java_connector(name)
    if kind is None:
        return None
    if kind == "sink":
        return None
    if embedded_sink_config(config) is not None:
        return JAVA_EMBEDDED_SINK.format(cls=name)
    if str(config.get("transaction.boundary") or "").strip().lower() == "connector":
        return JAVA_CONNECTOR_BOUNDARIES.format(cls=name)
    if "offsets.storage.topic" in config:
        return JAVA_UNSUPPORTED_KEYS.format(cls=name, keys="offsets.storage.topic")
    return None


def embedded_sink_config(config: Mapping[str, object]) -> dict[str, str] | None:
    """The sink a source connector names through ``sink.*`` keys, as a sink connector config."""
    sink = {k[len(SINK_PREFIX):]: str(v) for k, v in config.items() if k.startswith(SINK_PREFIX)}
    if not sink:
        return None
    sink.setdefault("name", f"{config.get('name', '')}-sink")
    sink.setdefault("tasks.max", str(config.get("tasks.max", "1")))
    return sink


def _embedded_sink_errors(config: Mapping[str, object], policy: InputPolicy) -> list[ConfigValue]:
    sink = embedded_sink_config(config)
    if sink is None:
        return []
    if "connector.class" not in sink:
        return [ConfigValue("sink.connector.class", None, errors=[
            "sink.* keys are set but sink.connector.class is missing"])]
    result = validate_connector_config(sink, policy, _nested=True)
    out = [ConfigValue(SINK_PREFIX + key, sink.get(key), errors=msgs) for key, msgs in result.errors.items()]
    if not out and result.connector_type != "sink":
        out.append(ConfigValue("sink.connector.class", sink["connector.class"], errors=[
            f"{sink['connector.class']} is not a sink connector"]))
    elif not out and _reads_only_kafka(sink["connector.class"], policy):
        out.append(ConfigValue("sink.connector.class", sink["connector.class"], errors=[
            f"{sink['connector.class']} is written by Spark from Kafka topics (native_write) and cannot take a "
            "source connector's records; a source connector writes to Kafka by default"]))
    return out


def _reads_only_kafka(name: str, policy: InputPolicy) -> bool:
    """A native sink with no batch writer for a source's records: the kafka copy."""
    cls = plugins.connector_class(name, policy.plugin_packages)
    return issubclass(cls, SinkConnector) and cls.writes_natively() and not cls.writes_batches()
