"""Spark type -> proto3 schema for Confluent's ``ProtobufConverter``, as Connect's ProtobufData maps a Connect schema.

A struct is a message: named by the struct's Connect name (its namespace the package), else ``ConnectDefault1``,
nested unnamed structs ``ConnectDefault2``, ... in the order met (ProtobufData's default names); a nested struct
named like its field gets ProtobufData's ``Message`` suffix. Fields are numbered in order from 1. Primitives:
boolean ``bool``; byte, short, int ``int32``; long ``int64``; float ``float``; double ``double``; string
``string``; binary ``bytes``. Logical types as ProtobufData maps them: a timestamp is
``google.protobuf.Timestamp``, a date ``google.type.Date``, a decimal ``confluent.type.Decimal``. An array is a
``repeated`` field, a map a ``map<K, V>`` field when its key can be one (string, integral or boolean), else a
repeated ``key``/``value`` entry message. A nullable field is plain proto3 (null written as the type's default)
unless ``optional.for.nullables`` makes it proto3 ``optional``. Spark types with no Protobuf mapping (time,
intervals, variant, arrays of arrays or maps) are refused naming the field.

The schema is a ``FileDescriptorProto``; it is registered as its serialized bytes in base64, the format
confluent-kafka's ProtobufSerializer registers (Confluent's Java converter sends the same schema as .proto text).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import types as T

from sparkcat.errors import ConfigError, SparkcatError

NAME = "ProtobufConverter"
#: The packages ProtobufConverter imports (the ``protobuf`` extra) besides the registry client's.
PROTOBUF_MODULES = (("google.protobuf", "protobuf"), ("google.type", "googleapis-common-protos"))

TIMESTAMP = (".google.protobuf.Timestamp", "google/protobuf/timestamp.proto")
DATE = (".google.type.Date", "google/type/date.proto")
DECIMAL = (".confluent.type.Decimal", "confluent/type/decimal.proto")


class ProtobufError(SparkcatError):
    """A record that cannot be written or read as Protobuf (names the topic or the field)."""


def _fdp() -> Any:
    try:
        from google.protobuf import descriptor_pb2
    except ImportError as exc:
        raise ConfigError("io.confluent.connect.protobuf.ProtobufConverter needs the Python package protobuf, "
                          "not installed; install it with pip install 'sparkcat[protobuf]'") from exc
    return descriptor_pb2


#: FieldDescriptorProto types of Spark's primitive types.
_SCALARS: dict[type, int] = {
    T.BooleanType: 8, T.ByteType: 5, T.ShortType: 5, T.IntegerType: 5, T.LongType: 3, T.FloatType: 2,
    T.DoubleType: 1, T.StringType: 9, T.BinaryType: 12}
_MESSAGE, _REPEATED, _OPTIONAL = 11, 3, 1
_MAP_KEYS = (T.StringType, T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.BooleanType)


@dataclass
class _Context:
    """What building one file needs: default names handed out, the imports met, the options."""

    optional_for_nullables: bool = False
    count: int = 0
    dependencies: list[str] = field(default_factory=list)

    def default_name(self) -> str:
        self.count += 1
        return f"ConnectDefault{self.count}"

    def logical(self, ref: tuple[str, str]) -> str:
        if ref[1] not in self.dependencies:
            self.dependencies.append(ref[1])
        return ref[0]


def connect_name(struct: T.StructType) -> str | None:
    """A struct's Connect schema name, when it carries one (``connect_name``)."""
    return getattr(struct, "connect_name", None) or None


def proto_file(spark_type: T.DataType, optional_for_nullables: bool = False) -> Any:
    """The ``FileDescriptorProto`` ProtobufData gives a struct (a ProtobufError for any other root type, a
    ConfigError naming the field for a type Protobuf cannot hold)."""
    if not isinstance(spark_type, T.StructType):
        raise ProtobufError(f"{NAME}: only structs can be written (ProtobufData's root is a message), not "
                            f"{spark_type.simpleString()}")
    pb = _fdp()
    ctx = _Context(optional_for_nullables)
    full = connect_name(spark_type) or ctx.default_name()
    package, _, name = full.rpartition(".")
    message = _message(pb, ctx, name, spark_type, full, full)
    out = pb.FileDescriptorProto(name=f"{name}.proto", package=package, syntax="proto3")
    out.dependency.extend(ctx.dependencies)
    out.message_type.append(message)
    return out


def schema_text(file_proto: Any) -> str:
    """The schema as registered: the serialized FileDescriptorProto in base64 (confluent-kafka's format)."""
    return base64.standard_b64encode(file_proto.SerializeToString()).decode("ascii")


def _message(pb: Any, ctx: _Context, name: str, struct: T.StructType, path: str, scope: str) -> Any:
    """A struct's message; ``path`` names fields in errors, ``scope`` is the message's full name."""
    message = pb.DescriptorProto(name=name)
    for number, spark_field in enumerate(struct.fields, start=1):
        _field(pb, ctx, (message, scope), spark_field, number, f"{path}.{spark_field.name}")
    return message


def _field(pb: Any, ctx: _Context, within: tuple[Any, str], spark_field: T.StructField, number: int,
           path: str) -> None:
    message = within[0]
    data_type, label = spark_field.dataType, _OPTIONAL
    if isinstance(data_type, T.ArrayType):
        if isinstance(data_type.elementType, (T.ArrayType, T.MapType)):
            raise ConfigError(f"{NAME}: field {path} is an array of {data_type.elementType.typeName()}s, which "
                              "Protobuf cannot hold (a repeated field cannot repeat); use an array of structs")
        data_type, label = data_type.elementType, _REPEATED
    out = message.field.add(name=spark_field.name, number=number, label=label)
    if isinstance(data_type, T.MapType):
        out.label = _REPEATED
        out.type, out.type_name = _MESSAGE, _map_entry(pb, ctx, within, spark_field.name, data_type, path)
        return
    _set_type(pb, ctx, within, out, data_type, spark_field.name, path)
    if label == _OPTIONAL and spark_field.nullable and ctx.optional_for_nullables and out.type != _MESSAGE:
        out.proto3_optional = True
        out.oneof_index = len(message.oneof_decl)
        message.oneof_decl.add(name=f"_{spark_field.name}")


def _set_type(pb: Any, ctx: _Context, within: tuple[Any, str], out: Any, data_type: T.DataType, field_name: str,
              path: str) -> None:
    """``out``'s type: a scalar, a well-known message, or a nested message added to ``within`` (the message
    and its full name)."""
    scalar = _SCALARS.get(type(data_type))
    if scalar is not None:
        out.type = scalar
        return
    out.type = _MESSAGE
    if isinstance(data_type, (T.TimestampType, T.TimestampNTZType)):
        out.type_name = ctx.logical(TIMESTAMP)
    elif isinstance(data_type, T.DateType):
        out.type_name = ctx.logical(DATE)
    elif isinstance(data_type, T.DecimalType):
        out.type_name = ctx.logical(DECIMAL)
    elif isinstance(data_type, T.StructType):
        name = (connect_name(data_type) or ctx.default_name()).rpartition(".")[2]
        if name == field_name:
            name += "Message"
        message, scope = within
        if not any(n.name == name for n in message.nested_type):
            message.nested_type.append(_message(pb, ctx, name, data_type, path, f"{scope}.{name}"))
        out.type_name = f".{scope}.{name}"
    else:
        raise ConfigError(f"{NAME}: field {path} is a {data_type.simpleString()}, which has no Protobuf "
                          "mapping in sparkcat (ProtobufData's types: numbers, boolean, string, bytes, timestamp, "
                          "date, decimal, struct, array, map)")


def _map_entry(pb: Any, ctx: _Context, within: tuple[Any, str], field_name: str, data_type: T.MapType, path: str) -> str:
    """The entry message of a map field, added to ``message``: protoc's ``<Field>Entry`` with ``map_entry``
    set when the key can be a map key, else a plain repeated key/value message."""
    message, scope = within
    name = "".join(p[:1].upper() + p[1:] for p in field_name.split("_")) + "Entry"
    entry = message.nested_type.add(name=name)
    if isinstance(data_type.keyType, _MAP_KEYS):
        entry.options.map_entry = True
    for number, (part, part_type) in enumerate((("key", data_type.keyType), ("value", data_type.valueType)), 1):
        if isinstance(part_type, (T.ArrayType, T.MapType)):
            raise ConfigError(f"{NAME}: field {path} is a map with {part_type.typeName()} {part}s, which Protobuf "
                              "cannot hold; use structs")
        out = entry.field.add(name=part, number=number, label=_OPTIONAL)
        _set_type(pb, ctx, (entry, f"{scope}.{name}"), out, part_type, part, f"{path}.{part}")
    return f".{scope}.{name}"
