"""KIP-1040's ``replace.null.with.default`` on the field SMTs, on a real Spark batch.

Connect's SMTs that define the key copy a struct's fields with ``Struct.get`` (a null field that
has a schema default reads as the default) when it is true, its default, and with
``getWithoutDefault`` when false. The batch here is a sink connector's decoded value whose fields
carry their Connect defaults as sink decoding puts them (``sink_decode.spark_type`` of a
JsonConverter envelope schema), so the records are what those SMTs give a Connect sink task.
"""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql import types as T

from sparkcat.spark.executor.sink_decode import spark_type
from sparkcat.transforms import Records, apply_chain, parse_chain

pytestmark = [pytest.mark.integration]

P = "org.apache.kafka.connect.transforms."
#: The envelope schema of the value: a and blob have defaults, b has none, s.n (nested) has one.
SCHEMA = {"type": "struct", "fields": [
    {"field": "a", "type": "int32", "optional": True, "default": 5},
    {"field": "b", "type": "string", "optional": True},
    {"field": "ts", "type": "int64", "optional": True, "default": 1700000000000},
    {"field": "blob", "type": "bytes", "optional": True, "default": "AQI="},
    {"field": "s", "type": "struct", "optional": True, "fields": [
        {"field": "n", "type": "string", "optional": True, "default": "nested"}]}]}
NULLS = (None, None, None, None, (None,))
SET = (1, "x", 1, b"\x09", ("y",))


def run(spark, config: dict[str, str], values: list[Any]) -> list[dict[str, Any]]:
    value_type = spark_type(SCHEMA)
    schema = T.StructType([T.StructField("topic", T.StringType()), T.StructField("key", T.StringType()),
                           T.StructField("value", value_type), T.StructField("timestamp", T.LongType()),
                           T.StructField("headers", T.ArrayType(T.StructType([
                               T.StructField("key", T.StringType()), T.StructField("value", T.BinaryType())])))])
    df = spark.createDataFrame([("orders", None, v, 0, []) for v in values], schema)
    out = apply_chain(Records(df, kind="sink", timestamp="timestamp", key_json=False), parse_chain(config)).df
    return [r.asDict(recursive=True) for r in out.collect()]


def smt(kind: str, replace: str | None = None, **keys: str) -> dict[str, str]:
    config = {"transforms": "t", "transforms.t.type": P + kind}
    config.update({f"transforms.t.{k.replace('_', '.')}": v for k, v in keys.items()})
    if replace is not None:
        config["transforms.t.replace.null.with.default"] = replace
    return config


def test_envelope_defaults_ride_on_the_struct_fields():
    fields = spark_type(SCHEMA).fields
    assert [f.metadata.get("connect.default") for f in fields] == ["5", None, "1700000000000", '"AQI="', None]


def test_insert_field_copies_nulls_as_their_defaults_unless_told_not_to(spark):
    [record] = run(spark, smt("InsertField$Value", static_field="src", static_value="k"), [NULLS])
    assert record["value"] == {"a": 5, "b": None, "ts": 1700000000000, "blob": b"\x01\x02", "s": {"n": None},
                               "src": "k"}
    [record] = run(spark, smt("InsertField$Value", "false", static_field="src", static_value="k"), [NULLS])
    assert record["value"]["a"] is None and record["value"]["blob"] is None
    [record] = run(spark, smt("InsertField$Value", static_field="src", static_value="k"), [SET])
    assert record["value"]["a"] == 1 and record["value"]["blob"] == b"\x09"  # a value is never replaced


def test_replace_field_keeps_the_default_through_a_rename_for_the_next_smt(spark):
    config = {"transforms": "r,e", "transforms.r.type": P + "ReplaceField$Value", "transforms.r.renames": "a:x",
              "transforms.r.include": "a,b", "transforms.r.replace.null.with.default": "false",
              "transforms.e.type": P + "ExtractField$Value", "transforms.e.field": "x"}
    [record] = run(spark, config, [NULLS])
    assert record["value"] == 5  # ReplaceField kept null, the renamed field's schema kept its default
    [record] = run(spark, smt("ReplaceField$Value", include="a,b"), [NULLS])
    assert record["value"] == {"a": 5, "b": None}


def test_extract_field_v1_and_v2(spark):
    assert run(spark, smt("ExtractField$Value", field="a"), [NULLS])[0]["value"] == 5
    assert run(spark, smt("ExtractField$Value", "false", field="a"), [NULLS])[0]["value"] is None
    v2 = smt("ExtractField$Value", field="s.n", field_syntax_version="V2")
    assert run(spark, v2, [NULLS])[0]["value"] == "nested"
    assert run(spark, {**v2, "transforms.t.replace.null.with.default": "false"}, [NULLS])[0]["value"] is None


def test_mask_field_masks_the_default_and_leaves_a_null_null(spark):
    [record] = run(spark, smt("MaskField$Value", fields="a,b"), [NULLS])
    assert record["value"]["a"] == 0 and record["value"]["b"] is None  # Connect's masked(null) is null
    assert record["value"]["ts"] == 1700000000000  # the fields not masked are copied with their defaults too
    [record] = run(spark, smt("MaskField$Value", "false", fields="a"), [NULLS])
    assert record["value"]["a"] is None and record["value"]["ts"] is None


def test_cast_casts_the_default(spark):
    assert run(spark, smt("Cast$Value", spec="a:string"), [NULLS])[0]["value"]["a"] == "5"
    assert run(spark, smt("Cast$Value", "false", spec="a:string"), [NULLS])[0]["value"]["a"] is None


def test_timestamp_converter_converts_the_default(spark):
    [record] = run(spark, smt("TimestampConverter$Value", field="ts", target_type="string", format="yyyy-MM-dd"),
                   [NULLS])
    assert record["value"]["ts"] == "2023-11-14" and record["value"]["a"] == 5
    config = smt("TimestampConverter$Value", "false", field="ts", target_type="string", format="yyyy-MM-dd")
    assert run(spark, config, [NULLS])[0]["value"]["ts"] is None


def test_value_to_key_copies_the_default_into_the_key(spark):
    assert run(spark, smt("ValueToKey", fields="a,b"), [NULLS])[0]["key"] == {"a": 5, "b": None}
    assert run(spark, smt("ValueToKey", "false", fields="a,b"), [NULLS])[0]["key"] == {"a": None, "b": None}


def test_header_from_writes_the_default_and_move_copies_the_rest_with_theirs(spark):
    [record] = run(spark, smt("HeaderFrom$Value", fields="a", headers="h", operation="move"), [NULLS])
    assert record["headers"] == [{"key": "h", "value": b"5"}]
    assert record["value"]["ts"] == 1700000000000 and "a" not in record["value"]
    [record] = run(spark, smt("HeaderFrom$Value", "false", fields="a", headers="h", operation="copy"), [NULLS])
    assert record["headers"] == [{"key": "h", "value": None}] and record["value"]["a"] is None


def _sink_rows(spark, converter_settings: dict[str, str], payload: str) -> tuple[Any, list[Any]]:
    """A sink batch whose value is a JsonConverter envelope with SCHEMA, decoded as a sink connector decodes it."""
    import json

    from sparkcat.spark.executor.sink_decode import decode_batch, sides_of

    envelope = json.dumps({"schema": SCHEMA, "payload": json.loads(payload)}).encode()
    df = spark.createDataFrame([("orders", 0, 0, None, envelope, 0, [])],
                               "topic STRING, partition INT, offset BIGINT, key BINARY, value BINARY, "
                               "timestamp BIGINT, headers ARRAY<STRUCT<key: STRING, value: BINARY>>")
    config = {"value.converter": "org.apache.kafka.connect.json.JsonConverter",
              "key.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
              **{f"value.converter.{k}": v for k, v in converter_settings.items()}}
    return decode_batch(df, sides_of(config, raw=False))


def test_json_converter_reads_a_null_field_with_a_default_as_the_default_unless_told_not_to(spark):
    payload = '{"a": null, "b": null, "ts": 1, "blob": null, "s": {"n": null}}'
    decoded, _ = _sink_rows(spark, {}, payload)
    value = decoded.collect()[0]["value"].asDict(recursive=True)
    assert value == {"a": 5, "b": None, "ts": 1, "blob": b"\x01\x02", "s": {"n": "nested"}}  # nested fields too
    decoded, _ = _sink_rows(spark, {"replace.null.with.default": "false"}, payload)
    assert decoded.collect()[0]["value"]["a"] is None


def test_with_the_converters_nulls_kept_the_smts_key_decides(spark):
    payload = '{"a": null, "b": "x", "ts": 1, "blob": null, "s": null}'
    decoded, _ = _sink_rows(spark, {"replace.null.with.default": "false"}, payload)
    records = Records(decoded, kind="sink", timestamp="timestamp", key_json=False)
    for replace, expected in (("true", 5), ("false", None)):
        out = apply_chain(records, parse_chain(smt("ExtractField$Value", replace, field="a"))).df
        assert out.collect()[0]["value"] == expected
