"""Values for Confluent's ``ProtobufConverter``: Spark values into messages, messages into Python values, and
Confluent's wire format.

A registered schema (base64 of a serialized FileDescriptorProto, the format confluent-kafka's serdes use and
Confluent's registry gives with ``format=serialized``) is loaded into a DescriptorPool of its own with the
well-known files it imports (google/protobuf, google/type, confluent/type) and the files it references (fetched by
subject and version, ``RegistryClient``); its message classes come from
protobuf's message_factory. Writing fills a message by field name, as ProtobufData does (null leaves a field
unset); reading gives what ProtobufData gives Connect (``ProtoOptions`` its settings): a message a dict, a repeated
field a list, a map a dict, ``google.protobuf.Timestamp`` an aware UTC datetime, ``google.type.Date`` a date,
``google.type.TimeOfDay`` a time (to the millisecond, Connect's Time), ``confluent.type.Decimal`` a Decimal, an
enum its name (its number with ``int.for.enums``), a google.protobuf wrapper a dict of its ``value`` (the value
with ``wrapper.for.nullables``), an unset message field None (its default message with
``generate.struct.for.nulls``), a oneof the union field ``<oneof>_<index>`` holding the member set (``<oneof>``
without ``generate.index.for.unions``; the member as a plain field with ``flatten.unions``), before the other fields.

The wire format: magic byte 0, the schema id (4 bytes, big-endian), the message indexes (zigzag varints: their
count then each; the first message is the single byte 0), then the message's bytes.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import decimal
import functools
import struct
from dataclasses import dataclass, field
from typing import Any

from sparkcat.converters.protobuf_schema import NAME, ProtobufError, ProtoOptions, field_name

MAGIC = 0
_UTC = dt.timezone.utc
_WRAPPERS = frozenset(f"google.protobuf.{n}Value" for n in
                      ("Double", "Float", "Int64", "UInt64", "Int32", "UInt32", "Bool", "String", "Bytes"))


def _known_files() -> dict[str, bytes]:
    """The imports a registered schema may name without a reference, by file name."""
    from confluent_kafka.schema_registry.confluent import meta_pb2
    from confluent_kafka.schema_registry.confluent.type import decimal_pb2
    from google.protobuf import (any_pb2, duration_pb2, empty_pb2, struct_pb2, timestamp_pb2,
                                 wrappers_pb2)
    from google.protobuf import descriptor_pb2
    from google.type import date_pb2, timeofday_pb2

    modules = (any_pb2, duration_pb2, empty_pb2, struct_pb2, timestamp_pb2, wrappers_pb2, descriptor_pb2,
               date_pb2, timeofday_pb2, meta_pb2, decimal_pb2)
    return {m.DESCRIPTOR.name: m.DESCRIPTOR.serialized_pb for m in modules}


@dataclass
class ProtoSchema:
    """One registered schema loaded: its file in a pool of its own, message classes on demand."""

    schema_id: int
    text: str
    references: tuple[tuple[str, str], ...] = ()  # referenced files' (name, text), in the order to add them
    _pool: Any = field(init=False, repr=False)
    _file: Any = field(init=False, repr=False)
    _classes: dict[tuple[int, ...], Any] = field(init=False, repr=False, default_factory=dict)

    def __post_init__(self) -> None:
        from google.protobuf import descriptor_pb2, descriptor_pool

        self._pool = descriptor_pool.DescriptorPool()
        known = _known_files()
        protos = []
        for name, text in (*self.references, ("", self.text)):
            if name in known:
                continue  # a well-known file registered as a reference (skip.known.types=false): ours is the same
            protos.append(_parse(self.schema_id, text, descriptor_pb2))
            if name:
                protos[-1].name = name  # the name the referencing file imports
        for proto in protos:
            for dependency in proto.dependency:
                if dependency in known:
                    self._pool.AddSerializedFile(known.pop(dependency))
        try:
            for proto in protos:
                self._file = self._pool.Add(proto)
        except (TypeError, ValueError) as exc:
            raise ProtobufError(f"{NAME}: schema id {self.schema_id} does not load: {exc}") from exc

    def message_class(self, indexes: tuple[int, ...] = (0,)) -> Any:
        """The class of the message at ``indexes`` (top-level index, then nested ones)."""
        if indexes not in self._classes:
            from google.protobuf.message_factory import GetMessageClass

            try:
                descriptor = list(self._file.message_types_by_name.values())[indexes[0]]
                for index in indexes[1:]:
                    descriptor = descriptor.nested_types[index]
            except IndexError as exc:
                raise ProtobufError(f"{NAME}: schema id {self.schema_id} has no message at indexes "
                                    f"{list(indexes)}") from exc
            self._classes[indexes] = GetMessageClass(descriptor)
        return self._classes[indexes]


def _parse(schema_id: int, text: str, descriptor_pb2: Any) -> Any:
    from google.protobuf.message import DecodeError

    try:
        proto = descriptor_pb2.FileDescriptorProto.FromString(base64.standard_b64decode(text.encode("ascii")))
    except (binascii.Error, UnicodeEncodeError, ValueError, DecodeError) as exc:
        raise ProtobufError(f"{NAME}: schema id {schema_id} is not a serialized FileDescriptorProto (a registry "
                            "that gives .proto text for format=serialized; sparkcat cannot parse .proto text "
                            "without protoc)") from exc
    return proto


def message_name(text: str) -> str:
    """The full name of a schema's first message (RecordNameStrategy's subject)."""
    from google.protobuf import descriptor_pb2

    proto = _parse(0, text, descriptor_pb2)
    if not proto.message_type:
        raise ProtobufError(f"{NAME}: the schema has no message")
    name = proto.message_type[0].name
    return f"{proto.package}.{name}" if proto.package else name


# -- the wire format ----------------------------------------------------------------------------------------------

def frame(schema_id: int, payload: bytes, indexes: tuple[int, ...] = (0,)) -> bytes:
    """Confluent's framing of a message's bytes."""
    head = b"\x00" if indexes == (0,) else b"".join(_zigzag(v) for v in (len(indexes), *indexes))
    return struct.pack(">bI", MAGIC, schema_id) + head + payload


def unframe(data: bytes, topic: str) -> tuple[int, tuple[int, ...], bytes]:
    """(schema id, message indexes, message bytes) of a framed record, or a ProtobufError naming the topic."""
    if len(data) < 6 or data[0] != MAGIC:
        raise ProtobufError(f"{NAME}: a record of topic {topic!r} is not in Confluent's wire format (no magic "
                            "byte 0, schema id and message indexes)")
    schema_id = struct.unpack(">I", data[1:5])[0]
    count, at = _read_zigzag(data, 5, topic)
    indexes = []
    for _ in range(count):
        index, at = _read_zigzag(data, at, topic)
        indexes.append(index)
    return schema_id, tuple(indexes) or (0,), data[at:]


def _zigzag(value: int) -> bytes:
    value, out = (value << 1) ^ (value >> 63), bytearray()
    while value & ~0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    return bytes(out + bytes([value]))


def _read_zigzag(data: bytes, at: int, topic: str) -> tuple[int, int]:
    shift = result = 0
    while True:
        if at >= len(data):
            raise ProtobufError(f"{NAME}: a record of topic {topic!r} ends inside its message indexes")
        byte = data[at]
        result |= (byte & 0x7F) << shift
        at, shift = at + 1, shift + 7
        if not byte & 0x80:
            return (result >> 1) ^ -(result & 1), at


# -- Spark values into messages ---------------------------------------------------------------------------------

def fill(message: Any, value: Any, options: ProtoOptions = ProtoOptions()) -> Any:
    """``message`` with the fields of a Row or dict set by name (a null or missing one left unset; names
    scrubbed as the schema's with ``scrub.invalid.names``)."""
    row = value.asDict(recursive=False) if hasattr(value, "asDict") else value
    descriptor = message.DESCRIPTOR
    for name, item in row.items():
        fd = descriptor.fields_by_name.get(field_name(name, options))
        if fd is None:
            raise ProtobufError(f"field {descriptor.full_name}.{name} is not in the schema")
        if item is not None:
            _set(message, fd, item, options)
    return message


def _set(message: Any, fd: Any, value: Any, options: ProtoOptions) -> None:
    where = f"{fd.containing_type.full_name}.{fd.name}"
    try:
        if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
            _set_map(getattr(message, fd.name), fd.message_type, value, options)
        elif _is_repeated(fd):
            target, entries = getattr(message, fd.name), isinstance(value, dict)  # a map as key/value entries
            for item in (value.items() if entries else value):
                if item is None:
                    raise ProtobufError("an array element is null, which a repeated field cannot hold")
                if fd.message_type is None:
                    target.append(item)
                elif entries:
                    fill(target.add(), {"key": item[0], "value": item[1]}, options)
                else:
                    _to_message(target.add(), item, options)
        elif fd.message_type is not None:
            _to_message(getattr(message, fd.name), value, options)
        else:
            setattr(message, fd.name, value)
    except ProtobufError as exc:
        if str(exc).startswith("field "):
            raise  # a nested field's error names that field
        raise ProtobufError(f"field {where}: {exc}") from exc
    except (TypeError, ValueError, AttributeError, OverflowError) as exc:
        raise ProtobufError(f"field {where}: {exc}") from exc


def _is_repeated(fd: Any) -> bool:
    return fd.is_repeated if hasattr(fd, "is_repeated") else fd.label == fd.LABEL_REPEATED


def _set_map(target: Any, entry: Any, value: Any, options: ProtoOptions) -> None:
    items = value.items() if isinstance(value, dict) else value
    value_fd = entry.fields_by_name["value"]
    for key, item in items:
        if value_fd.message_type is None:
            target[key] = item
        elif item is not None:
            _to_message(target[key], item, options)


def _to_message(target: Any, value: Any, options: ProtoOptions) -> None:
    """A message field from a Spark value: a well-known type's, a wrapper's or a nested struct's."""
    name = target.DESCRIPTOR.full_name
    if name in _WRAPPERS:
        target.value = value
    elif name == "google.type.TimeOfDay":  # ProtobufData: Connect's Time, to the millisecond
        target.hours, target.minutes, target.seconds = value.hour, value.minute, value.second
        target.nanos = value.microsecond // 1000 * 1_000_000
    elif name == "google.protobuf.Timestamp":
        if value.tzinfo is None:
            value = value.replace(tzinfo=_UTC)
        target.FromDatetime(value)
    elif name == "google.type.Date":
        target.year, target.month, target.day = value.year, value.month, value.day
    elif name == "confluent.type.Decimal":
        from confluent_kafka.schema_registry.common.protobuf import decimal_to_protobuf

        value = decimal.Decimal(value)
        exponent = value.as_tuple().exponent
        wire = decimal_to_protobuf(value, max(0, -exponent if isinstance(exponent, int) else 0))
        target.MergeFromString(wire.SerializeToString())  # a class of another pool
    else:
        fill(target, value, options)


# -- messages into Python values --------------------------------------------------------------------------------

def read(message: Any, options: ProtoOptions = ProtoOptions()) -> dict[str, Any]:
    """A message as ProtobufData gives it to Connect (see the module's docstring)."""
    out: dict[str, Any] = {}
    oneofs, plain = _layout(message.DESCRIPTOR)
    for oneof in oneofs:
        members: dict[str, Any] = {fd.name: None for fd in oneof.fields}
        set_name = message.WhichOneof(oneof.name)
        if set_name is not None:
            members[set_name] = _read_field(message, oneof.fields[list(members).index(set_name)], options)
        if options.flatten_unions:
            out.update(members)
        else:
            union = f"{oneof.name}_{oneof.index}" if options.generate_index_for_unions else oneof.name
            out[union] = members if set_name is not None else None
    for fd in plain:
        presence = fd.message_type is not None or fd.containing_oneof is not None  # proto3 optional: synthetic
        if (presence and not _is_repeated(fd) and not options.generate_struct_for_nulls
                and not message.HasField(fd.name)):
            out[fd.name] = None
        else:
            out[fd.name] = _read_field(message, fd, options)
    return out


@functools.lru_cache(maxsize=4096)
def _layout(descriptor: Any) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """A message's real oneofs (not a proto3 ``optional`` field's synthetic one) and the fields outside them."""
    from google.protobuf import descriptor_pb2

    proto = descriptor_pb2.DescriptorProto()
    descriptor.CopyToProto(proto)
    optional = {f.name for f in proto.field if f.proto3_optional}
    oneofs = tuple(o for o in descriptor.oneofs if not (len(o.fields) == 1 and o.fields[0].name in optional))
    in_oneofs = {fd.name for oneof in oneofs for fd in oneof.fields}
    return oneofs, tuple(fd for fd in descriptor.fields if fd.name not in in_oneofs)


def _read_field(message: Any, fd: Any, options: ProtoOptions) -> Any:
    value = getattr(message, fd.name)
    if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
        value_fd = fd.message_type.fields_by_name["value"]
        return {k: _read_value(value_fd, v, options) for k, v in value.items()}
    if _is_repeated(fd):
        return [_read_value(fd, v, options) for v in value]
    return _read_value(fd, value, options)


def _read_value(fd: Any, value: Any, options: ProtoOptions) -> Any:
    if fd.enum_type is not None:
        found = fd.enum_type.values_by_number.get(value)
        return value if options.int_for_enums or found is None else found.name
    if fd.message_type is None:
        return value
    name = fd.message_type.full_name
    if name == "google.protobuf.Timestamp":
        return value.ToDatetime(tzinfo=_UTC)
    if name == "google.type.Date":
        return dt.date(value.year, value.month, value.day)
    if name == "google.type.TimeOfDay":  # Connect's Time: milliseconds of the day
        return dt.time(value.hours, value.minutes, value.seconds, value.nanos // 1_000_000 * 1000)
    if name == "confluent.type.Decimal":
        from confluent_kafka.schema_registry.common.protobuf import protobuf_to_decimal

        from confluent_kafka.schema_registry.confluent.type import decimal_pb2

        return protobuf_to_decimal(decimal_pb2.Decimal.FromString(value.SerializeToString()))
    if name in _WRAPPERS and options.wrapper_for_nullables:
        return value.value
    return read(value, options)
