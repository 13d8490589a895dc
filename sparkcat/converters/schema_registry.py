"""A small Schema Registry client (Confluent REST API) for ``AvroConverter``, with its settings.

Settings, as Confluent's converter reads them after the ``key.converter.`` / ``value.converter.``
prefix: ``schema.registry.url``, ``key.subject.name.strategy`` / ``value.subject.name.strategy``
(Confluent's TopicNameStrategy, RecordNameStrategy, TopicRecordNameStrategy by class name),
``auto.register.schemas`` (default true), ``use.latest.version`` (default false) and basic auth with
``basic.auth.credentials.source=USER_INFO`` and ``basic.auth.user.info``. Ids and registrations
are cached, so a batch asks the registry once per schema, never once per record.
"""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from sparkcat.converters.avro_data import record_name
from sparkcat.errors import ConfigError, SparkcatError

_STRATEGY_PKG = "io.confluent.kafka.serializers.subject."
STRATEGIES = ("TopicNameStrategy", "RecordNameStrategy", "TopicRecordNameStrategy")
_KNOWN = {"schema.registry.url", "key.subject.name.strategy", "value.subject.name.strategy",
          "auto.register.schemas", "use.latest.version", "basic.auth.credentials.source",
          "basic.auth.user.info"}
_CONTENT = "application/vnd.schemaregistry.v1+json"


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
    for key in sorted(k for k in config if k not in _KNOWN and k != "schemas.enable"):
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
    """The Confluent REST calls AvroConverter needs, cached per client."""

    def __init__(self, settings: RegistrySettings) -> None:
        self.settings = settings
        self._ids: dict[tuple[str, str], int] = {}
        self._schemas: dict[int, Any] = {}

    def id_for(self, subject: str, schema: Any) -> tuple[int, Any]:
        """The id (and schema) to write with: registered, looked up or the subject's latest."""
        text = json.dumps(schema, sort_keys=True)
        key = (subject, text)
        if key not in self._ids:
            if self.settings.use_latest:
                latest = self._call("GET", f"/subjects/{_q(subject)}/versions/latest")
                self._ids[key] = latest["id"]
                self._schemas[latest["id"]] = json.loads(latest["schema"])
            else:
                path = f"/subjects/{_q(subject)}" + ("/versions" if self.settings.auto_register else "")
                self._ids[key] = self._call("POST", path, {"schema": json.dumps(schema)})["id"]
                self._schemas[self._ids[key]] = schema
        return self._ids[key], self._schemas[self._ids[key]]

    def schema(self, schema_id: int) -> Any:
        if schema_id not in self._schemas:
            self._schemas[schema_id] = json.loads(self._call("GET", f"/schemas/ids/{schema_id}")["schema"])
        return self._schemas[schema_id]

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.settings.url + path, data=data, method=method,
                                     headers={"Content-Type": _CONTENT, "Accept": _CONTENT})
        if self.settings.user_info:
            token = base64.b64encode(self.settings.user_info.encode()).decode()
            req.add_header("Authorization", f"Basic {token}")
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                return json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode(errors="replace")[:300]
            raise SparkcatError(f"schema registry {method} {path}: HTTP {exc.code} {detail}") from exc
        except urllib.error.URLError as exc:
            raise SparkcatError(f"schema registry {self.settings.url} unreachable: {exc.reason}") from exc


def _q(subject: str) -> str:
    return urllib.parse.quote(subject, safe="")
