"""Spark type -> proto3 schema for Confluent's ``ProtobufConverter``, as Connect's ProtobufData maps a Connect schema.

A struct is a message: named by the struct's Connect name (its namespace the package), else ``ConnectDefault1``,
nested unnamed structs ``ConnectDefault2``, ... in the order met (ProtobufData's default names); a nested struct
named like its field gets ProtobufData's ``Message`` suffix. Fields are numbered in order from 1. Primitives:
boolean ``bool``; byte, short, int ``int32``; long ``int64``; float ``float``; double ``double``; string
``string``; binary ``bytes``. Logical types as ProtobufData maps them: a timestamp is
``google.protobuf.Timestamp``, a date ``google.type.Date``, a time (Connect's Time, Spark's TIME)
``google.type.TimeOfDay``, a decimal ``confluent.type.Decimal``. An array is a ``repeated`` field, a map a
``map<K, V>`` field when its key can be one (string, integral or boolean), else a repeated ``key``/``value`` entry
message. A nullable field is plain proto3 (null written as the type's default) unless ``optional.for.nullables``
makes it proto3 ``optional``, or ``wrapper.for.nullables`` a ``google.protobuf.*Value`` wrapper (nullable
scalars: fields, array elements and map values, as ProtobufData wraps every optional Connect schema);
``scrub.invalid.names`` makes message, package and field names valid Protobuf identifiers as ProtobufData's
``doScrubName`` does. Spark types with no Protobuf mapping (intervals, variant, arrays of arrays or maps) are
refused naming the field.

The schema is a ``FileDescriptorProto``; it is registered as its serialized bytes in base64, the format
confluent-kafka's ProtobufSerializer registers (Confluent's Java converter sends the same schema as .proto text).
"""

from __future__ import annotations

import base64
import urllib.parse
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
TIME = (".google.type.TimeOfDay", "google/type/timeofday.proto")
_WRAPPERS_FILE = "google/protobuf/wrappers.proto"
#: ProtobufData's wrapper message of each scalar type (``wrapper.for.nullables``).
_WRAPPER_OF: dict[type, str] = {
    T.BooleanType: "Bool", T.ByteType: "Int32", T.ShortType: "Int32", T.IntegerType: "Int32", T.LongType: "Int64",
    T.FloatType: "Float", T.DoubleType: "Double", T.StringType: "String", T.BinaryType: "Bytes"}


@dataclass(frozen=True)
class ProtoOptions:
    """ProtobufDataConfig's settings sparkcat implements (Confluent's defaults); the schema's and the reader's."""

    optional_for_nullables: bool = False
    wrapper_for_nullables: bool = False
    scrub_invalid_names: bool = False
    int_for_enums: bool = False              # reading: an enum as its number, not its name
    generate_struct_for_nulls: bool = False  # reading: an unset message field as its default message, not None
    generate_index_for_unions: bool = True   # reading: a oneof as the union field ``<name>_<index>``
    flatten_unions: bool = False             # reading: a oneof's fields as plain fields, no union field


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

    options: ProtoOptions = ProtoOptions()
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


def scrub_name(name: str) -> str:
    """ProtobufData's ``doScrubName``: Java's URL encoding, an ``x`` before a leading digit or ``_``, then every
    character other than a letter, a digit or ``_`` replaced by ``_``."""
    if not name or (all(c.isascii() and (c.isalnum() or c == "_") for c in name)
                    and not name[0].isdigit() and name[0] != "_"):
        return name
    encoded = urllib.parse.quote_plus(name, safe=".-*").replace("~", "%7E")  # java.net.URLEncoder's safe set
    if encoded[0].isdigit() or encoded[0] == "_":
        encoded = "x" + encoded
    return "".join(c if c.isascii() and (c.isalnum() or c == "_") else "_" for c in encoded)


def proto_file(spark_type: T.DataType, options: ProtoOptions = ProtoOptions()) -> Any:
    """The ``FileDescriptorProto`` ProtobufData gives a struct (a ProtobufError for any other root type, a
    ConfigError naming the field for a type Protobuf cannot hold)."""
    if not isinstance(spark_type, T.StructType):
        raise ProtobufError(f"{NAME}: only structs can be written (ProtobufData's root is a message), not "
                            f"{spark_type.simpleString()}")
    pb = _fdp()
    ctx = _Context(options)
    full = connect_name(spark_type) or ctx.default_name()
    package, _, name = full.rpartition(".")
    if options.scrub_invalid_names:
        package, name = ".".join(scrub_name(p) for p in package.split(".")) if package else "", scrub_name(name)
        full = f"{package}.{name}" if package else name
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


def field_name(name: str, options: ProtoOptions) -> str:
    """A struct field's name in the message (scrubbed with ``scrub.invalid.names``)."""
    return scrub_name(name) if options.scrub_invalid_names else name


def _field(pb: Any, ctx: _Context, within: tuple[Any, str], spark_field: T.StructField, number: int,
           path: str) -> None:
    message, name = within[0], field_name(spark_field.name, ctx.options)
    data_type, label, nullable = spark_field.dataType, _OPTIONAL, spark_field.nullable
    if isinstance(data_type, T.ArrayType):
        if isinstance(data_type.elementType, (T.ArrayType, T.MapType)):
            raise ConfigError(f"{NAME}: field {path} is an array of {data_type.elementType.typeName()}s, which "
                              "Protobuf cannot hold (a repeated field cannot repeat); use an array of structs")
        data_type, label, nullable = data_type.elementType, _REPEATED, data_type.containsNull
    out = message.field.add(name=name, number=number, label=label)
    if isinstance(data_type, T.MapType):
        out.label = _REPEATED
        out.type, out.type_name = _MESSAGE, _map_entry(pb, ctx, within, name, data_type, path)
        return
    _set_type(pb, ctx, within, out, data_type, name, path, nullable)
    if label == _OPTIONAL and spark_field.nullable and ctx.options.optional_for_nullables and out.type != _MESSAGE:
        out.proto3_optional = True
        out.oneof_index = len(message.oneof_decl)
        message.oneof_decl.add(name=f"_{spark_field.name}")


def _set_type(pb: Any, ctx: _Context, within: tuple[Any, str], out: Any, data_type: T.DataType, name_of_field: str,
              path: str, nullable: bool = False) -> None:
    """``out``'s type: a scalar (or its wrapper, for a nullable one under ``wrapper.for.nullables``), a
    well-known message, or a nested message added to ``within`` (the message and its full name)."""
    scalar = _SCALARS.get(type(data_type))
    if scalar is not None and not (nullable and ctx.options.wrapper_for_nullables):
        out.type = scalar
        return
    out.type = _MESSAGE
    if scalar is not None:
        out.type_name = ctx.logical((f".google.protobuf.{_WRAPPER_OF[type(data_type)]}Value", _WRAPPERS_FILE))
    elif isinstance(data_type, (T.TimestampType, T.TimestampNTZType)):
        out.type_name = ctx.logical(TIMESTAMP)
    elif isinstance(data_type, T.DateType):
        out.type_name = ctx.logical(DATE)
    elif isinstance(data_type, T.TimeType):
        out.type_name = ctx.logical(TIME)
    elif isinstance(data_type, T.DecimalType):
        out.type_name = ctx.logical(DECIMAL)
    elif isinstance(data_type, T.StructType):
        name = (connect_name(data_type) or ctx.default_name()).rpartition(".")[2]
        name = scrub_name(name) if ctx.options.scrub_invalid_names else name
        if name == name_of_field:
            name += "Message"
        message, scope = within
        if not any(n.name == name for n in message.nested_type):
            message.nested_type.append(_message(pb, ctx, name, data_type, path, f"{scope}.{name}"))
        out.type_name = f".{scope}.{name}"
    else:
        raise ConfigError(f"{NAME}: field {path} is a {data_type.simpleString()}, which has no Protobuf "
                          "mapping in sparkcat (ProtobufData's types: numbers, boolean, string, bytes, timestamp, "
                          "date, time, decimal, struct, array, map)")


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
        nullable = part == "value" and data_type.valueContainsNull
        _set_type(pb, ctx, (entry, f"{scope}.{name}"), out, part_type, part, f"{path}.{part}", nullable)
    return f".{scope}.{name}"
