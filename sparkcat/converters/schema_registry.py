"""Schema Registry settings and calls of AvroConverter and JsonSchemaConverter (confluent-kafka's client below).

Settings, as Confluent's converters read them after the ``key.converter.`` / ``value.converter.``
prefix: ``schema.registry.url`` (a comma-separated list, failed over as Confluent's RestService does),
``key.subject.name.strategy`` / ``value.subject.name.strategy`` (Confluent's TopicNameStrategy,
RecordNameStrategy, TopicRecordNameStrategy by class name), ``auto.register.schemas`` (default true),
``use.latest.version`` (default false), basic auth with ``basic.auth.credentials.source=USER_INFO`` and
``basic.auth.user.info``, and the client's retries per URL (``max.retries`` 3, ``retries.wait.ms`` 1000,
``retries.max.wait.ms`` 20000, Confluent's defaults). Ids and registrations are cached, so a batch asks
the registry once per schema, never once per record.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Self

from pyspark.sql import types as T

from sparkcat.api.converter import Converter
from sparkcat.converters.avro_data import record_name
from sparkcat.errors import ConfigError, SparkcatError

_STRATEGY_PKG = "io.confluent.kafka.serializers.subject."
STRATEGIES = ("TopicNameStrategy", "RecordNameStrategy", "TopicRecordNameStrategy")
#: The client's retry settings (Confluent's SchemaRegistryClientConfig) and their defaults.
RETRIES = {"max.retries": 3, "retries.wait.ms": 1000, "retries.max.wait.ms": 20000}
KNOWN = frozenset({"schema.registry.url", "key.subject.name.strategy", "value.subject.name.strategy",
                   "auto.register.schemas", "use.latest.version", "basic.auth.credentials.source",
                   "basic.auth.user.info", *RETRIES})


@dataclass(frozen=True)
class RegistrySettings:
    """One converter's registry settings (key or value side); ``urls`` in the order given, tried in turn."""

    urls: tuple[str, ...]
    strategy: str = "TopicNameStrategy"
    auto_register: bool = True
    use_latest: bool = False
    user_info: str | None = field(default=None, repr=False)
    retries: tuple[tuple[str, int], ...] = tuple(RETRIES.items())

    @property
    def url(self) -> str:
        """The first URL (where a client starts)."""
        return self.urls[0]

    @classmethod
    def parse(cls, config: dict[str, Any], is_key: bool, converter: str = "AvroConverter") -> RegistrySettings:
        """The settings, or a ConfigError naming every bad one (``settings_problems``)."""
        problems = settings_problems(config, is_key, converter)
        if problems:
            raise ConfigError("; ".join(f"{k}: {' '.join(m)}" for k, m in problems.items()), problems)
        return cls(registry_urls(config), _strategy(config, is_key, converter),
                   bool_setting(config, "auto.register.schemas", True, converter),
                   bool_setting(config, "use.latest.version", False, converter), _user_info(config, converter),
                   tuple((k, _count(config, k, converter)) for k in RETRIES))


def registry_urls(config: dict[str, Any]) -> tuple[str, ...]:
    """``schema.registry.url``'s URLs: Confluent's comma-separated list, blanks dropped, no trailing slash."""
    return tuple(u.strip().rstrip("/") for u in str(config.get("schema.registry.url") or "").split(",") if u.strip())


def settings_problems(config: dict[str, Any], is_key: bool, converter: str = "AvroConverter") -> dict[str, list[str]]:
    """What is wrong with one registry converter's settings, per setting (prefix removed); empty when fine."""
    out: dict[str, list[str]] = {}
    for key in sorted(k for k in config if k not in KNOWN):
        out[key] = [f"{converter} setting {key!r} is not implemented by sparkcat; remove it (implemented: "
                    f"{', '.join(sorted(KNOWN))})"]
    urls = registry_urls(config)
    if not urls:
        out["schema.registry.url"] = [f"{converter} needs schema.registry.url, the Schema Registry's URL "
                                      "(e.g. http://localhost:8081; several, comma-separated, are failed over)"]
    elif bad := [u for u in urls if not u.lower().startswith(("http://", "https://"))]:
        out["schema.registry.url"] = [f"{converter}: schema.registry.url must list http:// or https:// URLs, "
                                      f"not {', '.join(map(repr, bad))}"]
    checks = [("subject.name.strategy", lambda: _strategy(config, is_key, converter)),
              ("auto.register.schemas", lambda: bool_setting(config, "auto.register.schemas", True, converter)),
              ("use.latest.version", lambda: bool_setting(config, "use.latest.version", False, converter)),
              ("basic.auth.credentials.source", lambda: _user_info(config, converter))]
    checks += [(key, lambda key=key: _count(config, key, converter)) for key in RETRIES]
    for key, check in checks:
        try:
            check()
        except ConfigError as exc:
            name = f"{'key' if is_key else 'value'}.{key}" if key == "subject.name.strategy" else key
            out.setdefault(name, []).append(exc.message)
    return out


def _strategy(config: dict[str, Any], is_key: bool, converter: str) -> str:
    strategy = str(config.get(f"{'key' if is_key else 'value'}.subject.name.strategy",
                              _STRATEGY_PKG + "TopicNameStrategy")).rsplit(".", 1)[-1]
    if strategy not in STRATEGIES:
        raise ConfigError(f"{converter}: unknown subject name strategy {strategy!r}; "
                          f"use one of {[_STRATEGY_PKG + s for s in STRATEGIES]}")
    return strategy


def bool_setting(config: dict[str, Any], key: str, default: bool, converter: str) -> bool:
    value = config.get(key, default)
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text not in ("true", "false"):
        raise ConfigError(f"{converter}: {key} must be true or false, not {value!r}")
    return text == "true"


def _count(config: dict[str, Any], key: str, converter: str) -> int:
    value = config.get(key, RETRIES[key])
    try:
        number = int(str(value).strip())
    except ValueError:
        number = -1
    if number < 0:
        raise ConfigError(f"{converter}: {key} must be a whole number of at least 0, not {value!r}")
    return number


def _user_info(config: dict[str, Any], converter: str) -> str | None:
    source = str(config.get("basic.auth.credentials.source", "URL")).upper()
    info = config.get("basic.auth.user.info")
    if source != "USER_INFO":
        if info is not None or source != "URL":
            raise ConfigError(f"{converter}: only basic.auth.credentials.source=USER_INFO "
                              "(with basic.auth.user.info) is implemented")
        return None
    text = info.value if hasattr(info, "value") else info  # a PASSWORD setting
    if not text or ":" not in str(text):
        raise ConfigError(f"{converter}: basic.auth.user.info must be user:password")
    return str(text)


def subject_name(strategy: str, topic: str, is_key: bool, schema: Any,
                 name: Callable[[Any], str] = record_name) -> str:
    """The subject a schema is registered under, per Confluent's strategy (``name``: the schema's record name)."""
    if strategy == "TopicNameStrategy":
        return f"{topic}-{'key' if is_key else 'value'}"
    if strategy == "RecordNameStrategy":
        return name(schema)
    return f"{topic}-{name(schema)}"


#: HTTP statuses after which Confluent's RestService tries the next URL (its retriable ones).
_FAIL_OVER_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
#: The URL each list of URLs last answered at (its index), in this Python process. A Connect task keeps one
#: converter, and so one RestService, for its life; sparkcat makes converters per batch, which start here
#: rather than at a URL known to be down.
_ANSWERED: dict[tuple[str, ...], int] = {}


class RegistryClient:
    """The registry calls a converter needs, through confluent-kafka's ``SchemaRegistryClient``.

    That client brings the REST calls, basic auth, retries and its own caches; this one adds the
    choice Confluent's converter makes between registering, looking up and the subject's latest
    version, a cache per (subject, schema) so a batch asks once per schema, never per record, and
    fail-over as Confluent's RestService and UrlList do: a call that cannot reach a URL (or gets a
    retriable status there) goes to the next, and the URL that answered stays first for later calls (of
    every client of the same URL list in this process).
    ``schema_type`` is the registry's name of the schemas registered: ``AVRO``, ``JSON`` (schemas as JSON) or
    ``PROTOBUF`` (schemas as text: a serialized FileDescriptorProto in base64, asked for with ``format=serialized``).
    """

    def __init__(self, settings: RegistrySettings, schema_type: str = "AVRO") -> None:
        self.settings = settings
        self.schema_type = schema_type
        self.current = _ANSWERED.get(settings.urls, 0)  # the index of the URL tried first
        self._clients: dict[str, Any] = {}  # made on first use, where the calls run (HTTP clients do not pickle)
        self._ids: dict[tuple[str, str], int] = {}
        self._schemas: dict[int, Any] = {}

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_clients": {}}

    def _client(self, url: str) -> Any:
        if url not in self._clients:
            from confluent_kafka.schema_registry import SchemaRegistryClient

            conf: dict[str, Any] = {"url": url, **dict(self.settings.retries)}
            if self.settings.user_info:
                conf["basic.auth.user.info"] = self.settings.user_info
            self._clients[url] = SchemaRegistryClient(conf)
        return self._clients[url]

    def id_for(self, subject: str, schema: Any) -> tuple[int, Any]:
        """The id (and schema) to write with: registered, looked up or the subject's latest."""
        key = (subject, json.dumps(schema, sort_keys=True))
        if key not in self._ids:
            self._ids[key] = self._call(f"schema id for subject {subject}",
                                        lambda sr: self._resolve(sr, subject, schema))
        return self._ids[key], self._schemas[self._ids[key]]

    def schema(self, schema_id: int) -> Any:
        if schema_id not in self._schemas:
            found = self._call(f"schema {schema_id}", lambda sr: sr.get_schema(schema_id, fmt=self._format))
            self._schemas[schema_id] = self._parsed(found)
        return self._schemas[schema_id]

    def _resolve(self, sr: Any, subject: str, schema: Any) -> int:
        from confluent_kafka.schema_registry import Schema

        if self.settings.use_latest:
            latest = sr.get_latest_version(subject, fmt=self._format)
            self._schemas[latest.schema_id] = self._parsed(latest.schema)
            return latest.schema_id
        wanted = Schema(schema if self.schema_type == "PROTOBUF" else schema_text(schema), self.schema_type)
        if self.settings.auto_register:
            schema_id = sr.register_schema(subject, wanted)
        else:
            schema_id = sr.lookup_schema(subject, wanted).schema_id
        self._schemas[schema_id] = schema
        return schema_id

    @property
    def _format(self) -> str | None:
        return "serialized" if self.schema_type == "PROTOBUF" else None

    def _parsed(self, schema: Any) -> Any:
        """A registered schema as converters take it: JSON parsed; Protobuf's text as it is, or with references
        the text and the referenced files' ``(name, text)`` pairs (``_referenced``)."""
        if self.schema_type != "PROTOBUF":
            return json.loads(schema.schema_str)
        if not schema.references:
            return schema.schema_str
        return schema.schema_str, tuple(self._referenced(schema, set(), []))

    def _referenced(self, schema: Any, seen: set[str], out: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """The files a Protobuf schema references (by subject and version), each once, a file after those it
        references: what a descriptor pool needs added in order."""
        for ref in schema.references or ():
            if ref.name in seen:
                continue
            seen.add(ref.name)
            found = self._call(f"schema reference {ref.name} ({ref.subject} version {ref.version})",
                               lambda sr, ref=ref: sr.get_version(ref.subject, ref.version, fmt=self._format))
            self._referenced(found.schema, seen, out)
            out.append((ref.name, found.schema.schema_str))
        return out

    def _call(self, what: str, call: Callable[[Any], Any]) -> Any:
        """``call`` on each URL's client in turn from the current one, until one answers.

        A registry's answer (a 404, a 409 incompatible schema) is final, as in Confluent's RestService;
        only an unreachable URL or a retriable status fails over. The errors are SparkcatErrors naming
        the URLs and what was asked.
        """
        from confluent_kafka.schema_registry.error import SchemaRegistryError

        urls, failures = self.settings.urls, []
        for _ in urls:
            url = urls[self.current]
            try:
                answer = call(self._client(url))
                _ANSWERED[urls] = self.current
                return answer
            except SchemaRegistryError as exc:
                if exc.http_status_code not in _FAIL_OVER_STATUSES:
                    raise SparkcatError(f"schema registry {url}, {what}: HTTP {exc.http_status_code} "
                                        f"{exc.error_message}"[:400]) from exc
                failures.append(f"{url}: HTTP {exc.http_status_code} {exc.error_message}")
            except SparkcatError:
                raise
            except Exception as exc:  # httpx's transport errors: refused, timed out, bad address
                failures.append(f"{url}: {exc}")
            self.current = (self.current + 1) % len(urls)
        raise SparkcatError(f"schema registry unreachable ({what}): {'; '.join(failures)}"[:600])


#: Python type -> the Spark type of a schemaless value (one object each: converters cache codecs and schema ids
#: per type object).
SCHEMALESS_TYPES: tuple[tuple[type | tuple[type, ...], T.DataType], ...] = (
    (bool, T.BooleanType()), (int, T.LongType()), (float, T.DoubleType()), (str, T.StringType()),
    ((bytes, bytearray, memoryview), T.BinaryType()))


class RegistryConverter(Converter):
    """What the converters with a Schema Registry share (AvroConverter, JsonSchemaConverter): the registry client
    ``configure`` makes, the topic of the records converted next (their subject depends on it), each Spark type's
    schema made once, and the type a schemaless value is written with. ``NAME`` and ``ERROR`` name the converter
    and its record error in messages."""

    NAME = "RegistryConverter"
    ERROR: type[Exception] = ValueError

    def __init__(self) -> None:
        self.is_key = False
        self.topic = ""
        self._client: RegistryClient | None = None
        self._schemas: dict[int, tuple[T.DataType, Any]] = {}  # id(spark type) -> (the type, kept alive; schema)

    def for_topic(self, topic: str) -> Self:
        """Name the topic of the records converted next (their subject depends on it)."""
        self.topic = topic
        return self

    def _schema(self, spark_type: T.DataType, make: Callable[[T.DataType], Any]) -> Any:
        """``spark_type``'s schema, made by ``make`` once per type object (kept so that its id stays its own)."""
        if id(spark_type) not in self._schemas:
            self._schemas[id(spark_type)] = (spark_type, make(spark_type))
        return self._schemas[id(spark_type)][1]

    def _schemaless_type(self, value: Any) -> T.DataType:
        """The Spark type a ``value`` without a schema is written with; ``ERROR`` naming the side and topic when
        there is none (a dict, a list)."""
        for kind, spark_type in SCHEMALESS_TYPES:
            if isinstance(value, kind):
                return spark_type
        side = "key" if self.is_key else "value"
        raise self.ERROR(f"{self.NAME}: a {side} without a schema (topic {self.topic!r}) can be written only as a "
                         f"string, number, boolean or bytes, not a {type(value).__name__}")

    def _registry(self) -> RegistryClient:
        if self._client is None:
            raise TypeError(f"{self.NAME} used before configure()")
        return self._client


def schema_text(schema: Any) -> str:
    """A schema as the compact JSON text registered (Jackson's, as Confluent's converters send it)."""
    return json.dumps(schema, separators=(",", ":"), ensure_ascii=False)
