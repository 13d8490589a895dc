"""Validation of a connector's error handling keys (``errors.tolerance``, ``errors.log.*``, the dead letter queue).

Two rules:

- Connect's ``SinkConnectorConfig.validate``: the dead letter queue topic may not be one of the
  topics the sink consumes (its messages, word for word, on ``topics`` / ``topics.regex``).
- sparkcat's own: bad records are caught where a connector's converters run per record in
  Python (sink tasks driven through ``put``, source connectors writing to Kafka). Connectors whose
  records are never converted there (a sink task that writes whole DataFrames, like Delta and the
  ``kafka`` copy, or takes the raw bytes; a source connector's ``sink.*`` sink) have no record that
  could be skipped, logged or dead-lettered, so ``errors.tolerance=all``, ``errors.log.enable`` and
  the dead letter queue are refused for them rather than accepted with no effect.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from sparkcat.api.config import ConfigValue
from sparkcat.api.connector import Connector, SinkConnector

__all__ = ["error_handling_errors", "DLQ_TOPIC"]

DLQ_TOPIC = "errors.deadletterqueue.topic.name"
TOLERANCE = "errors.tolerance"
LOG_ENABLE = "errors.log.enable"


def _text(config: Mapping[str, object], key: str) -> str:
    return str(config.get(key) or "").strip()


def _dlq_topic_errors(config: Mapping[str, object]) -> list[ConfigValue]:
    """Connect's rule: a sink may not consume its own dead letter queue."""
    dlq = _text(config, DLQ_TOPIC)
    if not dlq:
        return []
    out = []
    topics_text = _text(config, "topics")
    topics = [t.strip() for t in topics_text.split(",") if t.strip()]
    if dlq in topics:
        out.append(ConfigValue("topics", topics_text, errors=[
            f"The DLQ topic '{dlq}' may not be included in the list of topics ('topics=[{', '.join(topics)}]') "
            f"consumed by the connector"]))
    regex = _text(config, "topics.regex")
    try:
        matched = bool(regex) and re.fullmatch(regex, dlq) is not None
    except re.error:  # the regex's own error is reported on topics.regex
        matched = False
    if matched:
        out.append(ConfigValue("topics.regex", regex, errors=[
            f"The DLQ topic '{dlq}' may not be matched by the regex for the topics ('topics.regex={regex}') "
            f"consumed by the connector"]))
    return out


def _unconverted_reason(cls: type[Connector], sink: bool, nested: bool,
                        config: Mapping[str, object]) -> str | None:
    """Why no record of this connector goes through its converters in Python (None when they do)."""
    if nested:
        return "the sink named by a source connector's sink.* keys gets its records without any conversion"
    if not sink:
        if any(str(k).startswith("sink.") for k in config):
            return "a source connector with sink.* keys hands its records to that sink without converting them"
        return None
    if issubclass(cls, SinkConnector) and (cls.writes_natively() or cls.writes_batches()):
        how = "native_write" if cls.writes_natively() else "batch_writer"
        return f"{cls.__name__} writes whole micro-batches with Spark ({how}) and converts no record on its own"
    try:
        task_class = cls().task_class()
    except Exception:  # the task class is checked where it runs
        return None
    if getattr(task_class, "wants_raw_bytes", False):
        return f"{cls.__name__} takes every record as the bytes in Kafka, with no converter"
    return None


def _scope_errors(cls: type[Connector], sink: bool, nested: bool, config: Mapping[str, object]) -> list[ConfigValue]:
    asked = {key: config.get(key) for key, default in ((TOLERANCE, "none"), (LOG_ENABLE, "false"))
             if _text(config, key).lower() not in ("", default)}
    if _text(config, DLQ_TOPIC):
        asked[DLQ_TOPIC] = config.get(DLQ_TOPIC)
    if not asked:
        return []
    reason = _unconverted_reason(cls, sink, nested, config)
    if reason is None:
        return []
    message = (f"{reason}, so no record can fail conversion and be skipped, logged or sent to a dead letter "
               f"queue; remove the errors.tolerance, errors.log.enable and errors.deadletterqueue.* settings")
    return [ConfigValue(key, value, errors=[message]) for key, value in asked.items()]


def error_handling_errors(cls: type[Connector], config: Mapping[str, object], sink: bool,
                          nested: bool = False) -> list[ConfigValue]:
    """Per-key errors of the error handling keys of ``config`` (a ``cls`` connector; ``nested``: a ``sink.*`` sink)."""
    out = _scope_errors(cls, sink, nested, config)
    if sink and not nested:
        out += _dlq_topic_errors(config)
    return out
