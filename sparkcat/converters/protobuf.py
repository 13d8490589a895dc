"""Confluent's ``io.confluent.connect.protobuf.ProtobufConverter`` on the Converter interface.

A built-in converter (``converters.PROTOBUF_CONVERTER``, alias ``protobuf``), built as AvroConverter and
JsonSchemaConverter are (``schema_registry.RegistryConverter``): the Spark side names each record's topic first,
a Spark type's proto3 schema (``protobuf_schema``, ProtobufData's mapping) is registered once per subject
(schema type ``PROTOBUF``; the same registry settings, URL fail-over and subject name strategies, RecordNameStrategy
naming the subject by the message's full name), and records are Confluent's wire format with message indexes
(``protobuf_values``). Reading takes the writer's schema from the registry by id (``format=serialized``), so
records of any Confluent-style producer read as dicts. Its own settings besides the registry's, ProtobufDataConfig's
with Confluent's defaults (``protobuf_schema.ProtoOptions``): ``optional.for.nullables`` (false: a null is written as
the field's default, as ProtobufData does), ``wrapper.for.nullables``, ``scrub.invalid.names`` (writing),
``int.for.enums``, ``generate.struct.for.nulls``, ``generate.index.for.unions``, ``flatten.unions`` (reading) and
``schemas.cache.size`` (accepted; sparkcat keeps a schema per Spark type). ProtobufData's other settings are
refused by name (``UNSUPPORTED``). Protobuf has no root primitive here: a value without a schema, or of a
non-struct type, fails the record naming the topic.

The packages come with ``pip install 'sparkcat[protobuf]'`` (protobuf, googleapis-common-protos); without
them the converter is refused in validation (``protobuf_missing``) and ``configure`` raises a ConfigError.
"""

from __future__ import annotations

import importlib.util
from typing import Any

from pyspark.sql import types as T

from sparkcat.converters.avro_data import avro_missing, avro_missing_message
from sparkcat.converters.protobuf_schema import (NAME, PROTOBUF_MODULES, ProtobufError, ProtoOptions, proto_file,
                                                 schema_text)
from sparkcat.converters.schema_registry import (RegistryClient, RegistryConverter, RegistrySettings, bool_setting,
                                                 settings_problems, subject_name)
from sparkcat.errors import ConfigError

__all__ = ["ProtobufConverter", "protobuf_problems", "protobuf_missing", "OWN_KEYS", "UNSUPPORTED"]

#: ProtobufDataConfig's boolean settings sparkcat implements -> their ``ProtoOptions`` field (Confluent's defaults).
BOOLEAN_KEYS = {"optional.for.nullables": "optional_for_nullables", "wrapper.for.nullables": "wrapper_for_nullables",
                "scrub.invalid.names": "scrub_invalid_names", "int.for.enums": "int_for_enums",
                "generate.struct.for.nulls": "generate_struct_for_nulls",
                "generate.index.for.unions": "generate_index_for_unions", "flatten.unions": "flatten_unions"}
#: ProtobufDataConfig's settings sparkcat implements, besides the registry's.
OWN_KEYS = (*BOOLEAN_KEYS, "schemas.cache.size")
#: Confluent's ProtobufConverter settings (ProtobufDataConfig, KafkaProtobufSerializerConfig) sparkcat refuses.
UNSUPPORTED = ("enhanced.protobuf.schema.support", "wrapper.for.raw.primitives", "optional.for.proto2",
               "use.optional.for.nonrequired", "reference.subject.name.strategy", "skip.known.types",
               "normalize.schemas", "latest.compatibility.strict", "use.schema.id", "use.latest.with.metadata",
               "derive.type")


def protobuf_missing() -> list[str]:
    """The packages ProtobufConverter needs that cannot be imported here (checked without importing them)."""
    missing = [package for module, package in PROTOBUF_MODULES if _spec(module) is None]
    return missing + avro_missing(with_fastavro=False)


def _spec(module: str) -> Any:
    try:
        return importlib.util.find_spec(module)
    except ModuleNotFoundError:  # its parent package is missing
        return None


def protobuf_missing_message(missing: list[str], converter: str = "io.confluent.connect.protobuf."
                             "ProtobufConverter") -> str:
    return avro_missing_message(missing, converter, extra="protobuf")


def protobuf_problems(config: dict[str, Any], is_key: bool) -> dict[str, list[str]]:
    """What is wrong with one ProtobufConverter's settings, per setting (prefix removed); empty when fine."""
    registry = {k: v for k, v in config.items() if k not in OWN_KEYS and k not in UNSUPPORTED}
    out = settings_problems(registry, is_key, NAME)
    for messages in out.values():
        messages[:] = [m.replace("(implemented: ", f"(implemented: {', '.join(OWN_KEYS)}, ") for m in messages]
    for key in sorted(k for k in config if k in UNSUPPORTED):
        out[key] = [f"{NAME} setting {key!r} is not supported yet by sparkcat; remove it"]
    for key in BOOLEAN_KEYS:
        try:
            bool_setting(config, key, getattr(ProtoOptions(), BOOLEAN_KEYS[key]), NAME)
        except ConfigError as exc:
            out[key] = [exc.message]
    size = str(config.get("schemas.cache.size", "1000")).strip()
    if not size.isdigit():
        out["schemas.cache.size"] = [f"{NAME}: schemas.cache.size must be a whole number of at least 0, not "
                                     f"{config['schemas.cache.size']!r}"]
    return out


def proto_options(config: dict[str, Any]) -> ProtoOptions:
    """The ProtobufDataConfig settings of ``config`` (checked by ``protobuf_problems``), Confluent's defaults."""
    defaults = ProtoOptions()
    return ProtoOptions(**{field: bool_setting(config, key, getattr(defaults, field), NAME)
                           for key, field in BOOLEAN_KEYS.items()})


class ProtobufConverter(RegistryConverter):
    """Protobuf messages in the Confluent wire format, their schemas in a Schema Registry."""

    NAME, ERROR = NAME, ProtobufError

    def __init__(self) -> None:
        super().__init__()
        self.options = ProtoOptions()
        self._writers: dict[tuple[str, int], tuple[int, Any]] = {}  # (topic, id(type)) -> (schema id, class)
        self._readers: dict[int, Any] = {}  # schema id -> ProtoSchema

    def configure(self, settings: dict[str, Any], is_key: bool) -> None:
        self.is_key = is_key
        missing = protobuf_missing()
        if missing:
            raise ConfigError(protobuf_missing_message(missing))
        problems = protobuf_problems(dict(settings), is_key)
        if problems:
            raise ConfigError("; ".join(f"{k}: {' '.join(m)}" for k, m in problems.items()), problems)
        self.options = proto_options(settings)
        registry = {k: v for k, v in settings.items() if k not in OWN_KEYS}
        self._client = RegistryClient(RegistrySettings.parse(registry, is_key, NAME), "PROTOBUF")

    def to_bytes(self, value: Any, spark_type: T.DataType | None) -> bytes | None:
        from sparkcat.converters.protobuf_values import fill, frame

        if value is None:
            return None
        if spark_type is None:
            side = "key" if self.is_key else "value"
            raise ProtobufError(f"{NAME}: a {side} without a schema (topic {self.topic!r}) cannot be written: "
                                "Protobuf records are messages, written from structs")
        schema_id, message_class = self._writer(spark_type)
        try:
            message = fill(message_class(), value, self.options)
        except ProtobufError as exc:
            raise ProtobufError(f"{NAME}: a record for topic {self.topic!r} does not fit schema id {schema_id}: "
                                f"{exc}") from exc
        return frame(schema_id, message.SerializeToString())

    def from_bytes(self, data: bytes | None) -> Any:
        from google.protobuf.message import DecodeError

        from sparkcat.converters.protobuf_values import read, unframe

        if data is None:
            return None
        schema_id, indexes, payload = unframe(bytes(data), self.topic)
        message_class = self._reader(schema_id).message_class(indexes)
        try:
            return read(message_class.FromString(payload), self.options)
        except DecodeError as exc:
            raise ProtobufError(f"{NAME}: a record of topic {self.topic!r} is not Protobuf of schema id "
                                f"{schema_id}: {exc}") from exc

    def _writer(self, spark_type: T.DataType) -> tuple[int, Any]:
        """The schema id and message class records of ``spark_type`` are written with (registered once)."""
        from sparkcat.converters.protobuf_values import message_name

        key = (self.topic, id(spark_type))
        if key not in self._writers:
            text = self._schema(spark_type, lambda t: schema_text(proto_file(t, self.options)))
            client = self._registry()
            subject = subject_name(client.settings.strategy, self.topic, self.is_key, text, message_name)
            schema_id, write_text = client.id_for(subject, text)
            if schema_id not in self._readers:
                self._readers[schema_id] = self._loaded(schema_id, write_text)
            self._writers[key] = (schema_id, self._readers[schema_id].message_class())
        return self._writers[key]

    def _reader(self, schema_id: int) -> Any:
        if schema_id not in self._readers:
            self._readers[schema_id] = self._loaded(schema_id, self._registry().schema(schema_id))
        return self._readers[schema_id]

    @staticmethod
    def _loaded(schema_id: int, registered: str | tuple[str, tuple[tuple[str, str], ...]]) -> Any:
        """A registered schema loaded: its text, or its text and referenced files (``RegistryClient``)."""
        from sparkcat.converters.protobuf_values import ProtoSchema

        text, references = (registered, ()) if isinstance(registered, str) else registered
        return ProtoSchema(schema_id, text, references)
