"""Golden tests for ``$Key`` variants and for sink-shaped batches: Connect's documented examples on real Spark.

Source batches have a source connector's row shape (``test_golden.run``); sink batches are
Spark's Kafka rows (bytes as in Kafka) decoded and transformed by ``sink_chain.transform_batch``
and turned into ``SinkRecord``s by ``transformed_records``, the code a sink connector's query runs.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from sparkcat.errors import ConfigError
from sparkcat.spark.executor.batch_results import Tallies, columns
from sparkcat.spark.executor.error_handling import ErrorSettings, RecordErrors
from sparkcat.spark.executor.sink_chain import transform_batch, transformed_records
from sparkcat.transforms import parse_chain
from tests.integration.transforms.test_golden import T, TS, run

pytestmark = [pytest.mark.integration]

KAFKA_ROW = ("topic STRING, partition INT, offset BIGINT, timestamp BIGINT, key BINARY, value BINARY, "
             "headers ARRAY<STRUCT<key: STRING, value: BINARY>>, _task INT")
SCHEMALESS = {"key.converter": "org.apache.kafka.connect.json.JsonConverter", "key.converter.schemas.enable": "false",
              "value.converter": "org.apache.kafka.connect.json.JsonConverter",
              "value.converter.schemas.enable": "false"}


def sink_records(spark, config: dict[str, str], rows: list[tuple[Any, Any]], topic: str = "orders"):
    """SinkRecords of ``rows`` ((key, value) JSON-able pairs, written as JSON bytes) after ``config``'s chain."""
    data = [(topic, 0, i, TS + i, None if k is None else json.dumps(k).encode(),
             None if v is None else json.dumps(v).encode(), None, 0) for i, (k, v) in enumerate(rows)]
    df = spark.createDataFrame(data, KAFKA_ROW)
    out, sides = transform_batch(df, config, False, parse_chain(config))
    tallies = Tallies()
    errors = RecordErrors("c", ErrorSettings.of(config))
    records = transformed_records(config, False, sides, errors)(columns(out.orderBy("_orig_offset").toArrow()),
                                                                tallies)
    return records.get(0, []), tallies.of(0)


def test_value_to_key_then_extract_field_key_as_confluents_jdbc_source_example(spark):
    # docs.confluent.io .../transforms/extractfield.html: createKey (ValueToKey c1) then extractInt (ExtractField$Key)
    config = {"transforms": "createKey,extractInt", "transforms.createKey.type": T + "ValueToKey",
              "transforms.createKey.fields": "c1", "transforms.extractInt.type": T + "ExtractField$Key",
              "transforms.extractInt.field": "c1"}
    [record] = run(spark, config, [(42, "Dave")], "STRUCT<c1: INT, name: STRING>")
    assert record["key"] == "42" and record["value"] == {"c1": 42, "name": "Dave"}
    string_key = {**config, "transforms.createKey.fields": "name", "transforms.extractInt.field": "name"}
    assert run(spark, string_key, [(42, "Dave")], "STRUCT<c1: INT, name: STRING>")[0]["key"] == '"Dave"'


def test_key_variant_on_a_source_key_without_schema_is_refused_naming_the_transform(spark):
    config = {"transforms": "m", "transforms.m.type": T + "MaskField$Key", "transforms.m.fields": "id"}
    with pytest.raises(ConfigError, match=r"transforms.m: org.apache.kafka.connect.transforms.MaskField\$Key needs "
                                          r"a key with a schema"):
        run(spark, config, [(1,)], "STRUCT<id: INT>", key='{"id":1}')


def test_hoist_field_key_as_connects_hoistfield_test(spark):
    # apache/kafka HoistFieldTest: HoistField.Key with field "magic" turns key 42 into {"magic": 42}
    config = {**SCHEMALESS, "transforms": "h", "transforms.h.type": T + "HoistField$Key", "transforms.h.field": "magic"}
    [record], _ = sink_records(spark, config, [({"id": 42}, {"v": 1})])
    assert record.key == {"magic": {"id": 42}} and record.value == {"v": 1}


def test_key_field_transforms_on_a_sink_record_key(spark):
    # MaskField/ReplaceField/Cast docs examples, applied to a JSON key decoded by the key converter
    config = {**SCHEMALESS, "transforms": "mask,rename,cast,insert",
              "transforms.mask.type": T + "MaskField$Key", "transforms.mask.fields": "ssn",
              "transforms.rename.type": T + "ReplaceField$Key", "transforms.rename.renames": "id:key_id",
              "transforms.cast.type": T + "Cast$Key", "transforms.cast.spec": "key_id:string",
              "transforms.insert.type": T + "InsertField$Key", "transforms.insert.offset.field": "kafka_offset"}
    records, tally = sink_records(spark, config, [({"id": 7, "ssn": "123-45-6789"}, {"n": 1}),
                                                  ({"id": 8, "ssn": "987-65-4321"}, {"n": 2})])
    assert [r.key for r in records] == [{"key_id": "7", "ssn": "", "kafka_offset": 0},
                                        {"key_id": "8", "ssn": "", "kafka_offset": 1}]
    assert [r.value for r in records] == [{"n": 1}, {"n": 2}]
    assert tally.records == 2


def test_sink_router_keeps_original_coordinates_as_kip_793(spark):
    # Connect's RegexRouter doc example "soe-(.*)" -> "$1"; SinkRecord.originalTopic() stays the Kafka topic
    config = {**SCHEMALESS, "transforms": "dropPrefix,extract", "transforms.dropPrefix.type": T + "RegexRouter",
              "transforms.dropPrefix.regex": "soe-(.*)", "transforms.dropPrefix.replacement": "$1",
              "transforms.extract.type": T + "ExtractField$Value", "transforms.extract.field": "id"}
    records, tally = sink_records(spark, config, [(None, {"id": 1}), (None, {"id": 2})], topic="soe-Customer")
    assert [(r.topic, r.value, r.kafka_offset, r.timestamp_ms) for r in records] == [
        ("Customer", 1, 0, TS), ("Customer", 2, 1, TS + 1)]
    assert {(r.original_topic, r.original_kafka_partition, r.original_kafka_offset) for r in records} == {
        ("soe-Customer", 0, 0), ("soe-Customer", 0, 1)}
    assert list(tally.offsets.values()) == [({"kafka_topic": "soe-Customer", "kafka_partition": 0},
                                             {"kafka_offset": 2})]


def test_sink_schema_envelope_gives_connect_types_and_a_bad_record_fails_with_the_converters_message(spark):
    schema = {"type": "struct", "fields": [{"field": "id", "type": "int32"}, {"field": "score", "type": "int64"}]}
    config = {"value.converter": "org.apache.kafka.connect.json.JsonConverter",
              "key.converter": "org.apache.kafka.connect.storage.StringConverter",
              "transforms": "c", "transforms.c.type": T + "Cast$Value", "transforms.c.spec": "score:float64"}
    [record], _ = sink_records(spark, config, [("k", {"schema": schema, "payload": {"id": 1, "score": 5}})])
    assert record.value == {"id": 1, "score": 5.0} and record.key == '"k"'
    with pytest.raises(Exception, match="Tolerance exceeded in error handler"):
        sink_records(spark, config, [("k", {"schema": schema, "payload": {"id": 1, "score": 5}}),
                                     ("k", {"not": "an envelope"})])


def test_set_schema_metadata_reaches_json_converters_envelope(spark):
    # docs.confluent.io .../transforms/setschemametadata.html: schema.name and schema.version on the value schema;
    # JsonConverter writes them after "optional", as Connect's asJsonSchema does
    from sparkcat.converters import converter_for
    from sparkcat.spark.executor.kafka_serialisation import column_bytes, value_type_of

    config = {"transforms": "SetSchemaMetadata", "transforms.SetSchemaMetadata.type": T + "SetSchemaMetadata$Value",
              "transforms.SetSchemaMetadata.schema.name": "order-value",
              "transforms.SetSchemaMetadata.schema.version": "2"}
    df = source_batch(spark, config, [(1, "a")], "STRUCT<id: INT, name: STRING>")
    value_type = value_type_of(df.schema["value"])
    conv = converter_for({"value.converter": "org.apache.kafka.connect.json.JsonConverter"}, False)
    [data] = column_bytes(df.select("value").toArrow().column(0), value_type, conv)
    envelope = json.loads(data)
    assert envelope["schema"] == {"type": "struct", "fields": [
        {"type": "int32", "optional": True, "field": "id"}, {"type": "string", "optional": True, "field": "name"}],
        "optional": False, "name": "order-value", "version": 2}
    assert envelope["payload"] == {"id": 1, "name": "a"}
    assert list(envelope["schema"]) == ["type", "fields", "optional", "name", "version"]
    only_version = {**config, "transforms.SetSchemaMetadata.schema.name": ""}
    only_version.pop("transforms.SetSchemaMetadata.schema.name")
    df = source_batch(spark, only_version, [(1, "a")], "STRUCT<id: INT, name: STRING>")
    assert value_type_of(df.schema["value"]).connect_name is None


def key_envelope(df) -> dict[str, Any]:
    """The source batch's first key as JsonConverter (schemas.enable) writes it, with the type the chain gave it."""
    from sparkcat.converters import converter_for
    from sparkcat.spark.executor.kafka_serialisation import column_bytes, key_type_of

    conv = converter_for({"key.converter": "org.apache.kafka.connect.json.JsonConverter"}, True)
    [data] = column_bytes(df.select("key").toArrow().column(0), key_type_of(df.schema["key"]), conv, json_keys=True)
    return json.loads(data)


def test_set_schema_metadata_key_names_the_key_value_to_key_built(spark):
    # docs.confluent.io .../transforms/setschemametadata.html's example on the key: ValueToKey "id", then
    # SetSchemaMetadata$Key schema.name/version; Connect's JsonConverter writes the key's schema with them
    config = {"transforms": "createKey,SetSchemaMetadata", "transforms.createKey.type": T + "ValueToKey",
              "transforms.createKey.fields": "id", "transforms.SetSchemaMetadata.type": T + "SetSchemaMetadata$Key",
              "transforms.SetSchemaMetadata.schema.name": "order-key",
              "transforms.SetSchemaMetadata.schema.version": "2"}
    df = source_batch(spark, config, [(42, "a")], "STRUCT<id: INT, name: STRING>")
    assert key_envelope(df) == {"schema": {"type": "struct", "fields": [{"type": "int32", "optional": True,
                                                                         "field": "id"}],
                                           "optional": False, "name": "order-key", "version": 2},
                                "payload": {"id": 42}}
    assert json.loads(df.collect()[0]["key"]) == {"id": 42}  # still JSON text for the rest of the pipeline
    # without SetSchemaMetadata$Key the key ValueToKey built keeps its schema too, unnamed, as in Connect
    unnamed = {"transforms": "createKey", "transforms.createKey.type": T + "ValueToKey",
               "transforms.createKey.fields": "id"}
    df = source_batch(spark, unnamed, [(42, "a")], "STRUCT<id: INT, name: STRING>")
    assert key_envelope(df)["schema"] == {"type": "struct", "fields": [{"type": "int32", "optional": True,
                                                                        "field": "id"}], "optional": False}


def test_set_schema_metadata_key_is_refused_where_the_key_has_no_schema_sparkcat_writes(spark):
    own_key = {"transforms": "s", "transforms.s.type": T + "SetSchemaMetadata$Key", "transforms.s.schema.name": "k"}
    with pytest.raises(ConfigError, match=r"transforms.s: org.apache.kafka.connect.transforms.SetSchemaMetadata\$Key "
                                          r"needs a key with a schema"):
        run(spark, own_key, [(1,)], "STRUCT<id: INT>", key='{"id":1}')
    timestamp_key = {"transforms": "k,s", "transforms.k.type": T + "ValueToKey", "transforms.k.fields": "at",
                     "transforms.s.type": T + "SetSchemaMetadata$Key", "transforms.s.schema.name": "k"}
    with pytest.raises(ConfigError, match="writes a source key's schema only for keys of numbers"):
        run(spark, timestamp_key, [(1, None)], "STRUCT<id: INT, at: TIMESTAMP>")
    sink = {**SCHEMALESS, **own_key}
    with pytest.raises(Exception, match=r"SetSchemaMetadata\$Key on a sink connector"):
        sink_records(spark, sink, [({"id": 1}, {"v": 1})])


def test_set_schema_metadata_on_a_non_struct_value_is_refused(spark):
    config = {"transforms": "s", "transforms.s.type": T + "SetSchemaMetadata$Value", "transforms.s.schema.name": "n"}
    with pytest.raises(ConfigError, match="only for struct values"):
        run(spark, config, ["text"], "STRING")


def source_batch(spark, config: dict[str, str], values: list[Any], value_ddl: str):
    """A source-shaped batch through ``config``'s chain, as the connector's query builds it."""
    from sparkcat.transforms import Records, apply_chain
    from tests.integration.transforms.test_golden import ROW
    rows = [(0, '{"p":0}', str(i), "orders", None, v, TS, None) for i, v in enumerate(values)]
    return apply_chain(Records(spark.createDataFrame(rows, ROW.format(value=value_ddl))), parse_chain(config)).df
