"""Golden tests for TimestampConverter's ``Time`` (Connect's Time logical type) on a real Spark session.

The instants are those of Kafka's ``TimestampConverterTest``: DATE_PLUS_TIME is 1970-01-02T00:00:01.234Z
(unix 86401234 ms), whose time of day is TIME, 00:00:01.234 (1234 ms after midnight UTC). Connect's Time
is a Spark ``TIME`` column here, and JsonConverter writes it as Connect does (``int32`` named
``org.apache.kafka.connect.data.Time``, milliseconds since midnight).
"""

from __future__ import annotations

import datetime as dt
import json

import pytest

from sparkcat.errors import ConfigError
from sparkcat.transforms import parse_chain
from tests.integration.transforms.test_golden import T, run
from tests.integration.transforms.test_golden_keys import SCHEMALESS, sink_records, source_batch

pytestmark = [pytest.mark.integration]

DATE_PLUS_TIME = dt.datetime(1970, 1, 2, 0, 0, 1, 234000, tzinfo=dt.timezone.utc)
DATE_PLUS_TIME_UNIX = 86401234
TIME = dt.time(0, 0, 1, 234000)
TIME_TYPE = "org.apache.kafka.connect.data.Time"


def converter(target: str, field: str = "", variant: str = "$Value", **extra: str) -> dict[str, str]:
    config = {"transforms": "tc", "transforms.tc.type": T + "TimestampConverter" + variant,
              "transforms.tc.target.type": target, **{f"transforms.tc.{k.replace('_', '.')}": v
                                                       for k, v in extra.items()}}
    if field:
        config["transforms.tc.field"] = field
    return config


def json_envelope(df) -> dict:
    """The source batch's first value as JsonConverter (schemas.enable) writes it to Kafka."""
    from sparkcat.converters import converter_for
    from sparkcat.spark.executor.kafka_serialisation import column_bytes, value_type_of
    conv = converter_for({"value.converter": "org.apache.kafka.connect.json.JsonConverter"}, False)
    [data] = column_bytes(df.select("value").toArrow().column(0), value_type_of(df.schema["value"]), conv)
    return json.loads(data)


def test_with_schema_timestamp_to_time_whole_value_as_connects_test(spark):
    # TimestampConverterTest.testWithSchemaTimestampToTime: Timestamp DATE_PLUS_TIME -> Time.SCHEMA, TIME
    df = source_batch(spark, converter("Time"), [DATE_PLUS_TIME], "TIMESTAMP")
    assert df.schema["value"].dataType.typeName() == "time"
    assert df.collect()[0]["value"] == TIME
    # Connect's test has a required Timestamp.SCHEMA, so the Time schema is required too
    assert json_envelope(df) == {"schema": {"type": "int32", "optional": False, "name": TIME_TYPE, "version": 1},
                                 "payload": 1234}


def test_with_schema_field_to_time_in_a_struct_and_its_json_schema(spark):
    # the field is replaced by an optional Time, the other fields kept, as Connect's applyWithSchema builds it
    df = source_batch(spark, converter("Time", "ts"), [(DATE_PLUS_TIME, "x")], "STRUCT<ts: TIMESTAMP, other: STRING>")
    assert df.collect()[0]["value"].asDict() == {"ts": TIME, "other": "x"}
    envelope = json_envelope(df)
    assert envelope["schema"]["fields"][0] == {"type": "int32", "optional": True, "name": TIME_TYPE, "version": 1,
                                               "field": "ts"}
    assert envelope["payload"] == {"ts": 1234, "other": "x"}


@pytest.mark.parametrize("target, extra, expected", [
    # TimestampConverterTest.testWithSchemaTimeToTimestamp / ...ToUnix / ...ToString (yyyy MM dd HH mm ss SSS)
    ("Timestamp", {}, dt.datetime(1970, 1, 1, 0, 0, 1, 234000)),
    ("unix", {}, 1234),
    ("Date", {}, dt.date(1970, 1, 1)),
    ("string", {"format": "yyyy MM dd HH mm ss SSS"}, "1970 01 01 00 00 01 234"),
    ("Time", {}, TIME),
])
def test_with_schema_time_as_input_is_that_time_on_the_epoch_day(spark, target, extra, expected):
    [record] = run(spark, converter(target, "t", **extra), [(TIME,)], "STRUCT<t: TIME(3)>")
    got = record["value"]["t"]
    if isinstance(got, dt.datetime):  # the session's wall clock: compare the instant in UTC
        got = dt.datetime.fromtimestamp(got.timestamp(), dt.timezone.utc).replace(tzinfo=None)
    assert got == expected


def test_schemaless_sink_unix_and_string_fields_to_time(spark):
    # testSchemalessUnixToTimestamp's 86401234 and testSchemalessStringToTimestamp's text, targeting Time
    config = {**SCHEMALESS, **converter("Time", "ts")}
    [record], _ = sink_records(spark, config, [(None, {"ts": DATE_PLUS_TIME_UNIX, "n": 1})])
    assert record.value == {"n": 1, "ts": TIME}
    text = {**SCHEMALESS, **converter("Time", "ts", format="yyyy MM dd HH mm ss SSS")}
    [record], _ = sink_records(spark, text, [(None, {"ts": "1970 01 02 00 00 01 234"})])
    assert record.value == {"ts": TIME}
    as_string = {**SCHEMALESS, **converter("string", "ts", format="HH:mm:ss.SSS")}
    [record], _ = sink_records(spark, as_string, [(None, {"ts": DATE_PLUS_TIME_UNIX})])
    assert record.value == {"ts": "00:00:01.234"}  # a Time's string is its format of the instant, in UTC


def test_key_variant_to_time_on_a_sink_key_and_a_source_key(spark):
    # TimestampConverter$Key: the same conversion on the record key, the value untouched
    config = {**SCHEMALESS, **converter("Time", "ts", "$Key")}
    [record], _ = sink_records(spark, config, [({"ts": DATE_PLUS_TIME_UNIX}, {"ts": DATE_PLUS_TIME_UNIX})])
    assert record.key == {"ts": TIME} and record.value == {"ts": DATE_PLUS_TIME_UNIX}
    source = {"transforms": "key,tc", "transforms.key.type": T + "ValueToKey", "transforms.key.fields": "ts",
              "transforms.tc.type": T + "TimestampConverter$Key", "transforms.tc.field": "ts",
              "transforms.tc.target.type": "unix"}
    df = source_batch(spark, source, [(TIME,)], "STRUCT<ts: TIME(3)>")
    assert json.loads(df.collect()[0]["key"]) == {"ts": 1234}


def test_time_target_is_accepted_and_a_bad_target_names_connects_choices():
    assert parse_chain(converter("Time")).stages[0].transform.target == "Time"
    with pytest.raises(ConfigError, match="String must be one of: string, unix, Date, Time, Timestamp"):
        parse_chain(converter("time"))
