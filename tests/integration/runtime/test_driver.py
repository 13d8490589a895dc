"""The driver end to end on a real Spark session: herder, config log stream, connector queries."""

from __future__ import annotations

import collections
import gc
import json
import os
from pathlib import Path

import pytest

from sparkcat.bootstrap import Driver
from sparkcat.model.config_state import TargetState
from sparkcat.config.worker import WorkerConfig
from tests.kafka_helpers import create_topic, read_json_values, read_topic, wait_until

pytestmark = pytest.mark.integration

PLUGIN_PACKAGES = ["sparkcat.connectors", "tests.integration.runtime"]  # its failing_connector
JSON_NO_SCHEMA = {"value.converter": "org.apache.kafka.connect.json.JsonConverter",
                  "value.converter.schemas.enable": "false"}


def kafka_worker_fields(bootstrap: str, tmp_path: Path, name: str) -> dict:
    """The WorkerConfig fields of a driver on Kafka stores with topics of its own (JSON-able, for driver processes)."""
    return dict(state_dir=str(tmp_path / "state"), bootstrap_servers=bootstrap,
                config_topic=f"{name}-configs", offset_topic=f"{name}-offsets",
                status_topic=f"{name}-status", file_allowed_dirs=[str(tmp_path)],
                plugin_packages=list(PLUGIN_PACKAGES))


def kafka_worker(broker, tmp_path: Path, name: str) -> WorkerConfig:
    return WorkerConfig(**kafka_worker_fields(broker.bootstrap, tmp_path, name))


def local_worker(tmp_path: Path) -> WorkerConfig:
    return WorkerConfig(state_dir=str(tmp_path / "state"), file_allowed_dirs=[str(tmp_path)],
                        plugin_packages=PLUGIN_PACKAGES)


def start_driver(spark, worker: WorkerConfig) -> Driver:
    driver = Driver(spark, worker, rest=False, watch_pipelines=False)
    driver.start()
    return driver


def status_of(driver: Driver, name: str) -> dict:
    return driver.herder.connector_status(name)


def states(driver: Driver, name: str) -> tuple[str, list[str]]:
    s = status_of(driver, name)
    return s["connector"]["state"], [t["state"] for t in s["tasks"]]


def file_lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def assert_nothing_arrives(driver: Driver, name: str, out: Path, count: int, tmp_path: Path, marker: str) -> None:
    """``name`` (PAUSED or STOPPED) writes nothing past ``count`` lines of ``out``, shown by a marker connector
    started after the count (same trigger interval, file sink of its own): once the marker wrote 3 batches,
    several trigger intervals of a running query went by on the same driver and Spark, and ``name``, had it
    been running, would have written too."""
    assert name not in [q.name for q in driver.spark.streams.active], f"{name}'s query still runs"
    marker_out = tmp_path / f"{marker}.jsonl"
    driver.herder.put_connector_config(marker, {
        "connector.class": "increment", "increments": "1", "records.per.poll": "5", "trigger.interval.ms": "200",
        "sink.connector.class": "file-sink", "sink.file": str(marker_out)})
    wait_until(lambda: len(file_lines(marker_out)) >= 15, message=f"3 batches of the marker connector {marker}")
    assert len(file_lines(out)) == count, f"{out.name} grew while {name} was {states(driver, name)}"
    driver.herder.delete_connector(marker)
    wait_until(lambda: marker not in [q.name for q in driver.spark.streams.active], message=f"{marker}'s query gone")


def test_increment_tutorial_continues_exactly_after_tasks_max_change(spark, broker, tmp_path, unique_name):
    worker = kafka_worker(broker, tmp_path, unique_name)
    prefix = f"{unique_name}-seq_"
    config = {"connector.class": "increment", "increments": "1,100", "tasks.max": "1",
              "topic.prefix": prefix, "records.per.poll": "40", "trigger.interval.ms": "300", **JSON_NO_SCHEMA}
    driver = start_driver(spark, worker)
    try:
        driver.herder.put_connector_config("inc", config)
        wait_until(lambda: len(read_json_values(broker.bootstrap, prefix + "100")) >= 80, message="seq_100")
        assert states(driver, "inc") == ("RUNNING", ["RUNNING"])
    finally:
        driver.stop()
    before = {k: read_json_values(broker.bootstrap, f"{prefix}{k}") for k in (1, 100)}

    driver = start_driver(spark, worker)
    try:
        driver.herder.put_connector_config("inc", {**config, "tasks.max": "2"})
        for k in (1, 100):
            wait_until(lambda k=k: len(read_json_values(broker.bootstrap, f"{prefix}{k}")) >= len(before[k]) + 80,
                       message=f"seq_{k} to continue")
        status = status_of(driver, "inc")
        assert [t["state"] for t in status["tasks"]] == ["RUNNING", "RUNNING"]
        assert all(t["worker_id"] for t in status["tasks"])
        assert len(driver.herder.task_configs("inc")) == 2
    finally:
        driver.stop()
    for k in (1, 100):
        # Records without a key spread over the topic's partitions (as in Connect), so order by position.
        values = sorted(read_json_values(broker.bootstrap, f"{prefix}{k}"), key=lambda v: v["position"])
        positions = [v["position"] for v in values]
        duplicates = sorted(p for p, n in collections.Counter(positions).items() if n > 1)
        assert positions == list(range(1, len(values) + 1)), (
            f"gap or duplicate in seq_{k}: duplicated positions {duplicates}, {len(values)} records, "
            f"{len(before[k])} before the restart")
        assert all(v["value"] == v["position"] * k for v in values)
        assert len(values) >= len(before[k]) + 80


def test_pause_resume_stop_and_delete_show_in_status_and_data(spark, tmp_path):
    driver = start_driver(spark, local_worker(tmp_path))
    out = tmp_path / "out.jsonl"
    config = {"connector.class": "increment", "increments": "1", "records.per.poll": "5",
              "trigger.interval.ms": "200", "sink.connector.class": "file-sink", "sink.file": str(out)}
    herder = driver.herder
    try:
        herder.put_connector_config("pausable", config)
        wait_until(lambda: len(file_lines(out)) >= 10, message="first records")

        herder.set_target_state("pausable", TargetState.PAUSED)
        wait_until(lambda: states(driver, "pausable") == ("PAUSED", ["PAUSED"]), message="PAUSED status")
        paused_count = len(file_lines(out))
        assert_nothing_arrives(driver, "pausable", out, paused_count, tmp_path, "marker-paused")

        herder.set_target_state("pausable", TargetState.STARTED)
        wait_until(lambda: len(file_lines(out)) > paused_count + 5, message="records after resume")
        assert states(driver, "pausable") == ("RUNNING", ["RUNNING"])

        herder.set_target_state("pausable", TargetState.STOPPED)
        wait_until(lambda: states(driver, "pausable") == ("STOPPED", []), message="STOPPED status")
        assert herder.task_configs("pausable") == []  # Connect empties task configs on stop
        stopped_count = len(file_lines(out))
        assert_nothing_arrives(driver, "pausable", out, stopped_count, tmp_path, "marker-stopped")

        herder.set_target_state("pausable", TargetState.STARTED)
        wait_until(lambda: len(file_lines(out)) > stopped_count + 5, message="records after restart")

        herder.delete_connector("pausable")
        wait_until(lambda: "pausable" not in [q.name for q in spark.streams.active], message="query gone")
        assert driver.stores.status.get("pausable") is None
        assert driver.stores.status.tasks("pausable") == []
    finally:
        driver.stop()
    positions = [json.loads(line)["position"] for line in file_lines(out)]
    assert positions == list(range(1, len(positions) + 1))


def test_failing_task_is_failed_with_trace_while_others_keep_running(spark, broker, tmp_path, unique_name):
    worker = kafka_worker(broker, tmp_path, unique_name)
    failing_topic = f"{unique_name}-failing"
    prefix = f"{unique_name}-ok_"
    driver = start_driver(spark, worker)
    try:
        driver.herder.put_connector_config("failing", {
            "connector.class": "tests.integration.runtime.failing_connector:FailingSourceConnector",
            "topic": failing_topic, "tasks.max": "2", "fail.after": "20", "trigger.interval.ms": "300",
            "value.converter": "org.apache.kafka.connect.storage.StringConverter"})
        driver.herder.put_connector_config("healthy", {
            "connector.class": "increment", "increments": "1", "topic.prefix": prefix,
            "records.per.poll": "10", "trigger.interval.ms": "300", **JSON_NO_SCHEMA})
        wait_until(lambda: states(driver, "failing")[1] == ["RUNNING", "FAILED"], message="task 1 FAILED")
        status = status_of(driver, "failing")
        assert "cannot go past 20" in status["tasks"][1]["trace"]
        assert "trace" not in status["tasks"][0]
        assert status["connector"]["state"] == "RUNNING"
        # Task 0 and the other connector keep producing after the failure.
        healthy_before = len(read_json_values(broker.bootstrap, prefix + "1"))
        task0_before = [v for p, _, _, v in read_topic(broker.bootstrap, failing_topic)]
        wait_until(lambda: len(read_json_values(broker.bootstrap, prefix + "1")) > healthy_before + 20,
                   message="healthy connector to keep producing")
        wait_until(lambda: len(read_topic(broker.bootstrap, failing_topic)) > len(task0_before) + 10,
                   message="task 0 to keep producing")
        assert states(driver, "healthy") == ("RUNNING", ["RUNNING"])
    finally:
        driver.stop()


def test_file_source_to_kafka_to_file_sink_is_line_for_line_identical(spark, broker, tmp_path, unique_name):
    worker = kafka_worker(broker, tmp_path, unique_name)
    topic = f"{unique_name}-lines"
    create_topic(broker.bootstrap, topic)
    source_file, sink_file = tmp_path / "in.txt", tmp_path / "out.txt"
    lines = [f"line {i}: {'x' * (i % 17)} ünïcödé" for i in range(500)] + ["", "last line"]
    source_file.write_text("\n".join(lines) + "\n")
    string = "org.apache.kafka.connect.storage.StringConverter"
    driver = start_driver(spark, worker)
    try:
        driver.herder.put_connector_config("lines-in", {
            "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
            "file": str(source_file), "topic": topic, "value.converter": string, "trigger.interval.ms": "300"})
        driver.herder.put_connector_config("lines-out", {
            "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
            "file": str(sink_file), "topics": topic, "value.converter": string, "trigger.interval.ms": "300"})
        wait_until(lambda: file_lines(sink_file) == lines, timeout_s=120, message="sink file to match")
        with source_file.open("a") as f:
            f.write("appended later\n")
        wait_until(lambda: file_lines(sink_file) == lines + ["appended later"], message="appended line")
    finally:
        driver.stop()


def _kafka_client_threads() -> int:
    """librdkafka handles alive in this process: each has one ``rdk:main`` thread."""
    count = 0
    for tid in os.listdir("/proc/self/task"):
        try:
            count += open(f"/proc/self/task/{tid}/comm").read().strip() == "rdk:main"
        except OSError:
            pass  # the thread ended
    return count


def test_a_stopped_driver_leaves_no_kafka_client_behind(spark, broker, tmp_path, unique_name):
    # A client left open keeps reconnecting: after the brokers go, it logs "Connection refused" forever.
    topic = f"{unique_name}-1"
    create_topic(broker.bootstrap, topic, 1)
    gc.collect()
    before = _kafka_client_threads()
    driver = start_driver(spark, kafka_worker(broker, tmp_path, unique_name))
    try:
        out = tmp_path / "out.jsonl"
        driver.herder.put_connector_config("inc", {
            "connector.class": "increment", "increments": "1", "records.per.poll": "5", "trigger.interval.ms": "200",
            "topic.prefix": f"{unique_name}-", **JSON_NO_SCHEMA})
        driver.herder.put_connector_config("sink", {
            "connector.class": "file-sink", "topics": topic, "file": str(out), **JSON_NO_SCHEMA})
        wait_until(lambda: len(file_lines(out)) >= 10, message="records through the source and the sink")
        assert _kafka_client_threads() > before
    finally:
        driver.stop()
    gc.collect()
    wait_until(lambda: _kafka_client_threads() <= before, timeout_s=30,
               message=lambda: f"the driver's Kafka clients closed: {_kafka_client_threads()} alive, {before} before")
