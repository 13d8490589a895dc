"""Java source connectors from ``plugin.path`` run as Spark tasks: Apache Kafka's own FileStreamSourceConnector
(connect-file 4.1.1, in a plugin directory of its own) through a real broker, as a Connect user runs it.

The worker writes at least once (``exactly.once.source.support=disabled``). Each test uses its own topics and files.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from sparkcat.bootstrap import Driver
from sparkcat.config.worker import WorkerConfig
from sparkcat.errors import NotFoundError
from sparkcat.model.config_state import TargetState
from tests.java_plugins import INCREMENT_CONNECTOR, build_increment_plugin, connect_file_plugin
from tests.kafka_helpers import create_topic, produce, read_topic, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
STRINGS = "org.apache.kafka.connect.storage.StringConverter"


@dataclass
class Run:
    driver: Driver
    bootstrap: str
    name: str
    dir: Path

    def wait_running(self, connector: str) -> dict:
        def running() -> bool:
            status = self.driver.herder.connector_status(connector)
            return bool(status["tasks"]) and all(t["state"] == "RUNNING" for t in status["tasks"])
        wait_until(running, timeout_s=120, message=f"{connector}'s tasks to run")
        return self.driver.herder.connector_status(connector)


@pytest.fixture(scope="module")
def run(spark, broker, tmp_path_factory) -> Iterator[Run]:
    name = f"j-{uuid.uuid4().hex[:10]}"
    work = tmp_path_factory.mktemp("java-source")
    plugins = build_increment_plugin(connect_file_plugin(work / "plugins"), work)
    worker = WorkerConfig(state_dir=str(work / "state"), bootstrap_servers=broker.bootstrap,
                          config_topic=f"{name}-configs", offset_topic=f"{name}-offsets", status_topic=f"{name}-status",
                          file_allowed_dirs=[str(work)], exactly_once_source_support="disabled",
                          plugin_path=[str(plugins)], plugin_discovery="service_load")
    driver = Driver(spark, worker, rest=False, watch_pipelines=False)
    driver.start()
    try:
        yield Run(driver, broker.bootstrap, name, work)
    finally:
        driver.stop()


def test_file_stream_source_lines_reach_kafka_with_connect_offsets(run):
    topic, source = f"{run.name}-lines", run.dir / "lines.txt"
    create_topic(run.bootstrap, topic)
    source.write_text("".join(f"line {i}\n" for i in range(500)), encoding="utf-8")
    run.driver.herder.put_connector_config("java-file", {
        "connector.class": FILE_SOURCE, "file": str(source), "topic": topic, "tasks.max": "1",
        "value.converter": STRINGS, "key.converter": STRINGS, "trigger.interval.ms": "300"})
    status = run.wait_running("java-file")
    assert status["type"] == "source"
    wait_until(lambda: len(read_topic(run.bootstrap, topic, timeout_s=10)) >= 500, timeout_s=120,
               message="500 lines in Kafka")
    with source.open("a", encoding="utf-8") as f:  # the running task picks up what is appended
        f.write("".join(f"line {i}\n" for i in range(500, 600)))
    wait_until(lambda: len(read_topic(run.bootstrap, topic, timeout_s=10)) >= 600, timeout_s=120,
               message="600 lines in Kafka")
    values = [v.decode() for _, _, _, v in read_topic(run.bootstrap, topic)]
    assert values == [f"line {i}" for i in range(600)]
    # The offsets, as Connect's FileStreamSource keeps them: {"filename"} -> {"position": bytes read}
    size = source.stat().st_size
    wait_until(lambda: run.driver.herder.connector_offsets("java-file") == [({"filename": str(source)},
                                                                             {"position": size})],
               timeout_s=60, message="the file's size as the stored position")


def _sequence(run: Run, topic: str) -> list[int]:
    return [int(v) for _, _, _, v in read_topic(run.bootstrap, topic, timeout_s=10)]


def _task_state(run: Run, connector: str, task: int) -> str | None:
    try:
        return run.driver.herder.task_status(connector, task)["state"]
    except NotFoundError:  # its task configs are not committed yet
        return None


def _stopped(run: Run, connector: str) -> None:
    """Connect's STOPPED: the query ends after its batch in flight, whose offsets are stored first."""
    run.driver.herder.set_target_state(connector, TargetState.STOPPED)
    wait_until(lambda: connector not in run.driver.herder.running_connectors(), timeout_s=120,
               message=f"{connector}'s query to stop")


def test_the_tutorials_java_increment_source_resumes_every_partition_when_tasks_max_changes(run):
    prefix = f"{run.name}-seq-"
    for k in (1, 100):
        create_topic(run.bootstrap, f"{prefix}{k}")
    config = {"connector.class": INCREMENT_CONNECTOR, "increments": "1,100", "topic.prefix": prefix,
              "tasks.max": "1", "records.per.poll": "50", "poll.interval.ms": "20",
              "value.converter": STRINGS, "trigger.interval.ms": "300"}
    run.driver.herder.put_connector_config("java-inc", config)
    assert len(run.wait_running("java-inc")["tasks"]) == 1
    wait_until(lambda: min(len(_sequence(run, f"{prefix}{k}")) for k in (1, 100)) >= 300, timeout_s=120,
               message="300 records of each increment with one task")
    run.driver.herder.put_connector_config("java-inc", {**config, "tasks.max": "2"})
    wait_until(lambda: len(run.driver.herder.task_configs("java-inc")) == 2, timeout_s=60, message="two task configs")
    run.wait_running("java-inc")
    before = {k: len(_sequence(run, f"{prefix}{k}")) for k in (1, 100)}
    wait_until(lambda: all(len(_sequence(run, f"{prefix}{k}")) >= before[k] + 300 for k in (1, 100)), timeout_s=120,
               message="300 more records of each increment with two tasks")
    _stopped(run, "java-inc")
    stored = dict((p["increment"], o["position"]) for p, o in run.driver.herder.connector_offsets("java-inc"))
    for k in (1, 100):
        values = _sequence(run, f"{prefix}{k}")
        assert values == [(p - 1) * k for p in range(1, len(values) + 1)]  # no gap, no duplicate
        assert stored[k] == len(values)  # Connect's offsets: {"increment": k} -> {"position": records written}


def test_a_failing_java_task_is_failed_with_its_java_trace_and_resumes_from_its_stored_offset_on_restart(run):
    topic = f"{run.name}-fail-7"
    create_topic(run.bootstrap, topic)
    config = {"connector.class": INCREMENT_CONNECTOR, "increments": "7", "topic.prefix": f"{run.name}-fail-",
              "records.per.poll": "10", "poll.interval.ms": "20", "fail.at.position": "215", "batch.max.records": "50",
              "value.converter": STRINGS, "trigger.interval.ms": "300"}
    run.driver.herder.put_connector_config("java-fail", config)
    wait_until(lambda: _task_state(run, "java-fail", 0) == "FAILED", timeout_s=120,
               message="the task to fail at position 215")
    trace = run.driver.herder.task_status("java-fail", 0)["trace"]
    assert "ConnectException: increment 7 reached position 215" in trace
    assert "at org.sparkcat.tests.increment.IncrementSourceTask.poll(IncrementSourceTask.java" in trace
    # Batches of 50 (polls of 10): four were stored; the fifth sent positions 201-210, then its second poll threw
    assert run.driver.herder.connector_offsets("java-fail") == [({"increment": 7}, {"position": 200})]
    run.driver.herder.put_connector_config("java-fail", {**config, "fail.at.position": "-1"})
    run.driver.herder.restart_connector("java-fail", include_tasks=True)
    wait_until(lambda: len(_sequence(run, topic)) >= 400, timeout_s=120, message="the restarted task's records")
    _stopped(run, "java-fail")
    values = _sequence(run, topic)
    assert sorted(set(values)) == [(p - 1) * 7 for p in range(1, len(set(values)) + 1)]  # no gap
    # at least once, as on Connect: what the failed batch sent before the error comes again after the restart
    assert sorted(v for v in set(values) if values.count(v) > 1) == [(p - 1) * 7 for p in range(201, 211)]


FILE_SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"


def test_java_file_source_to_java_file_sink_round_trip(run):
    """Apache's own FileStreamSource into Kafka and FileStreamSink out of it, both Java plugins on sparkcat."""
    topic, source, out = f"{run.name}-round", run.dir / "round-in.txt", run.dir / "round-out.txt"
    create_topic(run.bootstrap, topic, partitions=2)
    lines = [f"row {i} é" for i in range(1000)]
    source.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    run.driver.herder.put_connector_config("round-src", {
        "connector.class": FILE_SOURCE, "file": str(source), "topic": topic, "value.converter": STRINGS,
        "trigger.interval.ms": "300"})
    run.driver.herder.put_connector_config("round-sink", {
        "connector.class": FILE_SINK, "file": str(out), "topics": topic, "tasks.max": "1",
        "value.converter": STRINGS, "trigger.interval.ms": "300"})
    status = run.wait_running("round-sink")
    assert status["type"] == "sink"
    wait_until(lambda: out.exists() and len(out.read_text(encoding="utf-8").splitlines()) >= len(lines),
               timeout_s=120, message="every line in the sink's file")
    assert sorted(out.read_text(encoding="utf-8").splitlines()) == sorted(lines)
    # the sink's positions, committed as Connect commits them: next offset per topic-partition
    wait_until(lambda: sum(o["kafka_offset"] for _, o in run.driver.herder.connector_offsets("round-sink"))
               == len(lines), timeout_s=60, message="the sink's committed offsets to cover every record")
    for name in ("round-src", "round-sink"):
        _stopped(run, name)


def _dead_letters(bootstrap: str, topic: str) -> list[tuple[bytes, dict[str, bytes]]]:
    """(value, headers) of every record in ``topic``."""
    from confluent_kafka import Consumer, TopicPartition
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"dlq-{uuid.uuid4().hex}",
                         "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        out = []
        while (message := consumer.poll(5)) is not None:
            if message.error() is None:
                out.append((message.value(), dict(message.headers() or [])))
        return out
    finally:
        consumer.close()


def test_a_java_sink_with_two_tasks_dead_letters_what_its_converter_refuses(run):
    topic, out, dlq = f"{run.name}-json", run.dir / "json-out.txt", f"{run.name}-dlq"
    create_topic(run.bootstrap, topic, partitions=2)
    good = [json.dumps({"n": i}).encode() for i in range(40)]
    for p in (0, 1):
        produce(run.bootstrap, topic, good[p::2] + [b"not json " + bytes([48 + p])], partition=p)
    run.driver.herder.put_connector_config("json-sink", {
        "connector.class": FILE_SINK, "file": str(out), "topics": topic, "tasks.max": "2",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter", "value.converter.schemas.enable": "false",
        "errors.tolerance": "all", "errors.deadletterqueue.topic.name": dlq,
        "errors.deadletterqueue.topic.replication.factor": "1", "errors.deadletterqueue.context.headers.enable": "true",
        "trigger.interval.ms": "300"})
    assert len(run.wait_running("json-sink")["tasks"]) == 2
    wait_until(lambda: out.exists() and len(out.read_text().splitlines()) >= 40, timeout_s=120,
               message="the 40 good records in the file")
    assert sorted(out.read_text().splitlines()) == sorted(f"{{n={i}}}" for i in range(40))  # Connect's Map.toString
    wait_until(lambda: len(_dead_letters(run.bootstrap, dlq)) == 2, timeout_s=60, message="two dead letters")
    letters = _dead_letters(run.bootstrap, dlq)
    assert sorted(v for v, _ in letters) == [b"not json 0", b"not json 1"]
    for _, headers in letters:  # Connect's own reporter: the error's context in the headers
        assert headers["__connect.errors.topic"] == topic.encode()
        assert headers["__connect.errors.stage"] == b"VALUE_CONVERTER"
        assert b"DataException" in headers["__connect.errors.exception.class.name"]
    wait_until(lambda: sorted((p["kafka_partition"], o["kafka_offset"])
                              for p, o in run.driver.herder.connector_offsets("json-sink")) == [(0, 21), (1, 21)],
               timeout_s=60, message="both partitions committed past the bad record")
    _stopped(run, "json-sink")
