"""The vectorised column serialisation of the source-to-Kafka writer gives exactly the converters' bytes."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from pyspark.sql import types as T

from sparkcat.spark.executor.kafka_serialisation import column_bytes
from sparkcat.converters import converter_for

STRUCT = T.StructType([T.StructField("position", T.LongType()), T.StructField("flag", T.BooleanType()),
                       T.StructField("name", T.StringType()), T.StructField("small", T.IntegerType())])
ROWS = [
    {"position": 1, "flag": True, "name": "plain", "small": -3},
    {"position": 2**62, "flag": False, "name": "ünïcödé ✓", "small": 0},
    {"position": None, "flag": None, "name": None, "small": None},
    None,
    {"position": -7, "flag": True, "name": "", "small": 2**31 - 1},
]
ESCAPES = ROWS + [{"position": 3, "flag": False, "name": 'quote " back \\ nl \n tab \t \x01', "small": 1}]


def arrow_struct(rows):
    arrow_type = pa.struct([("position", pa.int64()), ("flag", pa.bool_()), ("name", pa.string()),
                            ("small", pa.int32())])
    return pa.array(rows, type=arrow_type)


def per_row(rows, conv, spark_type):
    return [conv.to_bytes(r, spark_type) for r in rows]


@pytest.mark.parametrize("rows", [ROWS, ESCAPES], ids=["plain", "escapes"])
@pytest.mark.parametrize("schemas", ["true", "false"])
def test_flat_struct_json_is_byte_identical_to_the_json_converter(rows, schemas):
    conv = converter_for({"value.converter.schemas.enable": schemas}, False)
    assert column_bytes(arrow_struct(rows), STRUCT, conv) == per_row(rows, conv, STRUCT)


def test_strings_binary_and_other_types_match_their_converters():
    texts = ["a", None, "ünï", 'x"y']
    string = converter_for({"value.converter": "org.apache.kafka.connect.storage.StringConverter"}, False)
    assert column_bytes(pa.array(texts), T.StringType(), string) == per_row(texts, string, T.StringType())
    json_conv = converter_for({"value.converter.schemas.enable": "false"}, False)
    assert column_bytes(pa.array(texts), T.StringType(), json_conv) == per_row(texts, json_conv, T.StringType())
    blobs = [b"\x00\x01", None, b""]
    raw = converter_for({"value.converter": "org.apache.kafka.connect.converters.ByteArrayConverter"}, False)
    assert column_bytes(pa.array(blobs, pa.binary()), T.BinaryType(), raw) == blobs
    doubles = [1.0, None, 2.5]
    assert column_bytes(pa.array(doubles), T.DoubleType(), json_conv) == per_row(doubles, json_conv, T.DoubleType())
    nested = T.StructType([T.StructField("a", T.StructType([T.StructField("b", T.LongType())]))])
    values = [{"a": {"b": 1}}, None]
    arr = pa.array(values, type=pa.struct([("a", pa.struct([("b", pa.int64())]))]))
    assert column_bytes(arr, nested, json_conv) == per_row(values, json_conv, nested)


def test_keys_are_json_texts_converted_per_row():
    conv = converter_for({"key.converter": "org.apache.kafka.connect.storage.StringConverter"}, True)
    keys = [json.dumps("k1"), None, json.dumps({"id": 3})]
    assert column_bytes(pa.array(keys), None, conv, json_keys=True) == [b"k1", None, b'{"id":3}']
    assert column_bytes(pa.array([None, None], pa.string()), None, conv, json_keys=True) == [None, None]
