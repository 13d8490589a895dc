"""JsonConverter and Connect's Time logical type: a Spark TIME is ``int32`` named ``...data.Time``, ms since midnight."""

from __future__ import annotations

import datetime as dt
import json

from pyspark.sql import types as T

from sparkcat.converters import JsonConverter

TIME = "org.apache.kafka.connect.data.Time"


def test_a_time_is_written_as_connects_time_schema_and_millis_since_midnight():
    conv = JsonConverter()
    conv.configure({}, False)
    value_type = T.StructType([T.StructField("t", T.TimeType(3), True)])
    written = json.loads(conv.to_bytes({"t": dt.time(13, 5, 7, 250000)}, value_type))
    # Connect's JsonConverter.asJsonSchema key order for a logical type: type, optional, name, version
    assert written["schema"]["fields"] == [{"type": "int32", "optional": True, "name": TIME, "version": 1,
                                            "field": "t"}]
    assert list(written["schema"]["fields"][0]) == ["type", "optional", "name", "version", "field"]
    assert written["payload"] == {"t": 47107250}


def test_a_time_envelope_reads_back_as_a_time_of_day():
    conv = JsonConverter()
    conv.configure({}, False)
    data = json.dumps({"schema": {"type": "int32", "optional": False, "name": TIME, "version": 1},
                       "payload": 47107250}).encode()
    assert conv.from_bytes(data) == dt.time(13, 5, 7, 250000)
