"""Confluent's ``io.confluent.connect.json.JsonSchemaConverter`` on the Converter interface.

A built-in converter (``converters.JSON_SCHEMA_CONVERTER``, alias ``jsonschema``), built as AvroConverter is:
the Spark side names each record's topic first (``for_topic``: the subject depends on it), the schema of
a Spark type is registered once per subject (``schema_registry.RegistryClient``, schema type ``JSON``, the
same settings and subject name strategies as AvroConverter, RecordNameStrategy naming the subject by the
schema's ``title``). The wire format is Confluent's: magic byte 0, the schema id as 4 bytes big-endian,
then the JSON text. Schema and values follow Connect's JsonSchemaData (``json_schema_data`` writes,
``json_schema_values`` reads). Its own settings besides the registry's: ``decimal.format`` (BASE64 or
NUMERIC) and ``object.additional.properties`` (true).

A value without a Spark type (a source connector's key: JSON text without a schema) is written under the
schema of its Python type (``str`` a string, ``int`` an int64, ``float`` a float64, ``bool`` a boolean,
``bytes`` bytes); a dict or list without a schema fails the record, as Confluent's converter fails
every value without a schema.
"""

from __future__ import annotations

import struct
from typing import Any

from pyspark.sql import types as T

from sparkcat.converters.json_schema_data import JsonSchemaOptions, dumps, json_schema, json_value, schema_title
from sparkcat.converters.json_schema_values import JsonSchemaError, loads, read_value
from sparkcat.converters.schema_registry import (RegistryClient, RegistryConverter, RegistrySettings, bool_setting,
                                                 settings_problems, subject_name)
from sparkcat.errors import ConfigError

__all__ = ["JsonSchemaConverter", "json_schema_problems"]

MAGIC = 0
_NAME = "JsonSchemaConverter"
#: JsonSchemaData's settings sparkcat implements, besides the registry's.
OWN_KEYS = ("decimal.format", "object.additional.properties")


def json_schema_problems(config: dict[str, Any], is_key: bool) -> dict[str, list[str]]:
    """What is wrong with one JsonSchemaConverter's settings, per setting (prefix removed); empty when fine."""
    out = settings_problems({k: v for k, v in config.items() if k not in OWN_KEYS}, is_key, _NAME)
    for messages in out.values():
        messages[:] = [m.replace("(implemented: ", f"(implemented: {', '.join(OWN_KEYS)}, ") for m in messages]
    for key, check in (("decimal.format", _decimal_format), ("object.additional.properties", _additional)):
        try:
            check(config)
        except ConfigError as exc:
            out.setdefault(key, []).append(exc.message)
    return out


def _decimal_format(config: dict[str, Any]) -> bool:
    """True for NUMERIC, False for BASE64 (the default)."""
    value = str(config.get("decimal.format", "BASE64")).strip().upper()
    if value not in ("BASE64", "NUMERIC"):
        raise ConfigError(f"{_NAME}: decimal.format must be BASE64 or NUMERIC, not {config['decimal.format']!r}")
    return value == "NUMERIC"


def _additional(config: dict[str, Any]) -> bool:
    return bool_setting(config, "object.additional.properties", True, _NAME)


class JsonSchemaConverter(RegistryConverter):
    """JSON values in the Confluent wire format, their JSON Schemas in a Schema Registry."""

    NAME, ERROR = _NAME, JsonSchemaError

    def __init__(self) -> None:
        super().__init__()
        self.options = JsonSchemaOptions()
        self._ids: dict[tuple[str, int], int] = {}  # (topic, id(spark type)) -> schema id

    def configure(self, settings: dict[str, Any], is_key: bool) -> None:
        self.is_key = is_key
        problems = json_schema_problems(dict(settings), is_key)
        if problems:
            raise ConfigError("; ".join(f"{k}: {' '.join(m)}" for k, m in problems.items()), problems)
        self.options = JsonSchemaOptions(_decimal_format(settings), _additional(settings))
        registry = {k: v for k, v in settings.items() if k not in OWN_KEYS}
        self._client = RegistryClient(RegistrySettings.parse(registry, is_key, _NAME), "JSON")

    def to_bytes(self, value: Any, spark_type: T.DataType | None) -> bytes | None:
        if value is None:
            return None
        if spark_type is None:
            spark_type = self._schemaless_type(value)
        schema_id = self._schema_id(spark_type)
        try:
            text = dumps(json_value(value, spark_type, self.options))
        except (TypeError, ValueError, AttributeError) as exc:
            raise JsonSchemaError(f"{_NAME}: a record for topic {self.topic!r} does not fit schema id "
                                  f"{schema_id}: {exc}") from exc
        return struct.pack(">bI", MAGIC, schema_id) + text.encode("utf-8")

    def from_bytes(self, data: bytes | None) -> Any:
        if data is None:
            return None
        payload = bytes(data)
        if len(payload) < 5 or payload[0] != MAGIC:
            raise JsonSchemaError(f"{_NAME}: a record of topic {self.topic!r} is not in Confluent's wire format "
                                  "(no magic byte 0 and schema id)")
        schema_id = struct.unpack(">I", payload[1:5])[0]
        schema = self._registry().schema(schema_id)
        try:
            return read_value(schema, loads(payload[5:]))
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise JsonSchemaError(f"{_NAME}: a record of topic {self.topic!r} is not JSON of schema id "
                                  f"{schema_id}: {exc}") from exc

    def _schema_id(self, spark_type: T.DataType) -> int:
        key = (self.topic, id(spark_type))
        if key not in self._ids:
            schema = self._schema(spark_type, lambda t: json_schema(t, self.options))
            client = self._registry()
            subject = subject_name(client.settings.strategy, self.topic, self.is_key, schema, schema_title)
            self._ids[key] = client.id_for(subject, schema)[0]
        return self._ids[key]

