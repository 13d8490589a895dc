"""Failures a driver recovers from, on a real Spark session: auto-restart, a failed sink task, a broken config stream.

- a task that fails once is restarted automatically (``auto.restart.*``) and runs again, its restart
  count in the status body;
- with ``tasks.max=2``, a sink task that keeps failing is FAILED while the other task goes on and takes
  over its partitions (nothing lost);
- the config stream, broken by store errors while it applies records, is restarted: ``/health`` is
  503 with the reason meanwhile, then 200, and the herder takes requests again.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from sparkcat.bootstrap import Driver
from sparkcat.errors import StorageError
from sparkcat.config.worker import WorkerConfig
from tests.broker import free_port
from tests.integration.runtime.test_broker_outage import Watch
from tests.kafka_helpers import create_topic, produce, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

FLAKY = "tests.integration.runtime.flaky_sink:FlakySinkConnector"


def worker_for(broker, tmp_path: Path, name: str, **fields) -> WorkerConfig:
    kafka = {} if broker is None else {
        "bootstrap_servers": broker.bootstrap, "config_topic": f"{name}-configs",
        "offset_topic": f"{name}-offsets", "status_topic": f"{name}-status"}
    return WorkerConfig(state_dir=str(tmp_path / "state"), file_allowed_dirs=[str(tmp_path)],
                        plugin_packages=["sparkcat.connectors", "tests.integration.runtime"], **kafka, **fields)


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def task_states(driver: Driver, name: str) -> list[str]:
    return [t["state"] for t in driver.herder.connector_status(name)["tasks"]]


def flaky_sink(topic: str, out: Path, **extra: str) -> dict[str, str]:
    out.mkdir(parents=True, exist_ok=True)
    return {"connector.class": FLAKY, "topics": topic, "tasks.max": "2", "out.dir": str(out), "fail.task": "1",
            "trigger.interval.ms": "300", "batch.max.records": "50", **extra}


def test_a_task_that_fails_once_is_restarted_automatically_and_its_count_shows(spark, broker, tmp_path, unique_name):
    create_topic(broker.bootstrap, unique_name, partitions=2)
    produce(broker.bootstrap, unique_name, [b"%d" % i for i in range(200)])
    worker = worker_for(broker, tmp_path, unique_name, auto_restart_enable=True, auto_restart_backoff_unit_ms=30000)
    driver = Driver(spark, worker, rest=False, watch_pipelines=False)
    driver.start()
    out = tmp_path / "out"
    try:
        driver.herder.put_connector_config("flaky", flaky_sink(unique_name, out, **{
            "fail.once.file": str(tmp_path / "failed-once")}))
        wait_until(lambda: driver.herder.connector_status("flaky").get("autoRestart"), timeout_s=120,
                   message="an automatic restart")
        wait_until(lambda: task_states(driver, "flaky") == ["RUNNING", "RUNNING"], timeout_s=60,
                   message=lambda: f"both tasks RUNNING again: {driver.herder.connector_status('flaky')}")
        status = driver.herder.connector_status("flaky")
        assert status["autoRestart"]["count"] == 1 and status["autoRestart"]["connectorName"] == "flaky"
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", status["autoRestart"]["lastRestartTimestamp"])
        assert (tmp_path / "failed-once").exists()  # it did fail
        everything = {str(i) for i in range(200)}
        wait_until(lambda: set(lines(out / "task-0.txt") + lines(out / "task-1.txt")) >= everything,
                   message="every record put")
        assert lines(out / "task-1.txt")  # the restarted task got records again
    finally:
        driver.stop()


def test_a_failed_sink_task_leaves_the_other_running_and_loses_nothing(spark, broker, tmp_path, unique_name):
    create_topic(broker.bootstrap, unique_name, partitions=2)
    produce(broker.bootstrap, unique_name, [b"%d" % i for i in range(200)])
    driver = Driver(spark, worker_for(broker, tmp_path, unique_name), rest=False, watch_pipelines=False)
    driver.start()
    out = tmp_path / "out"
    try:
        driver.herder.put_connector_config("sink2", flaky_sink(unique_name, out))
        wait_until(lambda: task_states(driver, "sink2") == ["RUNNING", "FAILED"], timeout_s=120,
                   message="task 1 FAILED, task 0 RUNNING")
        status = driver.herder.connector_status("sink2")
        assert status["connector"]["state"] == "RUNNING"
        assert "task 1 always fails" in status["tasks"][1]["trace"] and "trace" not in status["tasks"][0]
        produce(broker.bootstrap, unique_name, [b"%d" % i for i in range(200, 300)])
        # Task 0 goes on and takes over task 1's partition (as a Connect consumer group rebalances).
        wait_until(lambda: set(lines(out / "task-0.txt")) >= {str(i) for i in range(300)}, timeout_s=120,
                   message="task 0 to put every record")
        assert not lines(out / "task-1.txt")
        assert task_states(driver, "sink2") == ["RUNNING", "FAILED"]
    finally:
        driver.stop()


def test_a_config_stream_broken_by_store_errors_is_restarted_and_health_shows_it(spark, tmp_path, monkeypatch):
    driver = Driver(spark, worker_for(None, tmp_path, "local", rest_port=free_port()), rest=True,
                    watch_pipelines=False)
    driver.start()
    herder = driver.herder
    apply = herder.on_config_records
    failures = {"left": 0}

    def flaky_apply(records):
        if failures["left"] > 0:
            failures["left"] -= 1
            raise StorageError("Kafka log 'configs' at 127.0.0.1:9: reading failed: injected")
        apply(records)

    monkeypatch.setattr(herder, "on_config_records", flaky_apply)
    out = tmp_path / "inc.txt"
    try:
        with Watch(driver, "inc") as watch:
            failures["left"] = 2  # the next record ends the stream; its first restart ends as well
            started = time.monotonic()
            herder.put_connector_config("inc", {"connector.class": "increment", "increments": "1",
                                                "records.per.poll": "5", "trigger.interval.ms": "300",
                                                "sink.connector.class": "file-sink", "sink.file": str(out)})
            assert time.monotonic() - started < 60  # the write came back through a restarted stream
            wait_until(lambda: lines(out), message="the connector runs")
            wait_until(lambda: watch.last_health() == 200 and any(c == 503 for _, c, _ in watch.health),
                       timeout_s=60, message=lambda: f"/health 503 then 200: {watch.health[-5:]}")
        unhealthy = [body["message"] for _, code, body in watch.health if code == 503]
        assert "The config log stream is not running" in unhealthy[0] and "injected" in unhealthy[0]
        assert failures["left"] == 0 and driver.config_follower.running
        herder.put_connector_config("inc", {"connector.class": "increment", "increments": "2",
                                            "records.per.poll": "5", "trigger.interval.ms": "300",
                                            "sink.connector.class": "file-sink", "sink.file": str(out)})
        assert herder.connector_config("inc")["increments"] == "2"
    finally:
        driver.stop()
