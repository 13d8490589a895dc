"""Bad records on executors (spark/error_handling.py): skipped or failing, logged, dead-lettered as Connect does.

Real converters and Arrow batches; the dead letter queue's producer is a recording fake (the
broker round trip is in tests/integration/runtime/test_dead_letter_queue.py).
"""

from __future__ import annotations

import logging

import pyarrow as pa
import pytest

from sparkcat.errors import ConfigError
from pyspark.sql import types as T

from sparkcat.converters import converter_for
from sparkcat.kafka.dead_letter_queue import DeadLetterQueue
from sparkcat.spark.executor.batch_results import Tallies
from sparkcat.spark.executor.error_handling import (
    ConsumedRecord,
    ErrorSettings,
    LogReporter,
    RecordErrors,
    SourceRow,
    ToleranceExceededError,
    convert_source_batch,
    without_rows,
)
from sparkcat.spark.executor.sink_tasks import _kafka_records

JSON_PLAIN = {"value.converter.schemas.enable": "false", "key.converter": "string"}
ASCII = {"value.converter": "org.apache.kafka.connect.storage.StringConverter",
         "value.converter.encoding": "US-ASCII"}


class RecordingProducer:
    """What a confluent-kafka Producer is asked to do, kept (delivery always succeeds)."""

    def __init__(self) -> None:
        self.records: list[dict] = []
        self.flushes = 0

    def produce(self, topic, value, key, headers=None, timestamp=0, on_delivery=None):
        self.records.append({"topic": topic, "key": key, "value": value, "headers": headers or [],
                             "timestamp": timestamp})

    def flush(self, timeout=None):
        self.flushes += 1
        return 0


def dead_letters(with_context: bool = True) -> tuple[DeadLetterQueue, RecordingProducer]:
    dlq = DeadLetterQueue("dlq", {"bootstrap.servers": "unused:9092"}, with_context)
    producer = dlq._producer = RecordingProducer()
    return dlq, producer


def kafka_cols(values: list[bytes | None]) -> dict[str, list]:
    """Columns of Kafka rows (as ``batch_results.columns`` gives them): task 1, topic t, partition 2, offsets 5.."""
    n = len(values)
    return {"_task": [1] * n, "topic": ["t"] * n, "partition": [2] * n, "offset": list(range(5, 5 + n)),
            "key": [b"k%d" % i for i in range(n)], "value": values,
            "timestamp": [1_700_000_000_000 + i for i in range(n)],
            "headers": [[{"key": "h", "value": b"x"}]] * n}


POISON = [b'{"a":1}', b"not json", b'{"a":3}']


def test_a_record_that_fails_conversion_is_skipped_dead_lettered_with_connect_headers_and_still_consumed():
    dlq, producer = dead_letters()
    errors = RecordErrors("conn", ErrorSettings(tolerance_all=True, dlq_topic="dlq", dlq_context_headers=True),
                          dlq=dlq)
    tallies = Tallies()
    groups = _kafka_records(JSON_PLAIN, False, errors)(kafka_cols(POISON), tallies)
    assert [r.value for r in groups[1]] == [{"a": 1}, {"a": 3}]
    assert tallies[1].records == 2
    assert tallies[1].offsets["t:2"][1] == {"kafka_offset": 8}  # the poison record counts as consumed
    assert errors.skipped == 1
    [letter] = producer.records
    assert (letter["topic"], letter["key"], letter["value"], letter["timestamp"]) == \
        ("dlq", b"k1", b"not json", 1_700_000_000_001)
    headers = dict(letter["headers"])
    assert letter["headers"][0] == ("h", b"x")  # the original headers first
    assert {k: v for k, v in headers.items() if k != "__connect.errors.exception.stacktrace"} == {
        "h": b"x",
        "__connect.errors.topic": b"t", "__connect.errors.partition": b"2", "__connect.errors.offset": b"6",
        "__connect.errors.connector.name": b"conn", "__connect.errors.task.id": b"1",
        "__connect.errors.stage": b"VALUE_CONVERTER",
        "__connect.errors.class.name": b"sparkcat.converters.builtins:JsonConverter",
        "__connect.errors.exception.class.name": b"ValueError",
        "__connect.errors.exception.message":
            headers["__connect.errors.exception.message"]}
    assert headers["__connect.errors.exception.message"].startswith(
        b"Converting byte[] to Kafka Connect data failed due to serialization error")
    assert b"Traceback" in headers["__connect.errors.exception.stacktrace"]
    errors.flush()
    assert producer.flushes == 1


def test_without_context_headers_the_dead_letter_keeps_only_its_own_headers():
    dlq, producer = dead_letters(with_context=False)
    errors = RecordErrors("conn", ErrorSettings(tolerance_all=True, dlq_topic="dlq"), dlq=dlq)
    _kafka_records(JSON_PLAIN, False, errors)(kafka_cols(POISON), Tallies())
    assert producer.records[0]["headers"] == [("h", b"x")]


def test_a_key_that_fails_is_reported_at_the_key_converter_stage():
    dlq, producer = dead_letters()
    errors = RecordErrors("conn", ErrorSettings(tolerance_all=True, dlq_topic="dlq", dlq_context_headers=True),
                          dlq=dlq)
    cols = kafka_cols([b'{"a":1}'])
    cols["key"] = [b"not json"]
    groups = _kafka_records({"value.converter.schemas.enable": "false", "key.converter.schemas.enable": "false"},
                            False, errors)(cols, Tallies())
    assert groups == {1: []}
    assert dict(producer.records[0]["headers"])["__connect.errors.stage"] == b"KEY_CONVERTER"


def test_with_tolerance_none_the_task_fails_naming_the_record_after_dead_lettering_it():
    dlq, producer = dead_letters()
    errors = RecordErrors("conn", ErrorSettings(dlq_topic="dlq"), dlq=dlq)
    with pytest.raises(ToleranceExceededError) as info:
        _kafka_records(JSON_PLAIN, False, errors)(kafka_cols(POISON), Tallies())
    text = str(info.value)
    assert text.startswith("sparkcat task failed: conn-1: ToleranceExceededError: Tolerance exceeded in error "
                           "handler. Executing stage 'VALUE_CONVERTER' with class "
                           "'sparkcat.converters.builtins:JsonConverter', where consumed record is {topic='t', "
                           "partition=2, offset=6, timestamp=1700000000001}.")
    assert "Caused by: ValueError: Converting byte[] to Kafka Connect data failed" in text
    assert [r["value"] for r in producer.records] == [b"not json"] and producer.flushes == 1


def test_the_default_settings_fail_on_the_first_bad_record_without_logging(caplog):
    errors = RecordErrors.none("conn")
    with caplog.at_level(logging.DEBUG, logger="sparkcat.spark.executor.error_handling"), \
            pytest.raises(ToleranceExceededError, match=r"conn-1: .*offset=6"):
        _kafka_records(JSON_PLAIN, False, errors)(kafka_cols(POISON), Tallies())
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


@pytest.mark.parametrize("include", [False, True])
def test_the_error_log_has_one_line_per_failure_with_the_record_only_when_asked(caplog, include):
    errors = RecordErrors("conn", ErrorSettings(tolerance_all=True, log_enable=True, log_include_messages=include))
    with caplog.at_level(logging.ERROR, logger="sparkcat.spark.executor.error_handling"):
        _kafka_records(JSON_PLAIN, False, errors)(kafka_cols([b"bad1", b"{}", b"bad2"]), Tallies())
    lines = [r for r in caplog.records if r.name == "sparkcat.spark.executor.error_handling"]
    assert len(lines) == 2
    assert all(r.levelno == logging.ERROR and r.exc_info for r in lines)
    prefix = ("Error encountered in task conn-1. Executing stage 'VALUE_CONVERTER' with class "
              "'sparkcat.converters.builtins:JsonConverter'")
    if include:
        assert lines[1].getMessage() == prefix + (", where consumed record is {topic='t', partition=2, offset=7, "
                                                  "timestamp=1700000000002}.")
    else:
        assert [r.getMessage() for r in lines] == [prefix + "."] * 2


def test_a_source_records_log_line_shows_the_record_only_with_include_messages():
    row = SourceRow('{"filename":"/in"}', '{"position":9}', "out", None, "bad é", 5)
    from sparkcat.kafka.dead_letter_queue import ErrorOrigin
    origin = ErrorOrigin("src", 0, "VALUE_CONVERTER", "m:C", UnicodeEncodeError("ascii", "é", 0, 1, "x"))
    assert LogReporter(False).message(origin, row) == \
        "Error encountered in task src-0. Executing stage 'VALUE_CONVERTER' with class 'm:C'."
    assert LogReporter(True).message(origin, row) == (
        "Error encountered in task src-0. Executing stage 'VALUE_CONVERTER' with class 'm:C', where source record "
        "is = SourceRecord{sourcePartition={\"filename\":\"/in\"}, sourceOffset={\"position\":9}} "
        "ConnectRecord{topic='out', key=None, value='bad é', timestamp=5}.")


# ---------------------------------------------------------------- source rows


def source_batch(values: list[str]) -> pa.RecordBatch:
    n = len(values)
    return pa.RecordBatch.from_pydict({
        "_task": pa.array([0] * (n - 1) + [1], pa.int32()), "_partition": ['{"filename":"/in"}'] * n,
        "_offset": [f'{{"position":{i + 1}}}' for i in range(n)], "topic": ["out"] * n,
        "key": [None, '"k"'] + [None] * (n - 2), "value": values, "timestamp_ms": pa.array([None] * n, pa.int64())})


def source_convs(config: dict) -> tuple:
    return converter_for(config, True), converter_for(config, False)


def test_source_rows_convert_whole_when_all_succeed():
    errors = RecordErrors("src", ErrorSettings(tolerance_all=True))
    keys, values, skipped = convert_source_batch(source_batch(["a", "b", "c"]), T.StringType(), source_convs(ASCII),
                                                 errors)
    assert (keys, values, skipped) == ([None, b'{"schema":null,"payload":"k"}', None],
                                       [b"a", b"b", b"c"], [])


def test_a_source_row_that_fails_is_dead_lettered_as_json_without_kafka_coordinates():
    dlq, producer = dead_letters()
    errors = RecordErrors("src", ErrorSettings(tolerance_all=True, dlq_topic="dlq", dlq_context_headers=True),
                          dlq=dlq)
    keys, values, skipped = convert_source_batch(source_batch(["a", "b é", "c", "d"]), T.StringType(),
                                                 source_convs(ASCII), errors)
    assert values == [b"a", b"c", b"d"] and len(keys) == 3 and skipped == [1]
    assert without_rows(["t0", "t1", "t2", "t3"], skipped) == ["t0", "t2", "t3"]
    assert without_rows("one topic", skipped) == "one topic"
    [letter] = producer.records
    assert (letter["key"], letter["value"]) == (b'"k"', '"b é"'.encode())
    headers = dict(letter["headers"])
    assert "__connect.errors.topic" not in headers and "__connect.errors.offset" not in headers
    assert headers["__connect.errors.stage"] == b"VALUE_CONVERTER"
    assert headers["__connect.errors.task.id"] == b"0"
    assert headers["__connect.errors.exception.class.name"] == b"UnicodeEncodeError"
    assert headers["__connect.errors.class.name"] == b"sparkcat.converters.builtins:StringConverter"


def test_a_failing_source_row_with_tolerance_none_names_its_source_partition_and_offset():
    errors = RecordErrors.none("src")
    with pytest.raises(ToleranceExceededError) as info:
        convert_source_batch(source_batch(["a", "b", "c é"]), T.StringType(), source_convs(ASCII), errors)
    assert "sparkcat task failed: src-1: ToleranceExceededError: Tolerance exceeded in error handler." \
        in str(info.value)
    assert ('where source record is {sourcePartition={"filename":"/in"}, sourceOffset={"position":3}, '
            "topic='out'}") in str(info.value)
    assert "é" not in str(info.value).split("Caused by")[0]  # coordinates only, never the record itself


def test_consumed_record_names_its_timestamp_type_when_known_and_no_timestamp_when_absent():
    record = ConsumedRecord("t", 0, 3, None, b"x", [], None)
    assert record.coordinates() == ", where consumed record is {topic='t', partition=0, offset=3}"
    assert record.dead_letter() == (None, b"x", [], None)
    assert ConsumedRecord("t", 0, 3, None, None, [], 5, 1).coordinates() == \
        ", where consumed record is {topic='t', partition=0, offset=3, timestamp=5, timestampType=LogAppendTime}"


def test_settings_default_as_connect_and_parse_its_spellings():
    assert ErrorSettings.of({}) == ErrorSettings(False, False, False, "", 3, False)
    # parsed by the framework's ConfigDef: Connect's boolean spellings, its validator's values
    assert ErrorSettings.of({"errors.tolerance": "all", "errors.log.enable": "TRUE",
                             "errors.log.include.messages": "true", "errors.deadletterqueue.topic.name": " d ",
                             "errors.deadletterqueue.topic.replication.factor": "1",
                             "errors.deadletterqueue.context.headers.enable": "true"}) == \
        ErrorSettings(True, True, True, "d", 1, True)
    with pytest.raises(ConfigError) as raised:  # never taken as "none" in silence
        ErrorSettings.of({"errors.tolerance": "some"})
    assert "errors.tolerance" in raised.value.errors


class FailingProducer(RecordingProducer):
    """Every delivery fails (as librdkafka reports it to the callback, while flushing)."""

    def produce(self, topic, value, key, headers=None, timestamp=0, on_delivery=None):
        super().produce(topic, value, key, headers, timestamp)
        self.callback = on_delivery

    def flush(self, timeout=None):
        self.callback("KafkaError{code=TOPIC_AUTHORIZATION_FAILED}", None)
        return 0


def test_a_dead_letter_that_is_not_delivered_fails_the_batch_naming_the_topic():
    from sparkcat.kafka.dead_letter_queue import DeadLetterQueueError
    dlq = DeadLetterQueue("dlq", {"bootstrap.servers": "unused:9092"}, True)
    dlq._producer = FailingProducer()
    errors = RecordErrors("conn", ErrorSettings(tolerance_all=True, dlq_topic="dlq"), dlq=dlq)
    _kafka_records(JSON_PLAIN, False, errors)(kafka_cols(POISON), Tallies())
    with pytest.raises(DeadLetterQueueError, match="Could not produce message to dead letter queue. topic=dlq: "
                                                   "KafkaError{code=TOPIC_AUTHORIZATION_FAILED}"):
        errors.flush()


def test_each_failed_record_is_counted_as_connects_error_handling_metrics_count_it():
    from sparkcat.model.error_metrics import ErrorCounts
    dlq, _ = dead_letters()
    errors = RecordErrors("conn", ErrorSettings(tolerance_all=True, log_enable=True, dlq_topic="dlq"), dlq=dlq)
    _kafka_records(JSON_PLAIN, False, errors)(kafka_cols(POISON + [b"nor this"]), Tallies())
    counts = errors.counts[1]
    assert counts.last_error_ms > 0
    assert counts == ErrorCounts(record_failures=2, record_errors=2, records_skipped=2, errors_logged=2,
                                 dlq_produce_requests=2, last_error_ms=counts.last_error_ms)
    strict = RecordErrors("conn", ErrorSettings())  # none: counted, not skipped, and the task fails
    with pytest.raises(ToleranceExceededError):
        _kafka_records(JSON_PLAIN, False, strict)(kafka_cols(POISON), Tallies())
    assert (strict.counts[1].record_errors, strict.counts[1].records_skipped) == (1, 0)
