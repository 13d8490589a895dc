"""Golden tests: Connect's documented SMT examples run on a real Spark batch, compared field by field.

Each config and record comes from Kafka's or Confluent's documentation of the SMT (named in the
test); the batch has a source connector's row shape (``connector_source.row_schema_ddl``), so the
same projection the connector's query runs is what is checked here.
"""

from __future__ import annotations

from typing import Any

import pytest

from sparkcat.errors import ConfigError
from sparkcat.transforms import Records, apply_chain, parse_chain

pytestmark = [pytest.mark.integration]

ROW = ("_task INT, _partition STRING, _offset STRING, topic STRING, key STRING, value {value}, timestamp_ms BIGINT, "
       "headers ARRAY<STRUCT<key: STRING, value: BINARY>>")
T = "org.apache.kafka.connect.transforms."
TS = 1700000000000  # 2023-11-14T22:13:20Z


def run(spark, config: dict[str, str], values: list[Any], value_ddl: str, *, topics: list[str] | None = None,
        headers: list[Any] | None = None, key: str | None = None) -> list[dict[str, Any]]:
    """The records after the chain, as dicts (value as a dict when a struct); dropped ones left out."""
    topics = topics or ["orders"] * len(values)
    headers = headers or [None] * len(values)
    rows = [(0, '{"p":0}', str(i), topics[i], key, v, TS, headers[i]) for i, v in enumerate(values)]
    df = spark.createDataFrame(rows, ROW.format(value=value_ddl))
    out = apply_chain(Records(df), parse_chain(config)).df
    records = [r.asDict(recursive=True) for r in out.orderBy("_offset").collect()]
    return [r for r in records if r.get("_keep", True)]


def test_hoist_then_insert_static_field_as_kafkas_file_source_example(spark):
    # kafka.apache.org/documentation/#connect_transforms: each line of the file becomes {"line": ..., "data_source": ...}
    config = {"transforms": "MakeMap, InsertSource",
              "transforms.MakeMap.type": T + "HoistField$Value", "transforms.MakeMap.field": "line",
              "transforms.InsertSource.type": T + "InsertField$Value",
              "transforms.InsertSource.static.field": "data_source",
              "transforms.InsertSource.static.value": "test-file-source"}
    [record] = run(spark, config, ["foo"], "STRING")
    assert record["value"] == {"line": "foo", "data_source": "test-file-source"}
    assert record["topic"] == "orders" and record["timestamp_ms"] == TS and record["key"] is None


def test_insert_field_topic_and_timestamp_then_optional_partition(spark):
    config = {"transforms": "insert", "transforms.insert.type": "InsertField$Value",
              "transforms.insert.topic.field": "src_topic!", "transforms.insert.timestamp.field": "ts?",
              "transforms.insert.partition.field": "part"}
    [record] = run(spark, config, [(1,)], "STRUCT<id: INT>")
    assert record["value"]["src_topic"] == "orders" and record["value"]["part"] is None
    assert int(record["value"]["ts"].timestamp() * 1000) == TS
    assert list(record["value"]) == ["id", "src_topic", "part", "ts"]  # Connect's order: topic, partition, offset, timestamp


def test_insert_field_offset_on_a_source_record_fails_as_connect(spark):
    config = {"transforms": "i", "transforms.i.type": T + "InsertField$Value", "transforms.i.offset.field": "off"}
    with pytest.raises(ConfigError, match=r"Only SinkRecord supported for \[field insertion\], found: "
                                          r"org.apache.kafka.connect.source.SourceRecord"):
        run(spark, config, [(1,)], "STRUCT<id: INT>")


def test_mask_field_with_type_default_and_with_replacements(spark):
    # docs.confluent.io .../transforms/maskfield.html "Mask value" and "Replace value"
    config = {"transforms": "MaskField", "transforms.MaskField.type": T + "MaskField$Value",
              "transforms.MaskField.fields": "string_field"}
    [record] = run(spark, config, [(22, "foo")], "STRUCT<integer_field: INT, string_field: STRING>")
    assert record["value"] == {"integer_field": 22, "string_field": ""}

    config = {"transforms": "SSNMask, PhoneMask", "transforms.SSNMask.type": T + "MaskField$Value",
              "transforms.SSNMask.fields": "SSN", "transforms.SSNMask.replacement": "***-***-****",
              "transforms.PhoneMask.type": T + "MaskField$Value", "transforms.PhoneMask.fields": "office,mobile",
              "transforms.PhoneMask.replacement": "+0-000-000-0000"}
    [record] = run(spark, config, [("123-45-6789", "+1-555-1234", "+1-555-9876", 7, True)],
                   "STRUCT<SSN: STRING, office: STRING, mobile: STRING, n: BIGINT, b: BOOLEAN>")
    assert record["value"] == {"SSN": "***-***-****", "office": "+0-000-000-0000", "mobile": "+0-000-000-0000",
                               "n": 7, "b": True}
    config = {"transforms": "m", "transforms.m.type": T + "MaskField$Value", "transforms.m.fields": "n,b"}
    [record] = run(spark, config, [("x", "y", "z", 7, True)],
                   "STRUCT<SSN: STRING, office: STRING, mobile: STRING, n: BIGINT, b: BOOLEAN>")
    assert record["value"]["n"] == 0 and record["value"]["b"] is False


def test_replace_field_exclude_include_and_renames(spark):
    # docs.confluent.io .../transforms/replacefield.html: drop a field; rename "foo:c1,bar:c2"
    ddl = "STRUCT<foo: STRING, bar: INT, c3: STRING>"
    exclude = {"transforms": "ReplaceField", "transforms.ReplaceField.type": T + "ReplaceField$Value",
               "transforms.ReplaceField.exclude": "c3"}
    assert run(spark, exclude, [("a", 1, "z")], ddl)[0]["value"] == {"foo": "a", "bar": 1}
    renames = {"transforms": "RenameField", "transforms.RenameField.type": T + "ReplaceField$Value",
               "transforms.RenameField.renames": "foo:c1,bar:c2"}
    assert run(spark, renames, [("a", 1, "z")], ddl)[0]["value"] == {"c1": "a", "c2": 1, "c3": "z"}
    include = {"transforms": "k", "transforms.k.type": T + "ReplaceField$Value", "transforms.k.include": "c3,foo"}
    assert run(spark, include, [("a", 1, "z")], ddl)[0]["value"] == {"foo": "a", "c3": "z"}


def test_value_to_key_then_extract_field_value(spark):
    # docs.confluent.io .../transforms/valuetokey.html and extractfield.html
    config = {"transforms": "createKey, extract", "transforms.createKey.type": T + "ValueToKey",
              "transforms.createKey.fields": "id",
              "transforms.extract.type": T + "ExtractField$Value", "transforms.extract.field": "name"}
    [record] = run(spark, config, [(42, "Dave")], "STRUCT<id: INT, name: STRING>")
    assert record["key"] == '{"id":42}' and record["value"] == "Dave"


def test_flatten_nested_struct_as_documented(spark):
    # docs.confluent.io .../transforms/flatten.html: content.name.first ...
    ddl = "STRUCT<content: STRUCT<id: INT, name: STRUCT<first: STRING, middle: STRING, last: STRING>>>"
    config = {"transforms": "flatten", "transforms.flatten.type": T + "Flatten$Value",
              "transforms.flatten.delimiter": "."}
    [record] = run(spark, config, [((42, ("David", None, "Wong")),)], ddl)
    assert record["value"] == {"content.id": 42, "content.name.first": "David", "content.name.middle": None,
                               "content.name.last": "Wong"}
    config["transforms.flatten.delimiter"] = "_"
    assert "content_name_last" in run(spark, config, [((1, ("a", "b", "c")),)], ddl)[0]["value"]


def test_cast_fields_and_whole_value(spark):
    # docs.confluent.io .../transforms/cast.html: "ID:string,score:float64"
    config = {"transforms": "Cast", "transforms.Cast.type": T + "Cast$Value",
              "transforms.Cast.spec": "ID:string,score:float64"}
    [record] = run(spark, config, [(7, 3, True)], "STRUCT<ID: INT, score: INT, ok: BOOLEAN>")
    assert record["value"] == {"ID": "7", "score": 3.0, "ok": True}
    whole = {"transforms": "c", "transforms.c.type": T + "Cast$Value", "transforms.c.spec": "int64"}
    assert run(spark, whole, ["12"], "STRING")[0]["value"] == 12


def test_timestamp_converter_unix_to_string_and_string_to_unix(spark):
    # docs.confluent.io .../transforms/timestampconverter.html: a unix field to a formatted string, in UTC
    config = {"transforms": "TimestampConverter", "transforms.TimestampConverter.type": T + "TimestampConverter$Value",
              "transforms.TimestampConverter.field": "event_date_long",
              "transforms.TimestampConverter.format": "yyyy-MM-dd",
              "transforms.TimestampConverter.target.type": "string"}
    [record] = run(spark, config, [(1577836800000, "x")], "STRUCT<event_date_long: BIGINT, other: STRING>")
    assert record["value"] == {"event_date_long": "2020-01-01", "other": "x"}
    back = {"transforms": "t", "transforms.t.type": T + "TimestampConverter$Value", "transforms.t.field": "d",
            "transforms.t.format": "yyyy-MM-dd HH:mm:ss", "transforms.t.target.type": "unix",
            "transforms.t.unix.precision": "seconds"}
    assert run(spark, back, [("2020-01-01 00:00:10",)], "STRUCT<d: STRING>")[0]["value"] == {"d": 1577836810}


def test_timestamp_router_default_format_and_regex_router_drop_prefix(spark):
    # TimestampRouter's defaults ${topic}-${timestamp}, yyyyMMdd; RegexRouter "soe-(.*)" -> "$1" (Confluent's example)
    config = {"transforms": "router", "transforms.router.type": T + "TimestampRouter"}
    assert run(spark, config, [(1,)], "STRUCT<id: INT>")[0]["topic"] == "orders-20231114"
    config = {"transforms": "dropPrefix", "transforms.dropPrefix.type": T + "RegexRouter",
              "transforms.dropPrefix.regex": "soe-(.*)", "transforms.dropPrefix.replacement": "$1"}
    out = run(spark, config, [(1,), (2,)], "STRUCT<id: INT>", topics=["soe-Customer", "other-soe-x"])
    assert [r["topic"] for r in out] == ["Customer", "other-soe-x"]  # matches() is whole-topic, as in Connect


def test_header_transforms_insert_drop_and_copy_from_value(spark):
    # kafka.apache.org/documentation: InsertHeader, DropHeaders, HeaderFrom (KIP-145 examples)
    config = {"transforms": "insertAppIdHeader, dropTrace, copy",
              "transforms.insertAppIdHeader.type": T + "InsertHeader",
              "transforms.insertAppIdHeader.header": "app.id", "transforms.insertAppIdHeader.value.literal": "best-app",
              "transforms.dropTrace.type": T + "DropHeaders", "transforms.dropTrace.headers": "trace",
              "transforms.copy.type": T + "HeaderFrom$Value", "transforms.copy.fields": "id",
              "transforms.copy.headers": "record-id", "transforms.copy.operation": "move"}
    [record] = run(spark, config, [(42, "x")], "STRUCT<id: INT, name: STRING>",
                   headers=[[("trace", b"t1"), ("keep", b"k")]])
    assert [(h["key"], bytes(h["value"])) for h in record["headers"]] == [
        ("keep", b"k"), ("app.id", b"best-app"), ("record-id", b"42")]
    assert record["value"] == {"name": "x"}  # moved, not copied


def test_chain_with_filter_predicate_and_negate(spark):
    # kafka.apache.org/documentation/#connect_predicates: Filter on IsFoo; a second transform with IsBar negated
    config = {"transforms": "Filter, Route",
              "transforms.Filter.type": T + "Filter", "transforms.Filter.predicate": "IsFoo",
              "transforms.Route.type": T + "RegexRouter", "transforms.Route.regex": "(.*)",
              "transforms.Route.replacement": "$1-routed",
              "transforms.Route.predicate": "IsBar", "transforms.Route.negate": "true",
              "predicates": "IsFoo, IsBar",
              "predicates.IsFoo.type": T + "predicates.TopicNameMatches", "predicates.IsFoo.pattern": "foo",
              "predicates.IsBar.type": T + "predicates.TopicNameMatches", "predicates.IsBar.pattern": "bar"}
    out = run(spark, config, [(1,), (2,), (3,), (4,)], "STRUCT<id: INT>", topics=["foo", "bar", "baz", "food"])
    assert [(r["topic"], r["value"]["id"]) for r in out] == [("bar", 2), ("baz-routed", 3), ("food-routed", 4)]


def test_has_header_key_and_tombstone_predicates(spark):
    config = {"transforms": "dropTombstones, dropMarked",
              "transforms.dropTombstones.type": "Filter", "transforms.dropTombstones.predicate": "isTombstone",
              "transforms.dropMarked.type": "Filter", "transforms.dropMarked.predicate": "marked",
              "predicates": "isTombstone, marked",
              "predicates.isTombstone.type": T + "predicates.RecordIsTombstone",
              "predicates.marked.type": T + "predicates.HasHeaderKey", "predicates.marked.name": "skip"}
    out = run(spark, config, [(1,), None, (3,)], "STRUCT<id: INT>", headers=[None, None, [("skip", b"")]])
    assert [r["value"] for r in out] == [{"id": 1}]


def test_masking_under_a_predicate_keeps_the_rest_unchanged(spark):
    config = {"transforms": "m", "transforms.m.type": T + "MaskField$Value", "transforms.m.fields": "card",
              "transforms.m.predicate": "pci", "predicates": "pci",
              "predicates.pci.type": T + "predicates.TopicNameMatches", "predicates.pci.pattern": "pay.*"}
    out = run(spark, config, [("4111",), ("4222",)], "STRUCT<card: STRING>", topics=["payments", "orders"])
    assert [r["value"]["card"] for r in out] == ["", "4222"]


def test_a_type_changing_transform_under_a_predicate_is_refused(spark):
    config = {"transforms": "i", "transforms.i.type": T + "InsertField$Value", "transforms.i.static.field": "s",
              "transforms.i.static.value": "v", "transforms.i.predicate": "p", "predicates": "p",
              "predicates.p.type": T + "predicates.TopicNameMatches", "predicates.p.pattern": "x"}
    with pytest.raises(ConfigError, match="one schema"):
        run(spark, config, [(1,)], "STRUCT<id: INT>")


def test_field_transform_on_a_string_value_fails_with_connects_message(spark):
    config = {"transforms": "m", "transforms.m.type": T + "MaskField$Value", "transforms.m.fields": "x"}
    with pytest.raises(ConfigError, match=r"Only Struct objects supported for \[mask fields\], found: java.lang.String"):
        run(spark, config, ["text"], "STRING")


def test_sql_transform_selects_over_records(spark):
    config = {"transforms": "q", "transforms.q.type": "sql",
              "transforms.q.query": "SELECT _task, _partition, _offset, key, named_struct('id', value.id, 'double', "
                                    "value.id * 2) AS value, upper(topic) AS topic, timestamp, headers "
                                    "FROM records WHERE value.id > 1"}
    out = run(spark, config, [(1,), (2,), (3,)], "STRUCT<id: INT>")
    assert [(r["topic"], r["value"]) for r in out] == [("ORDERS", {"id": 2, "double": 4}),
                                                       ("ORDERS", {"id": 3, "double": 6})]
    assert all(r["timestamp_ms"] == TS for r in out)


def test_sql_transform_is_checked_against_the_batch_schema(spark):
    config = {"transforms": "q", "transforms.q.type": "org.sparkcat.transforms.Sql",
              "transforms.q.query": "SELECT *, value.nope AS x FROM records"}
    with pytest.raises(ConfigError, match="transforms.q.query: the statement does not run on the batch"):
        run(spark, config, [(1,)], "STRUCT<id: INT>")
    config["transforms.q.query"] = "SELECT value FROM records"
    with pytest.raises(ConfigError, match="lacks _task, _partition, _offset"):
        run(spark, config, [(1,)], "STRUCT<id: INT>")


@pytest.mark.parametrize("query, refused", [
    ("SELECT r.*, f.value AS line FROM records r, text.`/etc/hostname` f", "Join"),
    ("SELECT *, reflect('java.lang.System', 'getProperty', 'user.name') AS u FROM records", "CallMethodViaReflection"),
    ("SELECT *, (SELECT max(id) FROM range(3)) AS m FROM records", "ScalarSubquery"),
    ("SELECT * FROM records ORDER BY _offset", "Sort"),
    ("SELECT * FROM records UNION ALL SELECT * FROM records", "Union"),
])
def test_sql_transform_may_only_select_and_filter_the_records(spark, query, refused):
    # A connector config is user input: no other relation (files), no Java, nothing that moves rows between tasks.
    config = {"transforms": "q", "transforms.q.type": "sql", "transforms.q.query": query}
    with pytest.raises(ConfigError, match=f"may only select and filter the records.*{refused} is not allowed"):
        run(spark, config, [(1,)], "STRUCT<id: INT>")


def test_sql_transform_with_a_cte_still_runs(spark):
    config = {"transforms": "q", "transforms.q.type": "sql",
              "transforms.q.query": "WITH kept AS (SELECT * FROM records WHERE value.id > 1) SELECT * FROM kept"}
    assert [r["value"] for r in run(spark, config, [(1,), (2,)], "STRUCT<id: INT>")] == [{"id": 2}]
