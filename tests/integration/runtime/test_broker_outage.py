"""A broker outage in the middle of a Kafka-to-Kafka copy: a driver with its own Apache Kafka broker.

The broker is stopped for 60 s (its data and ports kept) while the ``kafka`` copy sink runs, then
started again. What a user sees: no task is ever FAILED, every record reaches the target, and
``/health`` answers 503 with the reason while the driver cannot reach its stores, then 200.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator

import httpx
import pytest
from confluent_kafka import Producer

from sparkcat.bootstrap import Driver
from sparkcat.config.worker import WorkerConfig
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
    """The values in ``topic``; read with a longer timeout, as the broker may just have started again."""
    return {int(v) for _, _, _, v in read_topic(bootstrap, topic, timeout_s=60)}


class Watch:
    """Polls the connector's status and /health every second, each from a thread of its own
    (reading the status store blocks while the broker is down; /health must not wait for it).

    Every sample is kept, the unreadable and unanswered ones too (with their error), so that a check
    over the samples can say how many it rests on, and require enough of them where it matters.
    """

    def __init__(self, driver: Driver, name: str):
        self.driver, self.name = driver, name
        self.status: list[tuple[float, set[str] | None, str | None]] = []  # (time, states, error)
        self.health: list[tuple[float, int | None, dict | str]] = []  # (time, code, body); code None: no answer
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
            at = time.monotonic()
            try:
                status = self.driver.herder.connector_status(self.name)
            except Exception as e:  # the status store may be unreadable during the outage: kept as unreadable
                self.status.append((at, None, f"{type(e).__name__}: {e}"[:300]))
                continue
            states = {t["state"] for t in status["tasks"]} | {"connector:" + status["connector"]["state"]}
            self.status.append((at, states, None))

    def _health(self) -> None:
        url = f"http://127.0.0.1:{self.driver.worker.rest_port}/health"
        with httpx.Client(timeout=10) as client:
            while not self._stop.wait(1.0):
                at = time.monotonic()
                try:
                    r = client.get(url)
                except httpx.HTTPError as e:  # kept as unanswered: the newest sample is never an older answer
                    self.health.append((at, None, f"{type(e).__name__}: {e}"))
                    continue
                self.health.append((at, r.status_code, r.json()))

    @property
    def task_states(self) -> set[str]:
        """Every state seen in a readable status sample."""
        return set().union(*(states for _, states, _ in list(self.status) if states is not None))

    def readable(self, since: float = 0.0) -> int:
        """How many status samples taken from ``since`` (monotonic time) on could be read."""
        return sum(1 for at, states, _ in list(self.status) if states is not None and at >= since)

    def coverage(self) -> str:
        """The samples' count, for failure messages."""
        samples = list(self.status)
        errors = sorted({e for _, _, e in samples if e is not None})
        unanswered = sum(1 for _, code, _ in list(self.health) if code is None)
        return (f"{sum(1 for _, st, _ in samples if st is not None)} readable and "
                f"{sum(1 for _, st, _ in samples if st is None)} unreadable status samples (errors: {errors[:3]}), "
                f"{len(self.health)} /health samples, {unanswered} unanswered")

    def last_health(self) -> int | None:
        return self.health[-1][1] if self.health else None


def statuses_written(bootstrap: str, status_topic: str, name: str) -> list[tuple[str, str]]:
    """Every status of ``name`` and its tasks in the status topic as (key, state), in the order written:
    what the driver reported at any time, during the outage too, whether or not a sample saw it."""
    keys = (f"status-connector-{name}".encode(), f"status-task-{name}-".encode())
    return [(k.decode(), json.loads(v)["state"]) for _, _, k, v in sorted(read_topic(bootstrap, status_topic))
            if k is not None and v is not None and (k == keys[0] or k.startswith(keys[1]))]


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
            wait_until(lambda: watch.readable() >= 3, timeout_s=60,
                       message=lambda: f"3 readable status samples before the outage: {watch.coverage()}")
            own_broker.stop(keep_data=True)
            stopped = time.monotonic()
            try:
                wait_until(lambda: watch.last_health() == 503, timeout_s=OUTAGE_S, message=lambda: f"/health 503 "
                           f"while the broker is down: {watch.health[-3:]}")
                time.sleep(max(0.0, OUTAGE_S - (time.monotonic() - stopped)))
            finally:
                own_broker.start()
            back = time.monotonic()
            wait_until(lambda: len(copied_values(bootstrap, target)) >= RECORDS, timeout_s=300,
                       message="every record copied after the outage")
            wait_until(lambda: watch.last_health() == 200, timeout_s=120,
                       message=lambda: f"/health 200 again: {watch.health[-3:]}")
            wait_until(lambda: watch.readable(since=back) >= 3, timeout_s=120,
                       message=lambda: f"3 readable status samples after the outage: {watch.coverage()}")
            unhealthy = [body for _, code, body in watch.health if code == 503]
        states = watch.task_states
        assert "FAILED" not in states and "connector:FAILED" not in states, f"{states}; {watch.coverage()}"
        status = driver.herder.connector_status("copy")
        assert [t["state"] for t in status["tasks"]] == ["RUNNING", "RUNNING"]
        assert not driver.reconciler.lifecycles["copy"].failed_tasks  # no failure whose status write was lost
        # Samples cannot read the status store while the broker is down; its log has every status written.
        written = statuses_written(bootstrap, worker.status_topic, "copy")
        assert {k for k, state in written if state == "RUNNING"} >= {"status-task-copy-0", "status-task-copy-1"}
        assert not [(k, state) for k, state in written if state == "FAILED"], written
        assert unhealthy and all(body["status"] == "unhealthy" for body in unhealthy), unhealthy
        assert all(body["message"].startswith("Worker was unable to handle this request") for body in unhealthy)
        # the reason: which loop, and its error (a leader that stopped leading when the coordinator went silent may
        # first say only that it takes no writes, until the next heartbeat marks the coordinator down)
        assert any("is not running:" in body["message"] for body in unhealthy), unhealthy[:3]
    finally:
        driver.stop()
    assert copied_values(bootstrap, target) == set(range(RECORDS))  # nothing lost (duplicates: at least once)
