"""AvroConverter's Schema Registry settings and calls (confluent-kafka's client underneath).

Settings, as Confluent's converter reads them after the ``key.converter.`` / ``value.converter.``
prefix: ``schema.registry.url``, ``key.subject.name.strategy`` / ``value.subject.name.strategy``
(Confluent's TopicNameStrategy, RecordNameStrategy, TopicRecordNameStrategy by class name),
``auto.register.schemas`` (default true), ``use.latest.version`` (default false) and basic auth with
``basic.auth.credentials.source=USER_INFO`` and ``basic.auth.user.info``. Ids and registrations
are cached, so a batch asks the registry once per schema, never once per record.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sparkcat.converters.avro_data import record_name
from sparkcat.errors import ConfigError, SparkcatError

_STRATEGY_PKG = "io.confluent.kafka.serializers.subject."
STRATEGIES = ("TopicNameStrategy", "RecordNameStrategy", "TopicRecordNameStrategy")
_KNOWN = {"schema.registry.url", "key.subject.name.strategy", "value.subject.name.strategy",
          "auto.register.schemas", "use.latest.version", "basic.auth.credentials.source",
          "basic.auth.user.info"}


@dataclass(frozen=True)
class RegistrySettings:
    """AvroConverter's registry settings (one converter: key or value)."""

    url: str
    strategy: str = "TopicNameStrategy"
    auto_register: bool = True
    use_latest: bool = False
    user_info: str | None = field(default=None, repr=False)

    @classmethod
    def parse(cls, config: dict[str, Any], is_key: bool) -> RegistrySettings:
        """The settings, or a ConfigError naming every bad one (``settings_problems``)."""
        problems = settings_problems(config, is_key)
        if problems:
            raise ConfigError("; ".join(f"{k}: {' '.join(m)}" for k, m in problems.items()), problems)
        url = str(config.get("schema.registry.url")).split(",")[0].strip()
        return cls(url.rstrip("/"), _strategy(config, is_key), _bool(config, "auto.register.schemas", True),
                   _bool(config, "use.latest.version", False), _user_info(config))


def settings_problems(config: dict[str, Any], is_key: bool) -> dict[str, list[str]]:
    """What is wrong with one AvroConverter's settings, per setting (prefix removed); empty when fine."""
    out: dict[str, list[str]] = {}
    for key in sorted(k for k in config if k not in _KNOWN):
        out[key] = [f"AvroConverter setting {key!r} is not implemented by sparkcat; remove it (implemented: "
                    f"{', '.join(sorted(_KNOWN))})"]
    if not str(config.get("schema.registry.url") or "").split(",")[0].strip():
        out["schema.registry.url"] = ["AvroConverter needs schema.registry.url, the Schema Registry's URL "
                                      "(e.g. http://localhost:8081)"]
    checks = (("subject.name.strategy", lambda: _strategy(config, is_key)),
              ("auto.register.schemas", lambda: _bool(config, "auto.register.schemas", True)),
              ("use.latest.version", lambda: _bool(config, "use.latest.version", False)),
              ("basic.auth.credentials.source", lambda: _user_info(config)))
    for key, check in checks:
        try:
            check()
        except ConfigError as exc:
            name = f"{'key' if is_key else 'value'}.{key}" if key == "subject.name.strategy" else key
            out.setdefault(name, []).append(exc.message)
    return out


def _strategy(config: dict[str, Any], is_key: bool) -> str:
    strategy = str(config.get(f"{'key' if is_key else 'value'}.subject.name.strategy",
                              _STRATEGY_PKG + "TopicNameStrategy")).rsplit(".", 1)[-1]
    if strategy not in STRATEGIES:
        raise ConfigError(f"AvroConverter: unknown subject name strategy {strategy!r}; "
                          f"use one of {[_STRATEGY_PKG + s for s in STRATEGIES]}")
    return strategy


def _bool(config: dict[str, Any], key: str, default: bool) -> bool:
    value = config.get(key, default)
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text not in ("true", "false"):
        raise ConfigError(f"AvroConverter: {key} must be true or false, not {value!r}")
    return text == "true"


def _user_info(config: dict[str, Any]) -> str | None:
    source = str(config.get("basic.auth.credentials.source", "URL")).upper()
    info = config.get("basic.auth.user.info")
    if source != "USER_INFO":
        if info is not None or source != "URL":
            raise ConfigError("AvroConverter: only basic.auth.credentials.source=USER_INFO "
                              "(with basic.auth.user.info) is implemented")
        return None
    text = info.value if hasattr(info, "value") else info  # a PASSWORD setting
    if not text or ":" not in str(text):
        raise ConfigError("AvroConverter: basic.auth.user.info must be user:password")
    return str(text)


def subject_name(strategy: str, topic: str, is_key: bool, schema: Any) -> str:
    """The subject a schema is registered under, per Confluent's strategy."""
    if strategy == "TopicNameStrategy":
        return f"{topic}-{'key' if is_key else 'value'}"
    if strategy == "RecordNameStrategy":
        return record_name(schema)
    return f"{topic}-{record_name(schema)}"


class RegistryClient:
    """The registry calls AvroConverter needs, through confluent-kafka's ``SchemaRegistryClient``.

    That client brings the REST calls, basic auth, retries and its own caches; this one adds the
    choice Confluent's converter makes between registering, looking up and the subject's latest
    version, and a cache per (subject, schema) so a batch asks once per schema, never per record.
    """

    def __init__(self, settings: RegistrySettings) -> None:
        self.settings = settings
        self._sr: Any = None  # made on first use, where the calls run (an HTTP client does not pickle)
        self._ids: dict[tuple[str, str], int] = {}
        self._schemas: dict[int, Any] = {}

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_sr": None}

    @property
    def _client(self) -> Any:
        if self._sr is None:
            from confluent_kafka.schema_registry import SchemaRegistryClient

            conf = {"url": self.settings.url}
            if self.settings.user_info:
                conf["basic.auth.user.info"] = self.settings.user_info
            self._sr = SchemaRegistryClient(conf)
        return self._sr

    def id_for(self, subject: str, schema: Any) -> tuple[int, Any]:
        """The id (and schema) to write with: registered, looked up or the subject's latest."""
        key = (subject, json.dumps(schema, sort_keys=True))
        if key not in self._ids:
            self._ids[key] = self._call(f"schema id for subject {subject}", lambda: self._resolve(subject, schema))
        return self._ids[key], self._schemas[self._ids[key]]

    def schema(self, schema_id: int) -> Any:
        if schema_id not in self._schemas:
            found = self._call(f"schema {schema_id}", lambda: self._client.get_schema(schema_id))
            self._schemas[schema_id] = json.loads(found.schema_str)
        return self._schemas[schema_id]

    def _resolve(self, subject: str, schema: Any) -> int:
        from confluent_kafka.schema_registry import Schema

        if self.settings.use_latest:
            latest = self._client.get_latest_version(subject)
            self._schemas[latest.schema_id] = json.loads(latest.schema.schema_str)
            return latest.schema_id
        wanted = Schema(json.dumps(schema), "AVRO")
        if self.settings.auto_register:
            schema_id = self._client.register_schema(subject, wanted)
        else:
            schema_id = self._client.lookup_schema(subject, wanted).schema_id
        self._schemas[schema_id] = schema
        return schema_id

    def _call(self, what: str, call: Callable[[], Any]) -> Any:
        """``call``, with the registry's errors as SparkcatError naming the registry and what was asked."""
        from confluent_kafka.schema_registry.error import SchemaRegistryError

        try:
            return call()
        except SchemaRegistryError as exc:
            raise SparkcatError(f"schema registry {self.settings.url}, {what}: HTTP {exc.http_status_code} "
                                f"{exc.error_message}"[:400]) from exc
        except Exception as exc:  # httpx's transport errors: refused, timed out, bad address
            raise SparkcatError(f"schema registry {self.settings.url} unreachable ({what}): {exc}") from exc
