"""Converters whose bytes depend on the record's topic (AvroConverter's subject) are told each record's topic."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from pyspark.sql import types as T

from sparkcat.api.converter import Converter
from sparkcat.converters import JsonConverter, StringConverter
from sparkcat.spark.executor.batch_results import Tallies
from sparkcat.spark.executor.error_handling import ErrorSettings, RecordErrors, convert_source_batch
from sparkcat.spark.executor.sink_tasks import _kafka_records


class TopicTagged(Converter):
    """Writes ``topic|text`` and reads it back as (topic it was written for, topic it is read from, text)."""

    def __init__(self) -> None:
        self.topic = ""

    def for_topic(self, topic: str) -> TopicTagged:
        self.topic = topic
        return self

    def to_bytes(self, value: Any, spark_type: T.DataType | None) -> bytes | None:
        if value == "bad":
            raise ValueError("bad value")
        return None if value is None else f"{self.topic}|{value}".encode()

    def from_bytes(self, data: bytes | None) -> Any:
        if data is None:
            return None
        written, text = bytes(data).decode().split("|")
        return (written, self.topic, text)


def source_batch(topics: list[str], values: list[str], keys: list[str | None]) -> pa.RecordBatch:
    n = len(values)
    return pa.RecordBatch.from_pydict({
        "_task": pa.array([0] * n, pa.int32()), "_partition": ['{"p":1}'] * n,
        "_offset": [f'{{"position":{i + 1}}}' for i in range(n)], "topic": topics, "key": keys, "value": values,
        "timestamp_ms": pa.array([None] * n, pa.int64())})


def test_source_rows_of_several_topics_keep_their_order_and_each_its_topic():
    batch = source_batch(["a", "b", "a", "b"], ["1", "2", "3", "4"], [None, '"k"', None, None])
    keys, values, skipped = convert_source_batch(batch, T.StringType(), (TopicTagged(), TopicTagged()),
                                                 RecordErrors.none("src"))
    assert values == [b"a|1", b"b|2", b"a|3", b"b|4"]
    assert keys == [None, b"b|k", None, None] and skipped == []


def test_a_failing_row_is_skipped_and_the_others_keep_their_topics():
    batch = source_batch(["a", "b", "c"], ["1", "bad", "3"], [None, None, None])
    errors = RecordErrors("src", ErrorSettings(tolerance_all=True))
    keys, values, skipped = convert_source_batch(batch, T.StringType(), (StringConverter(), TopicTagged()), errors)
    assert (values, skipped, errors.skipped) == ([b"a|1", b"c|3"], [1], 1)
    assert keys == [None, None]


def test_json_keeps_its_column_path():
    conv = JsonConverter()
    conv.configure({"schemas.enable": "false"}, False)
    _, values, _ = convert_source_batch(source_batch(["a", "b"], ["x", "y"], [None, None]), T.StringType(),
                                        (conv, conv), RecordErrors.none("src"))
    assert values == [b'"x"', b'"y"']


def test_sink_records_are_decoded_with_the_topic_they_were_read_from():
    config = {"key.converter": f"{TopicTagged.__module__}:TopicTagged",
              "value.converter": f"{TopicTagged.__module__}:TopicTagged"}
    cols = {"_task": [0, 0], "topic": ["a", "b"], "partition": [0, 0], "offset": [1, 2],
            "key": [None, b"b|k"], "value": [b"a|1", b"b|2"], "timestamp": [0, 0]}
    groups = _kafka_records(config, False, RecordErrors.none("sink"))(cols, Tallies())
    assert [(r.key, r.value) for r in groups[0]] == [(None, ("a", "a", "1")), (("b", "b", "k"), ("b", "b", "2"))]


def test_after_a_router_the_value_is_decoded_with_the_topic_it_was_read_from():
    from sparkcat.spark.executor.sink_chain import transformed_records
    from sparkcat.spark.executor.sink_decode import ORIGINAL, Side

    config = {"value.converter": f"{TopicTagged.__module__}:TopicTagged"}
    sides = [Side("key", "json"), Side("value", "bytes", decoded=False)]
    cols = {"_task": [0], "topic": ["routed"], "partition": [0], "key": [None], "value": [b"orders|1"],
            "timestamp": [0], ORIGINAL["topic"]: ["orders"], ORIGINAL["partition"]: [0], ORIGINAL["offset"]: [7]}
    groups = transformed_records(config, False, sides, RecordErrors.none("sink"))(cols, Tallies())
    [record] = groups[0]
    assert (record.topic, record.value) == ("routed", ("orders", "orders", "1"))
