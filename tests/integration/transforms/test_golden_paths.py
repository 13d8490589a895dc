"""Golden tests for KIP-821's nested field paths (``field.syntax.version=V2``) in ExtractField, on real Spark.

Records and paths are those of Kafka's ``ExtractFieldTest`` (``magic.foo`` on ``{"magic": {"foo": 42}}``) and
``FieldSyntaxVersion``'s doc (```` `foo.bar`.baz ```` reads ``baz`` of a field named ``foo.bar``).
"""

from __future__ import annotations

import pytest

from sparkcat.errors import ConfigError
from tests.integration.transforms.test_golden import T, run
from tests.integration.transforms.test_golden_keys import SCHEMALESS, sink_records

pytestmark = [pytest.mark.integration]


def extract(path: str, variant: str = "$Value", version: str = "V2") -> dict[str, str]:
    return {"transforms": "x", "transforms.x.type": T + "ExtractField" + variant, "transforms.x.field": path,
            "transforms.x.field.syntax.version": version}


def test_nested_with_schema_value_and_a_null_parent_as_connects_extract_field_test(spark):
    # ExtractFieldTest.testNestedWithSchema: V2 "magic.foo" on a struct {magic: {foo: 42}} gives 42, typed int32
    out = run(spark, extract("magic.foo"), [((42,),), ((None,),), (None,)], "STRUCT<magic: STRUCT<foo: INT>>")
    assert [r["value"] for r in out] == [42, None, None]  # a null struct on the path gives null (valueFrom)
    v1 = run(spark, extract("magic", version="V1"), [((42,),)], "STRUCT<magic: STRUCT<foo: INT>>")
    assert v1[0]["value"] == {"foo": 42}


def test_nested_key_after_value_to_key_on_a_source(spark):
    config = {**extract("magic.foo", "$Key"), "transforms": "k,x", "transforms.k.type": T + "ValueToKey",
              "transforms.k.fields": "magic"}
    [record] = run(spark, config, [((42,), "v")], "STRUCT<magic: STRUCT<foo: INT>, other: STRING>")
    assert record["key"] == "42" and record["value"] == {"magic": {"foo": 42}, "other": "v"}


def test_nested_schemaless_sink_key_and_backticked_step_with_dots(spark):
    # ExtractFieldTest.testNestedSchemaless on the key; FieldSyntaxVersion's doc example "`foo.bar`.baz"
    config = {**SCHEMALESS, **extract("magic.foo", "$Key")}
    [record], _ = sink_records(spark, config, [({"magic": {"foo": 42}}, {"n": 1})])
    assert record.key == 42 and record.value == {"n": 1}
    config = {**SCHEMALESS, **extract("`foo.bar`.baz")}
    [record], _ = sink_records(spark, config, [(None, {"foo.bar": {"baz": "deep"}, "foo": {"bar": "other"}})])
    assert record.value == "deep"
    v1 = {**SCHEMALESS, **extract("foo.bar", version="V1")}  # V1: "foo.bar" is a root field name, dots and all
    [record], _ = sink_records(spark, v1, [(None, {"foo.bar": 7, "foo": {"bar": 8}})])
    assert record.value == 7


def test_unknown_nested_field_with_schema_fails_with_connects_message(spark):
    # ExtractFieldTest.testNonExistentNestedFieldWithSchemaShouldFail: "Unknown field: magic.nonexistent"
    with pytest.raises(ConfigError, match="Unknown field: magic.nonexistent"):
        run(spark, extract("magic.nonexistent"), [((42,),)], "STRUCT<magic: STRUCT<foo: INT>>")
    with pytest.raises(ConfigError, match="Unknown field: other.foo"):  # a step through a field that is no struct
        run(spark, extract("other.foo"), [((42,), "x")], "STRUCT<magic: STRUCT<foo: INT>, other: STRING>")
