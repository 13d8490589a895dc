"""Source records Kafka refuses (spark/source_sends.py): skipped with errors.tolerance=all, fatal otherwise, as Connect.

Real converters, Arrow batches and ``produce_arrow_rows``; the producer is a fake that refuses
records the way librdkafka does (over the topic's limit in a delivery report, over its own
``message.max.bytes`` in ``produce``). The broker round trip is in
tests/integration/runtime/test_source_produce_errors.py.
"""

from __future__ import annotations

import logging

import pyarrow as pa
import pytest
from confluent_kafka import KafkaError, KafkaException
from pyspark.sql import types as T

from sparkcat.converters import converter_for
from sparkcat.spark.executor.batch_results import Tallies
from sparkcat.spark.executor.error_handling import ErrorSettings, RecordErrors
from sparkcat.spark.executor.source_sends import SendFailedError, SourceSends
from sparkcat.spark.executor.source_to_kafka import produce_arrow_rows

STRINGS = {"value.converter": "org.apache.kafka.connect.storage.StringConverter",
           "key.converter": "org.apache.kafka.connect.storage.StringConverter"}
CONVS = (converter_for(STRINGS, True), converter_for(STRINGS, False))


class Message:
    """What librdkafka hands a delivery callback."""

    def __init__(self, topic, key, value, headers=None):
        self._topic, self._key, self._value, self._headers = topic, key, value, headers

    def topic(self):
        return self._topic

    def key(self):
        return self._key

    def value(self):
        return self._value

    def partition(self):
        return 0

    def timestamp(self):
        return 0, 0

    def headers(self):
        return self._headers


class Broker:
    """A producer that refuses in ``produce`` values over ``local_max`` bytes (librdkafka's message.max.bytes)
    and in the delivery report values over ``topic_max`` (the topic's max.message.bytes, checked by the broker)."""

    def __init__(self, topic_max: int = 100, local_max: int = 10_000, transactional: bool = False) -> None:
        self.topic_max, self.local_max, self.transactional = topic_max, local_max, transactional
        self.pending: list[tuple] = []
        self.written: list[bytes] = []

    def produce(self, topic, value, key, partition=-1, on_delivery=None, timestamp=0, headers=None):
        if value is not None and len(value) > self.local_max:
            raise KafkaException(KafkaError(KafkaError.MSG_SIZE_TOO_LARGE, "Message size too large"))
        if self.transactional and any(len(p[2]) > self.topic_max for p in self.pending):  # its transaction failed
            raise KafkaException(KafkaError(KafkaError._STATE, "Unable to produce message: Local: Erroneous state"))
        self.pending.append((topic, key, value, on_delivery, headers))

    def poll(self, timeout=0):
        for topic, key, value, callback, headers in self.pending:
            if len(value) > self.topic_max:
                callback(KafkaError(KafkaError.MSG_SIZE_TOO_LARGE, "Broker: Message size too large"),
                         Message(topic, key, value, headers))
            else:
                self.written.append(value)
        self.pending = []
        return 0

    flush = poll


def rows(values: list[str], tasks: list[int] | None = None) -> pa.RecordBatch:
    n = len(values)
    return pa.RecordBatch.from_pydict({
        "_task": pa.array(tasks or [0] * n, pa.int32()), "_partition": ['{"filename":"/in"}'] * n,
        "_offset": [f'{{"position":{i + 1}}}' for i in range(n)], "topic": ["out"] * n,
        "key": pa.array([None] * n, pa.string()), "value": values, "timestamp_ms": pa.array([None] * n, pa.int64())})


def produce(producer: Broker, batch: pa.RecordBatch, settings: ErrorSettings,
            exactly_once: bool = False) -> tuple[Tallies, RecordErrors, SourceSends]:
    tallies, errors = Tallies(), RecordErrors("src", settings)
    sends = SourceSends("src", errors, tallies, exactly_once=exactly_once)
    produce_arrow_rows(producer, batch, CONVS, T.StringType(), sends, tallies, errors=errors)
    producer.flush()
    sends.raise_error()
    return tallies, errors, sends


BIG = "x" * 200
LOGGED = ErrorSettings(tolerance_all=True, log_enable=True, log_include_messages=True)


def test_with_tolerance_all_a_record_kafka_refuses_is_logged_counted_and_skipped_and_its_offset_still_counts(caplog):
    producer = Broker(topic_max=100)
    with caplog.at_level(logging.ERROR, logger="sparkcat.spark.executor.error_handling"):
        tallies, errors, sends = produce(producer, rows(["a", BIG, "c"]), LOGGED)
    assert producer.written == [b"a", b"c"]
    assert tallies[0].records == 2 and sends.skipped == 1
    assert list(tallies[0].offsets.values()) == [('{"filename":"/in"}', '{"position":3}')]
    counts = errors.counts[0]
    assert (counts.record_failures, counts.record_errors, counts.records_skipped, counts.errors_logged) == (1, 1, 1, 1)
    assert counts.last_error_ms > 0
    [always] = [r for r in caplog.records if r.name == "sparkcat.spark.executor.source_sends"]  # as Connect, log or not
    assert always.getMessage().startswith("Task src-0 failed to send a record to topic 'out' (partition 0, key None, "
                                          "200 bytes, from source partition {\"filename\":\"/in\"} at offset "
                                          "{\"position\":2}); skipped (errors.tolerance=all): KafkaError{")
    [line] = [r for r in caplog.records if r.name == "sparkcat.spark.executor.error_handling"]  # errors.log.enable
    assert line.getMessage() == (
        "Error encountered in task src-0. Executing stage 'KAFKA_PRODUCE' with class "
        "'sparkcat.spark.executor.source_sends:KafkaProduce', where source record is = SourceRecord{sourcePartition="
        "{\"filename\":\"/in\"}, sourceOffset={\"position\":2}} ConnectRecord{topic='out', key=None, "
        "value=<200 bytes>, timestamp=None}.")
    assert "MSG_SIZE_TOO_LARGE" in str(line.exc_info[1])


def test_a_record_refused_before_queueing_is_handled_like_a_failed_delivery():
    producer = Broker(topic_max=10_000, local_max=100)  # librdkafka's own message.max.bytes check
    tallies, errors, _ = produce(producer, rows(["a", BIG, "c", "d"], tasks=[0, 1, 1, 1]),
                                 ErrorSettings(tolerance_all=True))
    assert producer.written == [b"a", b"c", b"d"]
    assert (tallies[0].records, tallies[1].records) == (1, 2)
    assert set(errors.counts) == {1} and errors.counts[1].records_skipped == 1


def test_with_tolerance_none_the_first_refused_record_fails_its_task_naming_topic_key_and_size():
    with pytest.raises(SendFailedError) as info:
        produce(Broker(topic_max=100), rows(["a", BIG, "c"]), ErrorSettings())
    text = str(info.value)
    assert text.startswith("sparkcat task failed: src-0: SendFailedError: Unrecoverable exception from producer "
                           "send callback: the record to topic 'out' (partition 0, key None, 200 bytes) was not "
                           "written: KafkaException: ")
    assert "MSG_SIZE_TOO_LARGE" in text and text.endswith("(errors.tolerance=none)")


def test_a_record_refused_before_queueing_with_tolerance_none_names_its_source_partition_and_offset():
    producer = Broker(local_max=100)
    with pytest.raises(SendFailedError, match=r"the record to topic 'out' \(key None, 200 bytes, from source "
                                              r"partition \{\"filename\":\"/in\"\} at offset \{\"position\":2\}\)"):
        produce(producer, rows(["a", BIG, "c"]), ErrorSettings())
    assert (producer.written, producer.pending) == ([b"a"], [])  # nothing after it was queued


def test_an_exactly_once_task_cannot_skip_a_refused_record_whatever_errors_tolerance_says():
    with pytest.raises(SendFailedError, match="its transaction is aborted, whatever errors.tolerance says"):
        produce(Broker(topic_max=100), rows(["a", BIG]), ErrorSettings(tolerance_all=True), exactly_once=True)
    tallies, errors, _ = produce(Broker(), rows(["a", "b"]), ErrorSettings(tolerance_all=True), exactly_once=True)
    assert tallies[0].records == 2 and errors.counts == {}


def test_a_transaction_that_refuses_later_records_fails_naming_the_record_that_broke_it():
    with pytest.raises(SendFailedError) as info:  # "c" is refused with _STATE because of the big one before it
        produce(Broker(topic_max=100, transactional=True), rows(["a", BIG, "c"]), ErrorSettings(tolerance_all=True),
                exactly_once=True)
    assert "the record to topic 'out' (partition 0, key None, 200 bytes) was not written" in str(info.value)
    assert "MSG_SIZE_TOO_LARGE" in str(info.value) and "_STATE" not in str(info.value)
