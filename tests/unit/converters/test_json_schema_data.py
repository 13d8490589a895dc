"""Connect's JsonSchemaData mapping of Spark types to JSON Schema and of values both ways (JsonSchemaConverter).

The expected schemas are those of Confluent's JsonSchemaDataTest (json-schema-converter) for the same Connect
schemas, written out as JSON.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json

import pytest
from pyspark.sql import Row
from pyspark.sql import types as T

from sparkcat.converters.json_schema_data import (
    JsonSchemaOptions, dumps, json_schema, json_value, schema_title,
)
from sparkcat.converters.json_schema_values import ONE_OF_FIELD, JsonSchemaError, loads, read_value
from sparkcat.errors import ConfigError

D = "org.apache.kafka.connect.data."
NUMERIC = JsonSchemaOptions(numeric_decimal=True)


@pytest.mark.parametrize("spark_type, expected", [
    (T.ByteType(), {"type": "integer", "connect.type": "int8"}),
    (T.ShortType(), {"type": "integer", "connect.type": "int16"}),
    (T.IntegerType(), {"type": "integer", "connect.type": "int32"}),
    (T.LongType(), {"type": "integer", "connect.type": "int64"}),
    (T.FloatType(), {"type": "number", "connect.type": "float32"}),
    (T.DoubleType(), {"type": "number", "connect.type": "float64"}),
    (T.BooleanType(), {"type": "boolean"}),
    (T.StringType(), {"type": "string"}),
    (T.BinaryType(), {"type": "string", "connect.type": "bytes"}),
    (T.DecimalType(10, 2), {"type": "string", "title": D + "Decimal", "connect.version": 1, "connect.type": "bytes",
                            "connect.parameters": {"scale": "2"}}),
    (T.DateType(), {"type": "integer", "title": D + "Date", "connect.version": 1, "connect.type": "int32"}),
    (T.TimeType(), {"type": "integer", "title": D + "Time", "connect.version": 1, "connect.type": "int32"}),
    (T.TimestampType(), {"type": "integer", "title": D + "Timestamp", "connect.version": 1, "connect.type": "int64"}),
    (T.ArrayType(T.StringType(), False), {"type": "array", "items": {"type": "string"}}),
    (T.ArrayType(T.BooleanType(), True),
     {"type": "array", "items": {"oneOf": [{"type": "null"}, {"type": "boolean"}]}}),
    (T.MapType(T.StringType(), T.IntegerType(), False),
     {"type": "object", "connect.type": "map", "additionalProperties": {"type": "integer", "connect.type": "int32"}}),
    (T.MapType(T.IntegerType(), T.StringType(), True),
     {"type": "array", "connect.type": "map", "items": {"type": "object", "properties": {
         "key": {"type": "integer", "connect.index": 0, "connect.type": "int32"},
         "value": {"connect.index": 1, "oneOf": [{"type": "null"}, {"type": "string"}]}}}}),
])
def test_every_connect_type_is_jsonschemadatas_schema(spark_type, expected):
    assert json_schema(spark_type) == expected
    assert list(json.loads(dumps(json_schema(spark_type)))) == list(expected)  # everit's key order


def test_a_numeric_decimal_is_a_json_number():
    assert json_schema(T.DecimalType(5, 4), NUMERIC) == {
        "type": "number", "title": D + "Decimal", "connect.version": 1, "connect.type": "bytes",
        "connect.parameters": {"scale": "4"}}


def test_a_struct_is_an_object_its_fields_indexed_its_optional_ones_oneof_null():
    spark_type = T.StructType([T.StructField("id", T.LongType(), False), T.StructField("name", T.StringType()),
                               T.StructField("inner", T.StructType([T.StructField("b", T.BinaryType(), False)]))])
    schema = json_schema(spark_type)
    assert schema == {"type": "object", "properties": {
        "id": {"type": "integer", "connect.index": 0, "connect.type": "int64"},
        "name": {"connect.index": 1, "oneOf": [{"type": "null"}, {"type": "string"}]},
        "inner": {"connect.index": 2, "oneOf": [{"type": "null"}, {"type": "object", "properties": {
            "b": {"type": "string", "connect.index": 0, "connect.type": "bytes"}}}]}}}
    assert "required" not in schema and "title" not in schema
    closed = json_schema(spark_type, JsonSchemaOptions(additional_properties=False))
    assert list(closed)[:2] == ["type", "additionalProperties"] and closed["additionalProperties"] is False


def test_a_named_struct_has_its_title_and_version_and_names_its_record_subject():
    spark_type = T.StructType([T.StructField("n", T.IntegerType(), False)])
    spark_type.connect_name, spark_type.connect_version = "com.example.Order", 3  # as SetSchemaMetadata sets them
    schema = json_schema(spark_type)
    assert list(schema.items())[:3] == [("type", "object"), ("title", "com.example.Order"), ("connect.version", 3)]
    assert schema_title(schema) == "com.example.Order"
    with pytest.raises(ConfigError, match="need a named struct"):
        schema_title(json_schema(T.StructType([T.StructField("n", T.IntegerType())])))


def test_a_spark_type_without_a_mapping_is_refused_naming_it():
    with pytest.raises(ConfigError, match="Spark type interval day has no JSON Schema mapping"):
        json_schema(T.DayTimeIntervalType(0, 0))


ALL = T.StructType([
    T.StructField("i8", T.ByteType(), False), T.StructField("i16", T.ShortType()),
    T.StructField("i32", T.IntegerType()),
    T.StructField("i64", T.LongType()), T.StructField("f32", T.FloatType()), T.StructField("f64", T.DoubleType()),
    T.StructField("flag", T.BooleanType()), T.StructField("text", T.StringType()), T.StructField("raw", T.BinaryType()),
    T.StructField("amount", T.DecimalType(10, 2)), T.StructField("day", T.DateType()),
    T.StructField("at", T.TimeType()), T.StructField("ts", T.TimestampType()),
    T.StructField("list", T.ArrayType(T.LongType())),
    T.StructField("by_name", T.MapType(T.StringType(), T.StringType())),
    T.StructField("by_id", T.MapType(T.LongType(), T.DoubleType())),
    T.StructField("inner", T.StructType([T.StructField("x", T.StringType())]))])
ROW = Row(i8=-3, i16=300, i32=70000, i64=2 ** 40, f32=12.2, f64=0.1, flag=True, text="é", raw=b"foo",
          amount=decimal.Decimal("1.56"), day=dt.date(2026, 11, 28), at=dt.time(23, 59, 59, 999000),
          ts=dt.datetime(2026, 11, 28, 7, 30, 15, 123000), list=[1, 2], by_name={"a": "b"}, by_id={7: 1.5},
          inner=Row(x=None))


def test_values_are_written_as_fromconnectdata_writes_them():
    text = dumps(json_value(ROW, ALL, JsonSchemaOptions()))
    assert text == ('{"i8":-3,"i16":300,"i32":70000,"i64":1099511627776,"f32":12.2,"f64":0.1,"flag":true,'
                    '"text":"é","raw":"Zm9v","amount":"AJw=","day":20785,"at":86399999,"ts":1795851015123,'
                    '"list":[1,2],"by_name":{"a":"b"},"by_id":[{"key":7,"value":1.5}],"inner":{"x":null}}')
    numeric = json.loads(dumps(json_value(ROW, ALL, NUMERIC)), parse_float=decimal.Decimal)
    assert numeric["amount"] == decimal.Decimal("1.56")


def test_values_read_back_through_their_schema_are_the_values_written():
    for options in (JsonSchemaOptions(), NUMERIC):
        payload = dumps(json_value(ROW, ALL, options)).encode()
        back = read_value(json_schema(ALL, options), loads(payload))
        utc = dt.timezone.utc
        ts = dt.datetime(2026, 11, 28, 7, 30, 15, 123000, tzinfo=utc)
        assert back == {**ROW.asDict(), "ts": ts, "inner": {"x": None}}
        assert list(back) == ALL.fieldNames()


def test_a_null_optional_field_is_written_null_and_a_missing_field_reads_as_null():
    spark_type = T.StructType([T.StructField("a", T.LongType()), T.StructField("b", T.StringType())])
    assert dumps(json_value(Row(a=None, b="x"), spark_type, JsonSchemaOptions())) == '{"a":null,"b":"x"}'
    assert read_value(json_schema(spark_type), loads(b'{"b":"x"}')) == {"a": None, "b": "x"}


def test_floats_and_non_finite_numbers_as_jackson_writes_them():
    f32 = T.StructType([T.StructField("f", T.FloatType(), False)])
    assert dumps(json_value(Row(f=0.1), f32, JsonSchemaOptions())) == '{"f":0.1}'  # not 0.10000000149011612
    f64 = T.StructType([T.StructField("f", T.DoubleType(), False)])
    assert dumps(json_value(Row(f=float("nan")), f64, JsonSchemaOptions())) == '{"f":"NaN"}'
    assert read_value(json_schema(f64), loads(b'{"f":"-Infinity"}')) == {"f": float("-inf")}


def test_schemas_of_other_writers_read_as_jsonschemadata_reads_them():
    """Plain JSON Schemas (no connect.* properties), as other producers register them."""
    schema = {"type": "object", "definitions": {"Point": {"type": "object", "properties": {
                  "x": {"type": "integer"}, "y": {"type": "number"}}}},
              "properties": {"p": {"$ref": "#/definitions/Point"}, "tags": {"type": ["array", "null"],
                             "items": {"type": "string"}},
                             "any": {}, "choice": {"oneOf": [{"type": "integer"}, {"type": "string"}]},
                             "kind": {"enum": ["a", "b"]}, "both": {"allOf": [
                                 {"type": "object", "properties": {"u": {"type": "string"}}},
                                 {"type": "object", "properties": {"v": {"type": "boolean"}}}]}}}
    value = loads(b'{"p":{"x":1,"y":2},"tags":null,"any":{"k":[1.5]},"choice":"s","kind":"b",'
                  b'"both":{"u":"x","v":true}}')
    assert read_value(schema, value) == {
        "p": {"x": 1, "y": 2.0}, "tags": None, "any": {"k": [1.5]}, "choice": {ONE_OF_FIELD + "1": "s"},
        "kind": "b", "both": {"u": "x", "v": True}}
    assert read_value({"type": "object", "properties": {"x": {"type": "integer", "connect.index": 1},
                                                        "y": {"type": "integer", "connect.index": 0}}},
                      {"x": 1, "y": 2}) == {"y": 2, "x": 1}


def test_values_that_do_not_fit_their_schema_fail():
    with pytest.raises(ValueError, match="a JSON object was expected, not list"):
        read_value(json_schema(ALL), [])
    with pytest.raises(ValueError, match="schema references are not supported"):
        read_value({"$ref": "other.json"}, {"a": 1})
    with pytest.raises(ValueError, match="no branch of the oneOf matches bool"):
        read_value({"oneOf": [{"type": "integer"}, {"type": "string"}]}, True)
    assert issubclass(JsonSchemaError, Exception)
