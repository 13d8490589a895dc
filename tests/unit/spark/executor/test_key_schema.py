"""A source key ValueToKey built keeps its type on the key column's metadata; the key converter writes it with it."""

from __future__ import annotations

import json

import pyarrow as pa
from pyspark.sql import types as T

from sparkcat.converters import JsonConverter
from sparkcat.spark.executor.kafka_serialisation import column_bytes, key_type_of
from sparkcat.transforms import KEY_TYPE, SCHEMA_NAME, SCHEMA_VERSION

KEY = T.StructType([T.StructField("id", T.IntegerType(), True)])


def _converter() -> JsonConverter:
    conv = JsonConverter()
    conv.configure({}, True)
    return conv


def test_a_task_key_without_type_metadata_stays_schemaless():
    column = pa.array(['{"id":1}', None])
    assert key_type_of(T.StructField("key", T.StringType(), True)) is None
    assert [None if b is None else json.loads(b) for b in column_bytes(column, None, _converter(), json_keys=True)] \
        == [{"schema": None, "payload": {"id": 1}}, None]


def test_a_typed_and_named_key_is_written_with_its_connect_schema():
    field = T.StructField("key", T.StringType(), True, {KEY_TYPE: KEY.json(), SCHEMA_NAME: "k", SCHEMA_VERSION: 4})
    key_type = key_type_of(field)
    assert key_type.connect_name == "k" and key_type.connect_version == 4 and key_type.fields == KEY.fields
    [data] = column_bytes(pa.array(['{"id":7}']), key_type, _converter(), json_keys=True)
    assert json.loads(data) == {"schema": {"type": "struct", "fields": [{"type": "int32", "optional": True,
                                                                         "field": "id"}],
                                           "optional": False, "name": "k", "version": 4}, "payload": {"id": 7}}
    unnamed = key_type_of(T.StructField("key", T.StringType(), True, {KEY_TYPE: T.LongType().json()}))
    assert json.loads(column_bytes(pa.array(["42"]), unnamed, _converter(), json_keys=True)[0]) == {
        "schema": {"type": "int64", "optional": False}, "payload": 42}
