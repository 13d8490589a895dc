"""A task's ``worker_id`` names where it runs, once: polled through ``GET /connectors/NAME/status`` from the
connector's creation through several batches, on a real Spark session (a ``local`` master, whose one executor
is the driver: Spark's executor id ``driver``).

One source and one connector of each sink kind, all fed by the source: a record sink (``file-sink``), a batch
writer (``delta``) and a native sink (the ``kafka`` copy, which Spark writes itself). None of their tasks is
ever reported RUNNING on the driver's REST address (``HOST:REST_PORT``, the connector's worker), and none
changes its ``worker_id`` while RUNNING.
"""

from __future__ import annotations

import socket
import threading
from collections import defaultdict

import httpx
import pytest

from sparkcat.bootstrap import Driver
from sparkcat.config.worker import WorkerConfig
from tests.broker import free_port
from tests.kafka_helpers import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

JSON_NO_SCHEMA = {"value.converter": "org.apache.kafka.connect.json.JsonConverter",
                  "value.converter.schemas.enable": "false"}
BATCHES = 3  # committed batches of every connector before the polling stops


class StatusPoller:
    """Reads every connector's status over REST, again and again, and keeps what each task was seen as."""

    def __init__(self, url: str, names: list[str]):
        self.url, self.names = url, names
        self.seen: dict[tuple[str, int], list[tuple[str, str]]] = defaultdict(list)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, name="status-poller", daemon=True)

    def __enter__(self) -> StatusPoller:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _poll(self) -> None:
        with httpx.Client(base_url=self.url, timeout=30) as client:
            while not self._stop.is_set():
                for name in self.names:
                    response = client.get(f"/connectors/{name}/status")
                    if response.status_code != 200:
                        continue  # not created yet
                    for t in response.json()["tasks"]:
                        observed = (t["state"], t["worker_id"])
                        history = self.seen[(name, t["id"])]
                        if not history or history[-1] != observed:
                            history.append(observed)
                self._stop.wait(0.05)


def batches_of(driver: Driver) -> dict[str, int]:
    return {name: progress.batches for name, progress in driver.herder.connector_progress()}


def test_every_kind_of_task_is_running_on_one_worker_id_from_its_first_running_status(spark, broker, tmp_path,
                                                                                      unique_name):
    port = free_port()
    worker = WorkerConfig(state_dir=str(tmp_path / "state"), bootstrap_servers=broker.bootstrap,
                          rest_host="127.0.0.1", rest_port=port, config_topic=f"{unique_name}-configs",
                          offset_topic=f"{unique_name}-offsets", status_topic=f"{unique_name}-status",
                          file_allowed_dirs=[str(tmp_path)])
    prefix, names = f"{unique_name}-seq_", ["src", "records", "lake", "copy"]
    topic = f"{prefix}1"
    driver = Driver(spark, worker, rest=True, watch_pipelines=False)
    driver.start()
    try:
        with StatusPoller(f"http://127.0.0.1:{port}", names) as poller:
            put = driver.herder.put_connector_config
            put("src", {"connector.class": "increment", "increments": "1", "topic.prefix": prefix,
                        "records.per.poll": "20", "trigger.interval.ms": "300", **JSON_NO_SCHEMA})
            wait_until(lambda: batches_of(driver).get("src", 0) >= 1, message="the source's first batch")
            sink = {"topics": topic, "tasks.max": "2", "trigger.interval.ms": "300", **JSON_NO_SCHEMA}
            put("records", {"connector.class": "file-sink", "file": str(tmp_path / "out.jsonl"), **sink})
            put("lake", {"connector.class": "delta", "table.path": str(tmp_path / "lake"),
                         "value.schema": "position BIGINT, value BIGINT, increment BIGINT", **sink})
            put("copy", {"connector.class": "kafka", "topics": topic, "tasks.max": "2",
                         "trigger.interval.ms": "300"})
            wait_until(lambda: all(batches_of(driver).get(n, 0) >= BATCHES for n in names), timeout_s=240,
                       message=lambda: f"{BATCHES} batches of every connector: {batches_of(driver)}")
            wait_until(lambda: {n for n, _ in poller.seen} == set(names), message="every connector's tasks seen")
        seen = dict(poller.seen)
    finally:
        driver.stop()

    on_driver = f"{socket.gethostname()}:driver"  # Spark's id of a local master's one executor
    for (name, task), history in sorted(seen.items()):
        running = [w for state, w in history if state == "RUNNING"]
        assert running, f"{name}-{task} was never seen RUNNING: {history}"
        assert set(running) == {on_driver}, f"{name}-{task}'s worker_id changed or named the driver: {history}"
        assert history[-1] == ("RUNNING", on_driver), f"{name}-{task} did not end RUNNING: {history}"
    assert {(name, task) for name, task in seen} >= {("src", 0), ("records", 0), ("records", 1), ("lake", 0),
                                                     ("lake", 1), ("copy", 0), ("copy", 1)}
