"""Validates connector configs before anything runs: types, required keys, unknown keys, sink topics.

One function serves the CLI (``sparkcat validate``), the REST API and the herder,
so every entry point rejects the same configs with the same messages.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from sparkcat import plugins
from sparkcat.api.config import SINK_CONNECTOR_CONFIG, SOURCE_CONNECTOR_CONFIG, ConfigDef, ConfigValue
from sparkcat.api.connector import Connector, SinkConnector
from sparkcat.errors import ConfigError, NotFoundError

#: Keys under these prefixes belong to transforms, converters and client overrides,
#: whose own definitions are checked where they are used.
ALLOWED_PREFIXES = (
    "transforms.", "predicates.", "errors.", "key.converter.", "value.converter.", "header.converter.",
    "producer.override.", "consumer.override.", "admin.override.", "topic.creation.",
)
SINK_PREFIX = "sink."


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


def connector_definition(cls: type[Connector]) -> ConfigDef:
    """The common keys of the connector's kind plus its own keys."""
    common = SINK_CONNECTOR_CONFIG if issubclass(cls, SinkConnector) else SOURCE_CONNECTOR_CONFIG
    return common.merge(cls().config_def())


def _unknown_keys(definition: ConfigDef, config: Mapping[str, object], allow_sink: bool) -> list[ConfigValue]:
    out = []
    for key, value in config.items():
        if key in definition or key.startswith(ALLOWED_PREFIXES):
            continue
        if allow_sink and key.startswith(SINK_PREFIX):
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
    "transforms": "Single Message Transforms are not supported by sparkcat yet; remove 'transforms'",
    "predicates": "Predicates are not supported by sparkcat yet; remove 'predicates'",
    "errors.deadletterqueue.topic.name": "Dead letter queues are not supported by sparkcat yet",
}


def _unsupported(config: Mapping[str, object]) -> list[ConfigValue]:
    out = [ConfigValue(k, config[k], errors=[msg]) for k, msg in UNSUPPORTED.items()
           if str(config.get(k) or "").strip()]
    if str(config.get("errors.tolerance") or "none").strip() != "none":
        out.append(ConfigValue("errors.tolerance", config["errors.tolerance"], errors=[
            "errors.tolerance=all is not supported by sparkcat yet: a bad record fails its task"]))
    return out


def _class_error(config: Mapping[str, object], error: Exception) -> ValidationResult:
    name = str(config.get("connector.class") or "")
    message = getattr(error, "message", str(error))
    value = ConfigValue("connector.class", name, errors=[message])
    response = ConfigDef().validate_response(name, config, [value])
    return ValidationResult(name, "unknown", response, {"connector.class": [message]})


def validate_connector_config(config: Mapping[str, object], *, _nested: bool = False) -> ValidationResult:
    """Every error of ``config``, per key, in Connect's validate response shape."""
    try:
        cls = plugins.connector_class(str(config.get("connector.class") or ""))
    except (NotFoundError, ConfigError) as e:
        return _class_error(config, e)
    definition = connector_definition(cls)
    is_sink = issubclass(cls, SinkConnector)
    extra = _unknown_keys(definition, config, allow_sink=not is_sink and not _nested) + _unsupported(config)
    if is_sink and not _nested:
        extra += _sink_topic_errors(config)
    extra += _embedded_sink_errors(config) if not is_sink and not _nested else []
    extra += cls().validate(config)
    response = definition.validate_response(cls.__name__, config, extra)
    errors = {c["value"]["name"]: list(c["value"]["errors"]) for c in response["configs"]
              if c["value"] and c["value"]["errors"]}
    return ValidationResult(cls.__name__, plugins.connector_type(cls), response, errors)


def embedded_sink_config(config: Mapping[str, object]) -> dict[str, str] | None:
    """The sink a source connector names through ``sink.*`` keys, as a sink connector config."""
    sink = {k[len(SINK_PREFIX):]: str(v) for k, v in config.items() if k.startswith(SINK_PREFIX)}
    if not sink:
        return None
    sink.setdefault("name", f"{config.get('name', '')}-sink")
    sink.setdefault("tasks.max", str(config.get("tasks.max", "1")))
    return sink


def _embedded_sink_errors(config: Mapping[str, object]) -> list[ConfigValue]:
    sink = embedded_sink_config(config)
    if sink is None:
        return []
    if "connector.class" not in sink:
        return [ConfigValue("sink.connector.class", None, errors=[
            "sink.* keys are set but sink.connector.class is missing"])]
    result = validate_connector_config(sink, _nested=True)
    out = [ConfigValue(SINK_PREFIX + key, sink.get(key), errors=msgs) for key, msgs in result.errors.items()]
    if not out and result.connector_type != "sink":
        out.append(ConfigValue("sink.connector.class", sink["connector.class"], errors=[
            f"{sink['connector.class']} is not a sink connector"]))
    return out
