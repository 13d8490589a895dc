"""A broker outage in the middle of a Kafka-to-Kafka copy: a driver with its own Apache Kafka broker.

The broker is stopped for 60 s (its data and ports kept) while the ``kafka`` copy sink runs, then
started again. What a user sees: no task is ever FAILED, every record reaches the target, and
``/health`` answers 503 with the reason while the driver cannot reach its stores, then 200.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import httpx
import pytest
from confluent_kafka import Producer

from sparkcat.bootstrap import Driver
from sparkcat.runtime.worker_config import WorkerConfig
from tests.broker import KafkaBroker, free_port
from tests.kafka_helpers import create_topic, read_topic, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

RECORDS = 12_000
OUTAGE_S = 60


@pytest.fixture(scope="module")
def own_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaBroker]:
    """A broker of this module's own: the test stops it, and other tests must not notice."""
    with KafkaBroker(log_dir=tmp_path_factory.mktemp("kafka-outage")) as running:
        yield running


def produce_numbered(bootstrap: str, topic: str, count: int, partitions: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for i in range(count):
        p.produce(topic, key=str(i).encode(), value=b"%08d" % i, partition=i % partitions)
    assert p.flush(60) == 0


def copied_values(bootstrap: str, topic: str) -> set[int]:
    return {int(v) for _, _, _, v in read_topic(bootstrap, topic)}


class Watch:
    """Polls the connector's task states and /health every second, each from a thread of its own
    (reading the status store blocks while the broker is down; /health must not wait for it)."""

    def __init__(self, driver: Driver, name: str):
        self.driver, self.name = driver, name
        self.task_states: set[str] = set()
        self.health: list[tuple[float, int, dict]] = []
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._states, daemon=True),
                         threading.Thread(target=self._health, daemon=True)]

    def __enter__(self) -> Watch:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(60)

    def _states(self) -> None:
        while not self._stop.wait(1.0):
            try:
                status = self.driver.herder.connector_status(self.name)
            except Exception:  # the status store may be unreadable during the outage
                continue
            self.task_states |= {t["state"] for t in status["tasks"]}
            self.task_states.add("connector:" + status["connector"]["state"])

    def _health(self) -> None:
        url = f"http://127.0.0.1:{self.driver.worker.rest_port}/health"
        with httpx.Client(timeout=10) as client:
            while not self._stop.wait(1.0):
                try:
                    r = client.get(url)
                except httpx.HTTPError:
                    continue
                self.health.append((time.monotonic(), r.status_code, r.json()))

    def last_health(self) -> int | None:
        return self.health[-1][1] if self.health else None


def test_a_broker_stopped_for_60s_mid_copy_fails_no_task_and_loses_no_record(spark, own_broker, tmp_path,
                                                                           unique_name):
    bootstrap = own_broker.bootstrap
    src, target = f"{unique_name}-src", f"{unique_name}-src.copy"
    create_topic(bootstrap, src, partitions=2)
    produce_numbered(bootstrap, src, RECORDS, 2)
    worker = WorkerConfig(state_dir=str(tmp_path / "state"), bootstrap_servers=bootstrap, rest_port=free_port(),
                          config_topic=f"{unique_name}-configs", offset_topic=f"{unique_name}-offsets",
                          status_topic=f"{unique_name}-status", file_allowed_dirs=[str(tmp_path)])
    driver = Driver(spark, worker, rest=True, watch_pipelines=False)
    driver.start()
    try:
        with Watch(driver, "copy") as watch:
            driver.herder.put_connector_config("copy", {
                "connector.class": "kafka", "topics": src, "tasks.max": "2",
                "trigger.interval.ms": "300", "batch.max.records": "300"})
            wait_until(lambda: len(read_topic(bootstrap, target)) >= 3000, timeout_s=180, message="copy under way")
            own_broker.stop(keep_data=True)
            stopped = time.monotonic()
            try:
                wait_until(lambda: watch.last_health() == 503, timeout_s=OUTAGE_S, message=lambda: f"/health 503 "
                           f"while the broker is down: {watch.health[-3:]}")
                time.sleep(max(0.0, OUTAGE_S - (time.monotonic() - stopped)))
            finally:
                own_broker.start()
            wait_until(lambda: len(copied_values(bootstrap, target)) >= RECORDS, timeout_s=300,
                       message="every record copied after the outage")
            wait_until(lambda: watch.last_health() == 200, timeout_s=120, message="/health 200 again")
            unhealthy = [body for _, code, body in watch.health if code == 503]
        assert "FAILED" not in watch.task_states and "connector:FAILED" not in watch.task_states, watch.task_states
        status = driver.herder.connector_status("copy")
        assert [t["state"] for t in status["tasks"]] == ["RUNNING", "RUNNING"]
        assert unhealthy and unhealthy[0]["status"] == "unhealthy"
        assert unhealthy[0]["message"].startswith("Worker was unable to handle this request")
        assert "is not running:" in unhealthy[0]["message"]  # the reason: which loop, and its error
    finally:
        driver.stop()
    assert copied_values(bootstrap, target) == set(range(RECORDS))  # nothing lost (duplicates: at least once)
