"""ProtobufData's mapping of Spark types to proto3 schemas and of values both ways (ProtobufConverter).

The schemas are checked as protobuf descriptors (what a reader of the registered schema sees); values go through
the wire format and confluent-kafka's own ProtobufDeserializer framing rules (message indexes as zigzag varints).
"""

from __future__ import annotations

import datetime as dt
import decimal

import pytest
from pyspark.sql import Row
from pyspark.sql import types as T

from sparkcat.converters.protobuf_schema import ProtobufError, ProtoOptions, proto_file, schema_text
from sparkcat.converters.protobuf_values import ProtoSchema, fill, frame, message_name, read, unframe
from sparkcat.errors import ConfigError

INNER = T.StructType([T.StructField("a", T.IntegerType())])
ROW = T.StructType([
    T.StructField("id", T.LongType(), False), T.StructField("name", T.StringType()),
    T.StructField("small", T.ShortType()), T.StructField("ok", T.BooleanType()), T.StructField("f", T.FloatType()),
    T.StructField("d", T.DoubleType()), T.StructField("raw", T.BinaryType()),
    T.StructField("amount", T.DecimalType(12, 3)), T.StructField("day", T.DateType()),
    T.StructField("ts", T.TimestampType()), T.StructField("tags", T.MapType(T.StringType(), T.IntegerType())),
    T.StructField("xs", T.ArrayType(T.StringType())), T.StructField("inner", INNER),
    T.StructField("inners", T.ArrayType(INNER)), T.StructField("by_struct", T.MapType(INNER, T.StringType()))])


def _descriptor(spark_type, optional=False):
    return ProtoSchema(1, schema_text(proto_file(spark_type, ProtoOptions(optional_for_nullables=optional)))
                       ).message_class().DESCRIPTOR


def test_an_unnamed_struct_is_connect_default1_with_fields_numbered_in_order_from_1():
    desc = _descriptor(ROW)
    assert desc.full_name == "ConnectDefault1"
    assert [(f.name, f.number) for f in desc.fields] == [(f.name, n) for n, f in enumerate(ROW.fields, 1)]
    by = desc.fields_by_name
    assert [by[n].type for n in ("id", "name", "small", "ok", "f", "d", "raw")] == [3, 9, 5, 8, 2, 1, 12]
    assert by["amount"].message_type.full_name == "confluent.type.Decimal"
    assert by["day"].message_type.full_name == "google.type.Date"
    assert by["ts"].message_type.full_name == "google.protobuf.Timestamp"
    assert by["tags"].message_type.GetOptions().map_entry and by["tags"].message_type.name == "TagsEntry"
    assert by["xs"].is_repeated and by["xs"].type == 9
    assert by["inner"].message_type.full_name == "ConnectDefault1.ConnectDefault2"
    assert by["inners"].message_type.full_name == "ConnectDefault1.ConnectDefault3"
    assert not by["by_struct"].message_type.GetOptions().map_entry  # a struct cannot be a map key
    assert not by["name"].has_presence


def test_optional_for_nullables_makes_nullable_scalars_proto3_optional():
    desc = _descriptor(ROW, optional=True)
    assert desc.fields_by_name["name"].has_presence and not desc.fields_by_name["id"].has_presence


def test_a_named_struct_names_the_message_and_its_package():
    named = T.StructType([T.StructField("n", T.IntegerType(), False)])
    named.connect_name = "com.example.Order"
    text = schema_text(proto_file(named))
    assert message_name(text) == "com.example.Order"
    assert ProtoSchema(1, text).message_class().DESCRIPTOR.full_name == "com.example.Order"


@pytest.mark.parametrize("spark_type, words", [
    (T.StructType([T.StructField("t", T.DayTimeIntervalType())]), "field ConnectDefault1.t is a interval"),
    (T.StructType([T.StructField("xs", T.ArrayType(T.ArrayType(T.IntegerType())))]),
     "field ConnectDefault1.xs is an array of arrays"),
    (T.StructType([T.StructField("m", T.MapType(T.StringType(), T.ArrayType(T.IntegerType())))]),
     "field ConnectDefault1.m is a map with array values"),
])
def test_types_protobuf_cannot_hold_are_refused_naming_the_field(spark_type, words):
    with pytest.raises(ConfigError, match=words):
        proto_file(spark_type)


def test_only_structs_are_written():
    with pytest.raises(ProtobufError, match="only structs can be written"):
        proto_file(T.StringType())


def test_values_round_trip_through_the_wire_format():
    schema = ProtoSchema(7, schema_text(proto_file(ROW, ProtoOptions(optional_for_nullables=True))))
    cls = schema.message_class()
    row = Row(id=1, name="a", small=-3, ok=True, f=1.5, d=2.25, raw=b"\x00\x01",
              amount=decimal.Decimal("-1234.500"), day=dt.date(2026, 11, 28),
              ts=dt.datetime(2026, 1, 2, 3, 4, 5, 123000), tags={"x": 1}, xs=["p", "q"], inner=Row(a=3),
              inners=[Row(a=1), Row(a=2)], by_struct={Row(a=9): "nine"})
    data = frame(7, fill(cls(), row).SerializeToString())
    assert data[:6] == b"\x00\x00\x00\x00\x07\x00"  # magic byte, id 7, message indexes [0]
    schema_id, indexes, payload = unframe(data, "t")
    assert (schema_id, indexes) == (7, (0,))
    assert read(cls.FromString(payload)) == {
        "id": 1, "name": "a", "small": -3, "ok": True, "f": 1.5, "d": 2.25, "raw": b"\x00\x01",
        "amount": decimal.Decimal("-1234.500"), "day": dt.date(2026, 11, 28),
        "ts": dt.datetime(2026, 1, 2, 3, 4, 5, 123000, tzinfo=dt.timezone.utc), "tags": {"x": 1},
        "xs": ["p", "q"], "inner": {"a": 3}, "inners": [{"a": 1}, {"a": 2}],
        "by_struct": [{"key": {"a": 9}, "value": "nine"}]}


def test_nulls_are_unset_fields_read_as_none_or_the_proto3_default():
    cls = ProtoSchema(1, schema_text(proto_file(ROW))).message_class()
    empty = Row(**{f.name: None for f in ROW.fields})
    got = read(cls.FromString(fill(cls(), empty).SerializeToString()))
    assert got["name"] == "" and got["small"] == 0  # plain proto3: no presence, as ProtobufData writes
    assert got["amount"] is None and got["inner"] is None and got["ts"] is None
    assert got["tags"] == {} and got["xs"] == []


def test_a_null_array_element_fails_naming_the_field():
    cls = ProtoSchema(1, schema_text(proto_file(ROW))).message_class()
    with pytest.raises(ProtobufError, match="field ConnectDefault1.xs: an array element is null"):
        fill(cls(), {"xs": ["a", None]})


def test_message_indexes_other_than_the_first_are_framed_as_zigzag_varints():
    assert frame(3, b"xy", (1, 2)) == b"\x00\x00\x00\x00\x03" + b"\x04\x02\x04" + b"xy"
    assert unframe(frame(3, b"xy", (1, 2)), "t") == (3, (1, 2), b"xy")
    with pytest.raises(ProtobufError, match="topic 'orders' is not in Confluent's wire format"):
        unframe(b'{"a":1}', "orders")


def test_a_time_is_google_type_time_of_day_to_the_millisecond_both_ways():
    # ProtobufData: Connect's Time <-> google.type.TimeOfDay {hours, minutes, seconds, nanos of the millisecond}
    timed = T.StructType([T.StructField("at", T.TimeType())])
    file_proto = proto_file(timed)
    assert "google/type/timeofday.proto" in file_proto.dependency
    cls = ProtoSchema(1, schema_text(file_proto)).message_class()
    assert cls.DESCRIPTOR.fields_by_name["at"].message_type.full_name == "google.type.TimeOfDay"
    message = fill(cls(), Row(at=dt.time(13, 45, 30, 123456)))
    assert (message.at.hours, message.at.minutes, message.at.seconds, message.at.nanos) == (13, 45, 30, 123_000_000)
    assert read(cls.FromString(message.SerializeToString())) == {"at": dt.time(13, 45, 30, 123000)}
    assert read(cls.FromString(fill(cls(), Row(at=None)).SerializeToString())) == {"at": None}
