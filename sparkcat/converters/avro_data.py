"""Avro for Confluent's ``AvroConverter``: Connect's AvroData schema mapping and the wire format.

Spark type -> Avro schema follows Connect's ``io.confluent.connect.avro.AvroData``: int8/int16 are
Avro ``int`` with ``connect.type``, int32 ``int``, int64 ``long``, float32 ``float``, float64
``double``, boolean, string, bytes; a struct is a record (unnamed ones are
``io.confluent.connect.avro.ConnectDefault``, nested ones ``ConnectDefault2``, ...); arrays and
string-keyed maps are Avro arrays and maps, other maps arrays of ``MapEntry`` records; an optional
(nullable) part is the union ``["null", T]`` with default null. Connect's logical types carry
AvroData's props and Avro's logical type: a Spark decimal is Connect's ``Decimal`` (``bytes``,
``decimal`` with the Spark type's scale and precision, the precision also as Connect's
``connect.decimal.precision`` parameter), a date ``Date`` (``int``, ``date``), a time ``Time``
(``int``, ``time-millis``), a timestamp ``Timestamp`` (``long``, ``timestamp-millis``).

The wire format is magic byte 0, the schema id as 4 bytes big-endian, then Avro binary.

fastavro (the ``avro`` extra: ``pip install 'sparkcat[avro]'``) is imported when a codec is
built, so sparkcat imports and validates without it; ``avro_missing`` tells validation.
"""

from __future__ import annotations

import importlib.util
import io
import struct
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import types as T

from sparkcat.errors import ConfigError, SparkcatError

NAMESPACE = "io.confluent.connect.avro"
MAGIC = 0

_PRIMITIVES: dict[type, Any] = {
    T.ByteType: {"type": "int", "connect.type": "int8"},
    T.ShortType: {"type": "int", "connect.type": "int16"},
    T.IntegerType: "int",
    T.LongType: "long",
    T.FloatType: "float",
    T.DoubleType: "double",
    T.BooleanType: "boolean",
    T.StringType: "string",
    T.BinaryType: "bytes",
}


class AvroError(SparkcatError):
    """A record that cannot be written or read as Avro (names the topic)."""


#: What AvroConverter imports: fastavro, and confluent-kafka's Schema Registry client's own packages.
AVRO_PACKAGES = ("fastavro", "attrs", "cachetools", "certifi", "authlib")


def avro_missing(with_fastavro: bool = True) -> list[str]:
    """The packages AvroConverter (JsonSchemaConverter: ``with_fastavro`` false) needs that cannot be imported
    here (checked without importing them)."""
    wanted = [p for p in AVRO_PACKAGES if with_fastavro or p != "fastavro"]
    missing = [p for p in wanted if importlib.util.find_spec(p) is None]
    if importlib.util.find_spec("httpx2") is None and importlib.util.find_spec("httpx") is None:
        missing.append("httpx2")
    return missing


def avro_missing_message(missing: list[str], converter: str = "io.confluent.connect.avro.AvroConverter",
                         extra: str = "avro") -> str:
    """A registry converter's packages are missing: which, and the sparkcat extra that installs them."""
    return (f"{converter} needs the Python package(s) {', '.join(missing)}, not "
            f"installed; install them with pip install 'sparkcat[{extra}]'")


def _fastavro() -> Any:
    try:
        import fastavro
    except ImportError as exc:
        raise ConfigError(avro_missing_message(["fastavro"])) from exc
    return fastavro


@dataclass
class _Names:
    """Hands out ConnectDefault, ConnectDefault2, ... as Connect's AvroData does."""

    count: int = 0

    def next(self) -> str:
        self.count += 1
        return "ConnectDefault" if self.count == 1 else f"ConnectDefault{self.count}"


def avro_schema(data_type: T.DataType, optional: bool = False) -> Any:
    """The Avro schema (JSON-like) Connect's AvroData gives a value of this Spark type."""
    return _schema(data_type, optional, _Names())


def _schema(data_type: T.DataType, optional: bool, names: _Names) -> Any:
    base = _required(data_type, names)
    return ["null", base] if optional else base


#: Connect's logical types of Spark types: the Avro type, Connect's name and the Avro logical type.
_CONNECT = "org.apache.kafka.connect.data."
_LOGICAL: tuple[tuple[tuple[type, ...], str, str, str], ...] = (
    ((T.DateType,), "int", _CONNECT + "Date", "date"),
    ((T.TimeType,), "int", _CONNECT + "Time", "time-millis"),
    ((T.TimestampType, T.TimestampNTZType), "long", _CONNECT + "Timestamp", "timestamp-millis"),
)


def _logical(data_type: T.DataType) -> dict[str, Any] | None:
    """The Avro schema Connect's AvroData gives a Connect logical type (props in its order), else None."""
    if isinstance(data_type, T.DecimalType):
        scale, precision = data_type.scale, data_type.precision
        return {"type": "bytes", "scale": scale, "precision": precision, "connect.version": 1,
                "connect.parameters": {"scale": str(scale), "connect.decimal.precision": str(precision)},
                "connect.name": _CONNECT + "Decimal", "logicalType": "decimal"}
    for kinds, avro_type, name, logical_type in _LOGICAL:
        if isinstance(data_type, kinds):
            return {"type": avro_type, "connect.version": 1, "connect.name": name, "logicalType": logical_type}
    return None


def _required(data_type: T.DataType, names: _Names) -> Any:
    primitive = _PRIMITIVES.get(type(data_type)) or _logical(data_type)
    if primitive is not None:
        return primitive
    if isinstance(data_type, T.StructType):
        name = names.next()
        fields = [_field(f, names) for f in data_type.fields]
        return {"type": "record", "name": name, "namespace": NAMESPACE, "fields": fields}
    if isinstance(data_type, T.ArrayType):
        return {"type": "array", "items": _schema(data_type.elementType, data_type.containsNull, names)}
    if isinstance(data_type, T.MapType):
        return _map(data_type, names)
    raise ConfigError(f"AvroConverter: Spark type {data_type.simpleString()} has no Avro mapping here")


def _field(spark_field: T.StructField, names: _Names) -> dict[str, Any]:
    out: dict[str, Any] = {"name": spark_field.name,
                           "type": _schema(spark_field.dataType, spark_field.nullable, names)}
    if spark_field.nullable:
        out["default"] = None
    return out


def _map(data_type: T.MapType, names: _Names) -> Any:
    values = _schema(data_type.valueType, data_type.valueContainsNull, names)
    if isinstance(data_type.keyType, T.StringType):
        return {"type": "map", "values": values}
    entry = {"type": "record", "name": "MapEntry", "namespace": NAMESPACE,
             "fields": [{"name": "key", "type": _schema(data_type.keyType, False, names)},
                        {"name": "value", "type": values}]}
    return {"type": "array", "items": entry}


def record_name(schema: Any) -> str:
    """The full name of a record schema (RecordNameStrategy's subject)."""
    if not isinstance(schema, dict) or schema.get("type") != "record":
        raise ConfigError("RecordNameStrategy / TopicRecordNameStrategy need a struct (Avro record)")
    namespace = schema.get("namespace")
    return f"{namespace}.{schema['name']}" if namespace else schema["name"]


@dataclass
class AvroCodec:
    """Encodes and decodes one schema's records in the Confluent wire format."""

    schema_id: int
    schema: Any
    _parsed: Any = field(init=False, repr=False)
    _avro: Any = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._avro = _fastavro()
        self._parsed = self._avro.parse_schema(self.schema)

    def encode(self, datum: Any, topic: str) -> bytes:
        buf = io.BytesIO()
        buf.write(struct.pack(">bI", MAGIC, self.schema_id))
        try:
            self._avro.schemaless_writer(buf, self._parsed, datum)
        except (ValueError, TypeError, KeyError) as exc:
            raise AvroError(f"AvroConverter: a record for topic {topic!r} does not fit schema id "
                            f"{self.schema_id}: {exc}") from exc
        return buf.getvalue()

    def decode(self, payload: bytes, topic: str) -> Any:
        try:
            return self._avro.schemaless_reader(io.BytesIO(payload[5:]), self._parsed, self._parsed)
        except (ValueError, TypeError, EOFError, IndexError) as exc:
            raise AvroError(f"AvroConverter: a record of topic {topic!r} is not Avro of schema id "
                            f"{self.schema_id}: {exc}") from exc


def schema_id_of(payload: bytes, topic: str) -> int:
    """The schema id of a Confluent-framed Avro message, or an AvroError naming the topic."""
    if payload is None or len(payload) < 5 or payload[0] != MAGIC:
        raise AvroError(f"AvroConverter: a record of topic {topic!r} is not Confluent Avro "
                        "(no magic byte 0 and schema id)")
    return struct.unpack(">I", payload[1:5])[0]
