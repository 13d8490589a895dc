"""Kafka Connect's built-in converters (JSON, String, ByteArray) and its default header converter.

The interface is ``sparkcat.api.converter.Converter``; ``sparkcat.converters.registry`` maps
Connect's class names and the short aliases to these classes:

- ``org.apache.kafka.connect.json.JsonConverter`` (``json``, the default): JSON; with
  ``schemas.enable`` (default true, as in Connect) wrapped in Connect's envelope
  ``{"schema": ..., "payload": ...}`` whose schema is derived from the Spark type.
- ``org.apache.kafka.connect.storage.StringConverter`` (``string``): UTF-8 text
  (``encoding`` setting as in Connect).
- ``org.apache.kafka.connect.converters.ByteArrayConverter`` (``bytearray``): bytes as they are.

``to_bytes`` runs on executors for every record, so the schema JSON of a Spark type
is computed once per type object and payloads are only walked when the type holds
something JSON cannot carry as is (binary, decimal, date, timestamp, map).
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
from typing import Any

from pyspark.sql import types as T

from sparkcat.api.converter import Converter
from sparkcat.api.records import record_text
from sparkcat.errors import ConfigError

__all__ = ["JsonConverter", "StringConverter", "ByteArrayConverter", "SimpleHeaderConverter",
           "HEADER_CONVERTERS", "SIMPLE_HEADER_CONVERTER", "connect_schema",
           "JSON_CONVERTER", "STRING_CONVERTER", "BYTE_ARRAY_CONVERTER", "AVRO_CONVERTER", "JSON_SCHEMA_CONVERTER",
           "PROTOBUF_CONVERTER"]

JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"
STRING_CONVERTER = "org.apache.kafka.connect.storage.StringConverter"
BYTE_ARRAY_CONVERTER = "org.apache.kafka.connect.converters.ByteArrayConverter"
AVRO_CONVERTER = "io.confluent.connect.avro.AvroConverter"
JSON_SCHEMA_CONVERTER = "io.confluent.connect.json.JsonSchemaConverter"
PROTOBUF_CONVERTER = "io.confluent.connect.protobuf.ProtobufConverter"

_EPOCH_DATE = dt.date(1970, 1, 1)
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_DECIMAL = "org.apache.kafka.connect.data.Decimal"
_DATE = "org.apache.kafka.connect.data.Date"
_TIMESTAMP = "org.apache.kafka.connect.data.Timestamp"
_TIME = "org.apache.kafka.connect.data.Time"
_PRIMITIVES: dict[type, str] = {
    T.ByteType: "int8", T.ShortType: "int16", T.IntegerType: "int32", T.LongType: "int64",
    T.FloatType: "float", T.DoubleType: "double", T.BooleanType: "boolean", T.StringType: "string",
    T.BinaryType: "bytes",
}


def _boolean(key: str, value: Any, default: bool) -> bool:
    """A Connect boolean setting ("true"/"false", any case); anything else is an error, never false."""
    if value is None:
        return default
    text = str(value).strip().lower()
    if text not in ("true", "false"):
        raise ConfigError(f"Invalid value {value} for configuration {key}: Expected value to be either "
                          "true or false")
    return text == "true"


_compact = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode
"""Compact JSON text, as Jackson writes it."""


# ---------------------------------------------------------------- Connect schemas of Spark types


def connect_schema(spark_type: T.DataType, optional: bool = False) -> dict[str, Any]:
    """Connect's JSON schema for a Spark type, with Connect's key order (type, ..., optional, name)."""
    if isinstance(spark_type, T.StructType):
        fields = [{**connect_schema(f.dataType, f.nullable), "field": f.name} for f in spark_type.fields]
        named = {k: v for k, v in (("name", getattr(spark_type, "connect_name", None)),
                                   ("version", getattr(spark_type, "connect_version", None))) if v is not None}
        return {"type": "struct", "fields": fields, "optional": optional, **named}  # named: SetSchemaMetadata
    if isinstance(spark_type, T.ArrayType):
        return {"type": "array", "items": connect_schema(spark_type.elementType, spark_type.containsNull),
                "optional": optional}
    if isinstance(spark_type, T.MapType):
        return {"type": "map", "keys": connect_schema(spark_type.keyType, False),
                "values": connect_schema(spark_type.valueType, spark_type.valueContainsNull), "optional": optional}
    if isinstance(spark_type, T.DecimalType):
        return {"type": "bytes", "optional": optional, "name": _DECIMAL, "version": 1,
                "parameters": {"scale": str(spark_type.scale)}}
    if isinstance(spark_type, T.DateType):
        return {"type": "int32", "optional": optional, "name": _DATE, "version": 1}
    if isinstance(spark_type, (T.TimestampType, T.TimestampNTZType)):
        return {"type": "int64", "optional": optional, "name": _TIMESTAMP, "version": 1}
    if isinstance(spark_type, T.TimeType):
        return {"type": "int32", "optional": optional, "name": _TIME, "version": 1}
    name = _PRIMITIVES.get(type(spark_type))
    if name is None:
        raise TypeError(f"no Kafka Connect schema for Spark type {spark_type.simpleString()}")
    return {"type": name, "optional": optional}


def _needs_walk(spark_type: T.DataType | None) -> bool:
    """Whether values of this type hold something JSON cannot carry unchanged."""
    if spark_type is None:
        return True
    if isinstance(spark_type, T.StructType):
        return any(_needs_walk(f.dataType) for f in spark_type.fields)
    if isinstance(spark_type, T.ArrayType):
        return _needs_walk(spark_type.elementType)
    return isinstance(spark_type, (T.MapType, T.BinaryType, T.DecimalType, T.DateType, T.TimestampType,
                                   T.TimestampNTZType, T.TimeType))


def unscaled_bytes(value: decimal.Decimal, scale: int) -> bytes:
    """Connect's Decimal: the unscaled value as big-endian two's complement bytes."""
    unscaled = int(value.scaleb(scale).to_integral_value(rounding=decimal.ROUND_HALF_UP))
    length = max(1, (unscaled + (unscaled < 0)).bit_length() // 8 + 1)
    return unscaled.to_bytes(length, "big", signed=True)


def _timestamp_ms(value: dt.datetime) -> int:
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.timezone.utc)
    return (value - _EPOCH) // dt.timedelta(milliseconds=1)


def _time_ms(value: dt.time) -> int:
    return ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + value.microsecond // 1000


def _payload(value: Any, spark_type: T.DataType | None, numeric_decimal: bool) -> Any:
    """A Python value as Connect's JsonConverter writes its payload."""
    if value is None:
        return None
    if hasattr(value, "asDict"):  # a Spark Row
        value = value.asDict(recursive=True)
    if isinstance(spark_type, T.StructType):
        return {f.name: _payload(value.get(f.name), f.dataType, numeric_decimal) for f in spark_type.fields}
    if isinstance(spark_type, T.ArrayType):
        return [_payload(v, spark_type.elementType, numeric_decimal) for v in value]
    if isinstance(spark_type, T.MapType):
        items = value.items() if isinstance(value, dict) else value
        if isinstance(spark_type.keyType, T.StringType):
            return {k: _payload(v, spark_type.valueType, numeric_decimal) for k, v in items}
        return [[_payload(k, spark_type.keyType, numeric_decimal), _payload(v, spark_type.valueType, numeric_decimal)]
                for k, v in items]
    if isinstance(spark_type, T.DecimalType):
        if numeric_decimal:
            return float(value) if spark_type.scale else int(value)
        return base64.b64encode(unscaled_bytes(decimal.Decimal(value), spark_type.scale)).decode("ascii")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, dt.datetime):
        return _timestamp_ms(value)
    if isinstance(value, dt.date):
        return (value - _EPOCH_DATE).days
    if isinstance(value, dt.time):  # Connect's Time: milliseconds since midnight
        return _time_ms(value)
    if isinstance(value, dict):
        return {k: _payload(v, None, numeric_decimal) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_payload(v, None, numeric_decimal) for v in value]
    if isinstance(value, decimal.Decimal):
        return float(value)
    return value


def _from_payload(schema: dict[str, Any] | None, payload: Any, defaults: bool = True) -> Any:
    """Undo the JSON encodings of Connect's schema types (bytes, Decimal, Date, Time, Timestamp, maps); with
    ``defaults`` (``replace.null.with.default``) a null or missing struct field whose schema has a ``"default"``
    is that default, as Connect's ``convertToConnect`` gives it (for any null: the record's own value, an array's
    element, a map's value)."""
    if schema is None:
        return payload
    if payload is None:
        default = schema.get("default") if defaults else None
        return None if default is None else _from_payload(schema, default, defaults)
    kind, name = schema.get("type"), schema.get("name")
    if kind == "struct":
        fields = {f.get("field"): f for f in schema.get("fields", [])}
        out = {k: _from_payload(fields.get(k), v, defaults) for k, v in payload.items()}
        for field_name, field_schema in fields.items() if defaults else ():
            if out.get(field_name) is None and field_schema.get("default") is not None:
                out[field_name] = _from_payload(field_schema, field_schema["default"], defaults)
        return out
    if kind == "array":
        return [_from_payload(schema.get("items"), v, defaults) for v in payload]
    if kind == "map":
        keys, values = schema.get("keys"), schema.get("values")
        pairs = payload.items() if isinstance(payload, dict) else payload
        return {_from_payload(keys, k, defaults): _from_payload(values, v, defaults) for k, v in pairs}
    if kind == "bytes" and isinstance(payload, str):
        data = base64.b64decode(payload)
        if name == _DECIMAL:
            scale = int(schema.get("parameters", {}).get("scale", "0"))
            return decimal.Decimal(int.from_bytes(data, "big", signed=True)).scaleb(-scale)
        return data
    if name == _DATE and isinstance(payload, int):
        return _EPOCH_DATE + dt.timedelta(days=payload)
    if name == _TIMESTAMP and isinstance(payload, int):
        return _EPOCH + dt.timedelta(milliseconds=payload)
    if name == _TIME and isinstance(payload, int):
        return (dt.datetime.min + dt.timedelta(milliseconds=payload)).time()
    return payload


# ---------------------------------------------------------------- converters


class JsonConverter(Converter):
    """Connect's JsonConverter: ``schemas.enable`` (default true), ``decimal.format`` BASE64 or NUMERIC,
    ``replace.null.with.default`` (default true: reading, a null field with a schema default is the default;
    the schemas sparkcat writes come from Spark types, which have no defaults, so writing is the same either way)."""

    def __init__(self) -> None:
        self.schemas_enable = True
        self.replace_null = True
        self.numeric_decimal = False
        self._schema_type: T.DataType | None = None
        self._schema_text = "null"
        self._walk = True

    def configure(self, settings: dict[str, str], is_key: bool) -> None:
        self.schemas_enable = _boolean("schemas.enable", settings.get("schemas.enable"), True)
        self.numeric_decimal = str(settings.get("decimal.format", "BASE64")).strip().upper() == "NUMERIC"
        self.replace_null = _boolean("replace.null.with.default", settings.get("replace.null.with.default"), True)

    def _prepare(self, spark_type: T.DataType | None) -> None:
        """Cache the schema text and walk decision for the type of the last call."""
        if spark_type is self._schema_type and spark_type is not None:
            return
        self._schema_type = spark_type
        self._schema_text = "null" if spark_type is None else _compact(connect_schema(spark_type))
        self._walk = _needs_walk(spark_type)

    def to_bytes(self, value: Any, spark_type: T.DataType | None) -> bytes | None:
        if value is None:
            return None
        self._prepare(spark_type)
        payload = _payload(value, spark_type, self.numeric_decimal) if self._walk else value
        text = _compact(payload)
        if self.schemas_enable:
            text = '{"schema":' + self._schema_text + ',"payload":' + text + "}"
        return text.encode("utf-8")

    def from_bytes(self, data: bytes | None) -> Any:
        if data is None:
            return None
        try:
            parsed = json.loads(bytes(data))
        except ValueError as e:
            raise ValueError(f"Converting byte[] to Kafka Connect data failed due to serialization error: {e}") from e
        if not self.schemas_enable:
            return parsed
        if not (isinstance(parsed, dict) and len(parsed) == 2 and "schema" in parsed and "payload" in parsed):
            raise ValueError('JsonConverter with schemas.enable requires "schema" and "payload" fields and may not '
                             'contain additional fields. If you are trying to deserialize plain JSON data, set '
                             'schemas.enable=false in your converter configuration.')
        return _from_payload(parsed["schema"], parsed["payload"], self.replace_null)


class StringConverter(Converter):
    """Connect's StringConverter: text in ``encoding`` (default UTF-8); dicts and lists as compact JSON."""

    def __init__(self) -> None:
        self.encoding = "utf-8"

    def configure(self, settings: dict[str, str], is_key: bool) -> None:
        self.encoding = settings.get("encoding") or settings.get("converter.encoding") or "utf-8"

    def to_bytes(self, value: Any, spark_type: T.DataType | None) -> bytes | None:
        if value is None:
            return None
        if isinstance(value, (bytes, bytearray, memoryview)):
            return bytes(value)
        return record_text(value).encode(self.encoding)

    def from_bytes(self, data: bytes | None) -> Any:
        return None if data is None else bytes(data).decode(self.encoding)


class ByteArrayConverter(Converter):
    """Connect's ByteArrayConverter: values must already be bytes."""

    def to_bytes(self, value: Any, spark_type: T.DataType | None) -> bytes | None:
        if value is None:
            return None
        if isinstance(value, (bytes, bytearray, memoryview)):
            return bytes(value)
        raise TypeError(f"ByteArrayConverter is not compatible with objects of type {type(value).__name__}")

    def from_bytes(self, data: bytes | None) -> Any:
        return None if data is None else bytes(data)


SIMPLE_HEADER_CONVERTER = "org.apache.kafka.connect.storage.SimpleHeaderConverter"


class SimpleHeaderConverter:
    """Connect's default ``header.converter``: header values as their text in UTF-8, bytes as they are.

    Strings are written as they are, numbers and booleans as their text (``42``, ``true``), maps,
    lists and structs as compact JSON; reading gives the text back (Connect would also infer a
    schema from it, which sparkcat's SinkRecord headers do not carry).
    """

    def to_bytes(self, value: Any) -> bytes | None:
        if value is None:
            return None
        if isinstance(value, (bytes, bytearray, memoryview)):
            return bytes(value)
        return record_text(value).encode("utf-8")

    def from_bytes(self, data: bytes | None) -> Any:
        return None if data is None else bytes(data).decode("utf-8", errors="replace")


#: ``header.converter`` values sparkcat implements (the default, and its names).
HEADER_CONVERTERS = frozenset({SIMPLE_HEADER_CONVERTER, "SimpleHeaderConverter"})
