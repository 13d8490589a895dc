"""JSON Schema for Confluent's ``JsonSchemaConverter``: Connect's JsonSchemaData schema mapping, Spark side.

Spark type -> Connect schema (as ``builtins.connect_schema`` derives it) -> JSON Schema as Confluent's
``io.confluent.connect.json.JsonSchemaData.fromConnectSchema`` writes it:

- int8/int16/int32/int64 (Spark byte, short, int, long): ``{"type":"integer","connect.type":"int8"}`` ...;
  float32/float64 (float, double): ``{"type":"number","connect.type":"float32"}`` ...; boolean
  ``{"type":"boolean"}``; string ``{"type":"string"}``; bytes (binary) ``{"type":"string","connect.type":"bytes"}``.
- Connect's logical types keep their base type and add the name as ``title``, ``connect.version`` 1 and
  their parameters: Decimal (Spark decimal) ``{"type":"string","title":"org.apache.kafka.connect.data.Decimal",
  "connect.version":1,"connect.type":"bytes","connect.parameters":{"scale":"2"}}`` (``"type":"number"`` with
  ``decimal.format=NUMERIC``), Date (date) an int32, Time (time) an int32, Timestamp (timestamp) an int64.
- A struct is ``{"type":"object","title":NAME,"properties":{...}}`` (a title only when named, e.g. by
  SetSchemaMetadata), each property with ``connect.index`` (its position); ``"additionalProperties":false``
  with ``object.additional.properties=false``. No ``required`` list, as in Connect.
- An optional (nullable) part is ``{"oneOf":[{"type":"null"},SCHEMA]}``, ``connect.index`` on the oneOf.
- An array is ``{"type":"array","items":...}``; a map with string keys ``{"type":"object","connect.type":"map",
  "additionalProperties":VALUES}``, any other map ``{"type":"array","connect.type":"map","items":{"type":
  "object","properties":{"key":...,"value":...}}}`` (key at index 0, value at 1).

Keys come in everit's order (``type`` first, then ``title``, then the ``connect.*`` properties in the order
a Java HashMap of them iterates: index, version, type, parameters), written compact as Jackson does.

Values are written as JsonSchemaData.fromConnectData does: bytes in base64, a Decimal's unscaled bytes in
base64 (or the number with NUMERIC), dates as days, times as milliseconds of the day, timestamps as epoch
milliseconds, a null optional field as ``null``.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import math
import struct
from dataclasses import dataclass
from typing import Any

from pyspark.sql import types as T

from sparkcat.converters.builtins import unscaled_bytes
from sparkcat.errors import ConfigError

_CONNECT = "org.apache.kafka.connect.data."
DECIMAL, DATE, TIME, TIMESTAMP = (_CONNECT + n for n in ("Decimal", "Date", "Time", "Timestamp"))

#: Spark type -> Connect's type name (``connect.type``) and JSON Schema's type.
_PRIMITIVES: dict[type, tuple[str | None, str]] = {
    T.ByteType: ("int8", "integer"), T.ShortType: ("int16", "integer"), T.IntegerType: ("int32", "integer"),
    T.LongType: ("int64", "integer"), T.FloatType: ("float32", "number"), T.DoubleType: ("float64", "number"),
    T.BooleanType: (None, "boolean"), T.StringType: (None, "string"), T.BinaryType: ("bytes", "string"),
}
#: Spark's date, time and timestamp types -> Connect's logical type and its base type.
_TEMPORAL: tuple[tuple[tuple[type, ...], str, str], ...] = (
    ((T.DateType,), DATE, "int32"), ((T.TimeType,), TIME, "int32"),
    ((T.TimestampType, T.TimestampNTZType), TIMESTAMP, "int64"))
#: The order a Java HashMap of JsonSchemaData's ``connect.*`` properties iterates (a schema's few keys).
_PROP_ORDER = ("connect.index", "connect.version", "connect.type", "connect.parameters")


@dataclass(frozen=True)
class JsonSchemaOptions:
    """JsonSchemaData's settings sparkcat implements: ``decimal.format``, ``object.additional.properties``."""

    numeric_decimal: bool = False
    additional_properties: bool = True


def json_schema(data_type: T.DataType, options: JsonSchemaOptions = JsonSchemaOptions(),
                optional: bool = False) -> dict[str, Any]:
    """The JSON Schema Connect's JsonSchemaData gives a value of this Spark type."""
    return _schema(data_type, options, optional, None)


def _schema(data_type: T.DataType, options: JsonSchemaOptions, optional: bool, index: int | None) -> dict[str, Any]:
    base = _required(data_type, options)
    if not optional:
        return _with_props(base, {"connect.index": index} if index is not None else {})
    combined = {"oneOf": [{"type": "null"}, base]}
    return _with_props(combined, {"connect.index": index}) if index is not None else combined


def _with_props(schema: dict[str, Any], props: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with ``connect.*`` properties placed as everit prints them: after type and title, in
    HashMap order, before ``properties`` / ``items`` / ``additionalProperties`` / ``oneOf``."""
    head = {k: schema[k] for k in ("type", "additionalProperties", "title") if k in schema}
    if head.get("additionalProperties") is not False:
        head.pop("additionalProperties", None)
    merged = {**{k: v for k, v in schema.items() if k.startswith("connect.")}, **props}
    ordered = {k: merged[k] for k in _PROP_ORDER if k in merged}
    return {**head, **ordered, **{k: v for k, v in schema.items() if k not in head and k not in merged}}


def _required(data_type: T.DataType, options: JsonSchemaOptions) -> dict[str, Any]:
    primitive = _PRIMITIVES.get(type(data_type))
    if primitive is not None:
        connect_type, json_type = primitive
        return {"type": json_type, **({"connect.type": connect_type} if connect_type else {})}
    if isinstance(data_type, T.DecimalType):
        return _with_props({"type": "number" if options.numeric_decimal else "string", "title": DECIMAL},
                           {"connect.version": 1, "connect.type": "bytes",
                            "connect.parameters": {"scale": str(data_type.scale)}})
    for kinds, name, connect_type in _TEMPORAL:
        if isinstance(data_type, kinds):
            return _with_props({"type": "integer", "title": name},
                               {"connect.version": 1, "connect.type": connect_type})
    if isinstance(data_type, T.StructType):
        return _struct(data_type, options)
    if isinstance(data_type, T.ArrayType):
        return {"type": "array", "items": _schema(data_type.elementType, options, data_type.containsNull, None)}
    if isinstance(data_type, T.MapType):
        return _map(data_type, options)
    raise ConfigError(f"JsonSchemaConverter: Spark type {data_type.simpleString()} has no JSON Schema mapping")


def _struct(data_type: T.StructType, options: JsonSchemaOptions) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object"}
    if not options.additional_properties:
        out["additionalProperties"] = False
    name, version = getattr(data_type, "connect_name", None), getattr(data_type, "connect_version", None)
    if name is not None:
        out["title"] = name
    if version is not None:
        out["connect.version"] = version
    out = _with_props(out, {})
    properties = {f.name: _schema(f.dataType, options, f.nullable, i) for i, f in enumerate(data_type.fields)}
    return {**out, "properties": properties} if properties else out


def _map(data_type: T.MapType, options: JsonSchemaOptions) -> dict[str, Any]:
    values = _schema(data_type.valueType, options, data_type.valueContainsNull, None)
    if isinstance(data_type.keyType, T.StringType):
        return {"type": "object", "connect.type": "map", "additionalProperties": values}
    entry = {"type": "object", "properties": {
        "key": _schema(data_type.keyType, options, False, 0),
        "value": _schema(data_type.valueType, options, data_type.valueContainsNull, 1)}}
    return {"type": "array", "connect.type": "map", "items": entry}


def schema_title(schema: Any) -> str:
    """A JSON Schema's record name (its ``title``): RecordNameStrategy's subject, as Confluent's JsonSchema.name()."""
    title = schema.get("title") if isinstance(schema, dict) else None
    if not title:
        raise ConfigError("RecordNameStrategy / TopicRecordNameStrategy need a named struct with JsonSchemaConverter "
                          "(its name is the JSON Schema's title: set it with SetSchemaMetadata)")
    return str(title)


# ---------------------------------------------------------------- values


class _Number(str):
    """Number text written as it is (a float32's shortest digits, a Decimal's)."""


def json_value(value: Any, data_type: T.DataType | None, options: JsonSchemaOptions) -> Any:
    """A Spark value (Rows, dicts, pairs) as JsonSchemaData.fromConnectData gives it, ready for ``dumps``."""
    if value is None:
        return None
    if hasattr(value, "asDict"):
        value = value.asDict(recursive=False)
    if isinstance(data_type, T.StructType):
        return {f.name: json_value(value.get(f.name), f.dataType, options) for f in data_type.fields
                if value.get(f.name) is not None or f.nullable}
    if isinstance(data_type, T.ArrayType):
        return [json_value(v, data_type.elementType, options) for v in value]
    if isinstance(data_type, T.MapType):
        items = value.items() if isinstance(value, dict) else value
        pairs = [(json_value(k, data_type.keyType, options), json_value(v, data_type.valueType, options))
                 for k, v in items]
        if isinstance(data_type.keyType, T.StringType):
            return dict(pairs)
        return [{"key": k, "value": v} for k, v in pairs]
    if isinstance(data_type, T.DecimalType):
        number = decimal.Decimal(value)
        if options.numeric_decimal:
            return _Number(str(number.quantize(decimal.Decimal(1).scaleb(-data_type.scale))))
        return base64.b64encode(unscaled_bytes(number, data_type.scale)).decode("ascii")
    if isinstance(data_type, T.FloatType):
        return _float32(float(value))
    return _scalar(value)


def _scalar(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, dt.datetime):
        aware = value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)
        return (aware - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)) // dt.timedelta(milliseconds=1)
    if isinstance(value, dt.date):
        return (value - dt.date(1970, 1, 1)).days
    if isinstance(value, dt.time):
        return ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + value.microsecond // 1000
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")  # Jackson's default
    return value


def _float32(value: float) -> Any:
    """A float32 as its shortest digits that read back as the same float32 (Java's Float.toString digits)."""
    if not math.isfinite(value):
        return _scalar(value)
    single = struct.unpack(">f", struct.pack(">f", value))[0]
    for digits in range(1, 10):
        text = f"{single:.{digits}g}"
        if struct.unpack(">f", struct.pack(">f", float(text)))[0] == single:
            return _Number(repr(float(text)))
    return single


def dumps(value: Any) -> str:
    """Compact JSON as Jackson writes it, with ``_Number`` text as numbers."""
    if isinstance(value, _Number):
        return str(value)
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(str(k), ensure_ascii=False)}:{dumps(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(dumps(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)
