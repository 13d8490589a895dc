"""Poison records end to end: a real broker, the driver, its herder and Spark queries.

With ``errors.tolerance=all`` a record that fails conversion lands in the dead letter queue
topic (created with one partition) with its original bytes and Connect's ``__connect.errors.*``
headers, and every other record is delivered; with ``none`` the task is FAILED and its trace
names the record (topic/partition/offset, or source partition/offset). Sink connectors as in
Connect; source connectors' dead letter queue is sparkcat's extension.

An exactly-once source task whose record Kafka refuses fails whatever ``errors.tolerance`` says
(Connect's ``ExactlyOnceWorkerSourceTask``), and every reported record shows in its task's error
metrics (Connect's ``ErrorHandlingMetrics``, ``/metrics``).

One driver runs the six connectors at once (each test checks its own), to start Spark once.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient

from sparkcat.bootstrap import Driver
from sparkcat.rest import metrics
from sparkcat.config.worker import WorkerConfig
from tests.integration.runtime.test_source_produce_errors import LINES, SMALL_BATCHES, create_limited_topic
from tests.kafka_helpers import create_topic, read_topic, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

JSON_VALUES = {"value.converter": "org.apache.kafka.connect.json.JsonConverter",
               "value.converter.schemas.enable": "false",
               "key.converter": "org.apache.kafka.connect.storage.StringConverter"}
ASCII_VALUES = {"value.converter": "org.apache.kafka.connect.storage.StringConverter",
                "value.converter.encoding": "US-ASCII"}
DLQ = {"errors.tolerance": "all", "errors.deadletterqueue.topic.replication.factor": "1",
       "errors.deadletterqueue.context.headers.enable": "true", "errors.log.enable": "true",
       "errors.log.include.messages": "true"}
SOURCE_LINES = ["a0", "b é", "c2", "d3"]  # "b é" is not US-ASCII; it ends at byte 8 of the file


@dataclass
class Run:
    driver: Driver
    bootstrap: str
    name: str
    dir: Path

    def topic(self, suffix: str) -> str:
        return f"{self.name}-{suffix}"

    def task(self, connector: str) -> dict:
        return self.driver.herder.connector_status(connector)["tasks"][0]

    def errors(self, connector: str):
        """Task 0's error handling counters on the driver (None before its first batch)."""
        progress = dict(self.driver.herder.connector_progress()).get(connector)
        return None if progress is None else progress.task_errors.get(0)


def read_records(bootstrap: str, topic: str) -> list[dict]:
    """Every record of ``topic`` with its key, value and headers (read to the end of each partition)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"test-{uuid.uuid4().hex}",
                  "enable.partition.eof": True, "isolation.level": "read_committed"})
    try:
        parts = sorted(c.list_topics(topic, timeout=10).topics[topic].partitions)
        c.assign([TopicPartition(topic, p, 0) for p in parts])
        pending, out = set(parts), []
        while pending:
            msg = c.poll(10)
            assert msg is not None, f"no end of {topic} within 10 s"
            if msg.error():
                assert msg.error().code() == KafkaError._PARTITION_EOF, msg.error()
                pending.discard(msg.partition())
                continue
            out.append({"key": msg.key(), "value": msg.value(), "headers": msg.headers() or [],
                        "timestamp": msg.timestamp()[1]})
        return out
    finally:
        c.close()


def poison_topic(run: Run, suffix: str, bad_at: int, n: int) -> str:
    """A topic of ``n`` JSON records ``{"n": i}``, key ``k{i}``, where record ``bad_at`` is not JSON."""
    from confluent_kafka import Producer
    topic = run.topic(suffix)
    create_topic(run.bootstrap, topic)
    producer = Producer({"bootstrap.servers": run.bootstrap})
    for i in range(n):
        value = b"not json" if i == bad_at else json.dumps({"n": i}).encode()
        producer.produce(topic, value, f"k{i}".encode(), headers=[("origin", b"test")], timestamp=1_700_000_000_000 + i)
    assert producer.flush(30) == 0
    return topic


@pytest.fixture(scope="module")
def run(spark, broker, tmp_path_factory) -> Iterator[Run]:
    name = f"t-{uuid.uuid4().hex[:10]}"
    work = tmp_path_factory.mktemp("dlq")
    worker = WorkerConfig(state_dir=str(work / "state"), bootstrap_servers=broker.bootstrap,
                          config_topic=f"{name}-configs", offset_topic=f"{name}-offsets", status_topic=f"{name}-status",
                          file_allowed_dirs=[str(work)])
    driver = Driver(spark, worker, rest=False, watch_pipelines=False)
    driver.start()
    r = Run(driver, broker.bootstrap, name, work)
    (work / "in.txt").write_text("".join(line + "\n" for line in SOURCE_LINES), encoding="utf-8")
    put = driver.herder.put_connector_config
    try:
        put("sink-all", {"connector.class": "file-sink", "file": str(work / "all.txt"), **JSON_VALUES, **DLQ,
                         "topics": poison_topic(r, "in-all", 3, 6), "trigger.interval.ms": "300",
                         "errors.deadletterqueue.topic.name": r.topic("sink-dlq")})
        put("sink-none", {"connector.class": "file-sink", "file": str(work / "none.txt"), **JSON_VALUES,
                          "topics": poison_topic(r, "in-none", 1, 3), "trigger.interval.ms": "300"})
        put("source-all", {"connector.class": "file-source", "file": str(work / "in.txt"), **ASCII_VALUES, **DLQ,
                           "topic": r.topic("lines-all"), "trigger.interval.ms": "300",
                           "errors.deadletterqueue.topic.name": r.topic("source-dlq")})
        put("dlq-rf3", {"connector.class": "file-sink", "file": str(work / "rf3.txt"), **JSON_VALUES,
                        "topics": r.topic("in-none"), "errors.tolerance": "all",
                        "errors.deadletterqueue.topic.name": r.topic("rf3-dlq")})  # default factor 3, one broker
        put("source-none", {"connector.class": "file-source", "file": str(work / "in.txt"), **ASCII_VALUES,
                            "topic": r.topic("lines-none"), "trigger.interval.ms": "300"})
        (work / "big.txt").write_text("".join(line + "\n" for line in LINES), encoding="ascii")
        create_limited_topic(r.bootstrap, r.topic("big-eos"))
        put("source-eos-big", {"connector.class": "file-source", "file": str(work / "big.txt"),
                               "topic": r.topic("big-eos"), "errors.tolerance": "all", **SMALL_BATCHES})
        yield r
    finally:
        driver.stop()


def context(headers: list[tuple[str, bytes]]) -> dict[str, str]:
    return {k[len("__connect.errors."):]: v.decode() for k, v in headers if k.startswith("__connect.errors.")}


def test_sink_poison_record_goes_to_the_dlq_with_connect_context_headers_and_the_rest_is_delivered(run):
    out = run.dir / "all.txt"
    wait_until(lambda: out.exists() and len(out.read_text().splitlines()) == 5, message="the 5 good records")
    assert out.read_text().splitlines() == [f'{{"n":{i}}}' for i in (0, 1, 2, 4, 5)]
    dlq = run.topic("sink-dlq")
    wait_until(lambda: read_topic(run.bootstrap, dlq), message="the dead letter")
    [letter] = read_records(run.bootstrap, dlq)
    assert (letter["key"], letter["value"], letter["timestamp"]) == (b"k3", b"not json", 1_700_000_000_003)
    assert letter["headers"][0] == ("origin", b"test")
    headers = context(letter["headers"])
    assert {k: headers[k] for k in ("topic", "partition", "offset", "connector.name", "task.id", "stage",
                                    "class.name", "exception.class.name")} == {
        "topic": run.topic("in-all"), "partition": "0", "offset": "3", "connector.name": "sink-all",
        "task.id": "0", "stage": "VALUE_CONVERTER", "class.name": "sparkcat.converters.builtins:JsonConverter",
        "exception.class.name": "ValueError"}
    assert headers["exception.message"].startswith("Converting byte[] to Kafka Connect data failed")
    assert "Traceback (most recent call last)" in headers["exception.stacktrace"]
    partitions = AdminClient({"bootstrap.servers": run.bootstrap}).list_topics(dlq, timeout=10).topics[dlq].partitions
    assert len(partitions) == 1  # created by the connector, as Connect does
    assert run.task("sink-all")["state"] == "RUNNING"


def test_sink_poison_record_with_tolerance_none_fails_the_task_naming_topic_partition_offset(run):
    wait_until(lambda: run.task("sink-none")["state"] == "FAILED", message="sink-none's task FAILED")
    trace = run.task("sink-none")["trace"]
    assert "Tolerance exceeded in error handler" in trace
    assert f"where consumed record is {{topic='{run.topic('in-none')}', partition=0, offset=1, " \
        f"timestamp=1700000000001}}" in trace
    assert "Converting byte[] to Kafka Connect data failed" in trace


def test_source_record_that_fails_conversion_goes_to_the_dlq_and_the_others_to_kafka(run):
    lines = run.topic("lines-all")
    wait_until(lambda: len(read_topic(run.bootstrap, lines)) == 3, message="the 3 convertible lines")
    assert [v for *_, v in sorted(read_topic(run.bootstrap, lines))] == [b"a0", b"c2", b"d3"]
    dlq = run.topic("source-dlq")
    wait_until(lambda: read_topic(run.bootstrap, dlq), message="the dead letter")
    [letter] = read_records(run.bootstrap, dlq)
    assert (letter["key"], letter["value"]) == (None, '"b é"'.encode())  # JSON of the value: it is not bytes yet
    headers = context(letter["headers"])
    assert "topic" not in headers and "offset" not in headers  # nothing was consumed
    assert (headers["connector.name"], headers["task.id"], headers["stage"], headers["exception.class.name"]) == \
        ("source-all", "0", "VALUE_CONVERTER", "UnicodeEncodeError")
    assert run.task("source-all")["state"] == "RUNNING"


def test_source_record_with_tolerance_none_fails_the_task_naming_source_partition_and_offset(run):
    wait_until(lambda: run.task("source-none")["state"] == "FAILED", message="source-none's task FAILED")
    trace = run.task("source-none")["trace"]
    assert "Tolerance exceeded in error handler" in trace
    path = json.dumps(str(run.dir / "in.txt"))
    assert f'where source record is {{sourcePartition={{"filename":{path}}}, sourceOffset={{"position":8}}' in trace


def test_a_dlq_topic_that_cannot_be_created_fails_the_tasks_as_connect_does(run):
    # Connect builds the reporter when it starts a task: the task fails with the reason, the connector runs.
    def failed_traces() -> list[str] | None:
        status = run.driver.herder.connector_status("dlq-rf3")
        tasks = status["tasks"]
        if tasks and all(t["state"] == "FAILED" for t in tasks):
            assert status["connector"]["state"] == "RUNNING"
            return [t["trace"] for t in tasks]
        return None

    traces = wait_until(failed_traces, message="dlq-rf3's tasks FAILED")
    assert len(set(traces)) == 1
    trace = traces[0]
    assert f"Could not initialize dead letter queue with topic={run.topic('rf3-dlq')}" in trace
    assert "replication factor" in trace.lower()


def test_an_exactly_once_source_task_fails_on_a_record_kafka_refuses_whatever_errors_tolerance_says(run):
    def state() -> str | None:
        tasks = run.driver.herder.connector_status("source-eos-big")["tasks"]
        return tasks[0]["state"] if tasks else None

    wait_until(lambda: state() == "FAILED", message="source-eos-big's task FAILED")
    trace = run.task("source-eos-big")["trace"]
    assert "Unrecoverable exception from producer send callback" in trace
    assert f"the record to topic '{run.topic('big-eos')}'" in trace
    assert "its transaction is aborted, whatever errors.tolerance says" in trace
    assert read_topic(run.bootstrap, run.topic("big-eos")) == []  # the lines before it were in the aborted transaction


def test_every_reported_record_shows_in_its_tasks_error_metrics(run):
    for connector in ("sink-all", "source-all"):
        counts = wait_until(lambda c=connector: run.errors(c), message=f"{connector}'s error counters")
        assert (counts.record_failures, counts.record_errors, counts.records_skipped, counts.errors_logged,
                counts.dlq_produce_requests, counts.dlq_produce_failures) == (1, 1, 1, 1, 1, 0), connector
        assert counts.last_error_ms > 0
    text = metrics.render(run.driver.herder.connector_progress(), [])
    assert 'sparkcat_task_deadletterqueue_produce_requests{connector="sink-all",task="0"} 1.0' in text
    assert 'sparkcat_task_total_records_skipped{connector="source-all",task="0"} 1.0' in text
    # the same counters under Connect's task-error-metrics names, as the JMX exporter shows Connect's
    assert 'kafka_connect_task_error_deadletterqueue_produce_requests{connector="sink-all",task="0"} 1.0' in text
    assert 'kafka_connect_task_error_total_records_skipped{connector="source-all",task="0"} 1.0' in text
    assert 'kafka_connect_task_error_total_errors_logged{connector="sink-all",task="0"} 1.0' in text
