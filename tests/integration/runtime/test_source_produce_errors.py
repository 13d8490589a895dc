"""Source records Kafka refuses (Connect's KAFKA_PRODUCE stage), end to end: a real broker, the driver, Spark.

Each connector's topic takes batches of at most ``LIMIT`` bytes (its ``max.message.bytes``) and the
file source's second line is bigger, so the broker refuses it (the producer keeps it in a batch of
its own: ``batch.size`` is small and compression off). The worker writes at least once
(``exactly.once.source.support=disabled``), as Connect's ``WorkerSourceTask``:

- ``errors.tolerance=all``: the other lines arrive, the task stays RUNNING, its offsets move past
  the refused line, and the task's error counters (``/metrics``) show it skipped;
- ``none``: the task is FAILED, its trace naming the topic and the record.

The exactly-once case (the task fails whatever ``errors.tolerance`` says) runs with the other
poison records, in test_dead_letter_queue.py.
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from sparkcat.bootstrap import Driver
from sparkcat.rest import metrics
from sparkcat.config.worker import WorkerConfig
from tests.kafka_helpers import read_topic, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

LIMIT = 4096
LINES = ["a0", secrets.token_hex(10_000), "c2", "d3"]  # 20,000 random hex characters: too big for the topic
SMALL_BATCHES = {"producer.override.batch.size": "1000", "producer.override.compression.type": "none",
                 "value.converter": "org.apache.kafka.connect.storage.StringConverter",
                 "trigger.interval.ms": "300"}


def create_limited_topic(bootstrap: str, topic: str, max_bytes: int = LIMIT) -> None:
    """A one-partition topic whose batches may not exceed ``max_bytes`` (``max.message.bytes``)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, 1, 1, config={"max.message.bytes": str(max_bytes)})]).values():
        future.result(timeout=30)


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
        progress = dict(self.driver.herder.connector_progress()).get(connector)
        return None if progress is None else progress.task_errors.get(0)


@pytest.fixture(scope="module")
def run(spark, broker, tmp_path_factory) -> Iterator[Run]:
    name = f"t-{uuid.uuid4().hex[:10]}"
    work = tmp_path_factory.mktemp("produce-errors")
    worker = WorkerConfig(state_dir=str(work / "state"), bootstrap_servers=broker.bootstrap,
                          config_topic=f"{name}-configs", offset_topic=f"{name}-offsets", status_topic=f"{name}-status",
                          file_allowed_dirs=[str(work)], exactly_once_source_support="disabled")
    driver = Driver(spark, worker, rest=False, watch_pipelines=False)
    driver.start()
    r = Run(driver, broker.bootstrap, name, work)
    (work / "in.txt").write_text("".join(line + "\n" for line in LINES), encoding="ascii")
    try:
        for tolerance in ("all", "none"):
            create_limited_topic(broker.bootstrap, r.topic(tolerance))
            driver.herder.put_connector_config(f"big-{tolerance}", {
                "connector.class": "file-source", "file": str(work / "in.txt"), "topic": r.topic(tolerance),
                "errors.tolerance": tolerance, "errors.log.enable": "true", **SMALL_BATCHES})
        yield r
    finally:
        driver.stop()


def test_with_tolerance_all_a_record_the_topic_refuses_is_skipped_counted_and_its_offset_committed(run):
    topic = run.topic("all")
    wait_until(lambda: len(read_topic(run.bootstrap, topic)) == 3, message="the 3 lines the topic takes")
    assert sorted(v for *_, v in read_topic(run.bootstrap, topic)) == [b"a0", b"c2", b"d3"]
    end = (run.dir / "in.txt").stat().st_size
    wait_until(lambda: [o for _, o in run.driver.herder.connector_offsets("big-all")] == [{"position": end}],
               message="the offsets past every line, the refused one too")
    counts = wait_until(lambda: run.errors("big-all"), message="big-all's error counters")
    assert (counts.record_failures, counts.record_errors, counts.records_skipped, counts.errors_logged) == (1, 1, 1, 1)
    assert run.task("big-all")["state"] == "RUNNING"
    text = metrics.render(run.driver.herder.connector_progress(), [])
    assert 'sparkcat_task_total_records_skipped{connector="big-all",task="0"} 1.0' in text
    assert 'sparkcat_task_total_record_errors{connector="big-all",task="0"} 1.0' in text


def test_with_tolerance_none_the_task_fails_naming_the_topic_and_the_record(run):
    wait_until(lambda: run.task("big-none")["state"] == "FAILED", message="big-none's task FAILED")
    trace = run.task("big-none")["trace"]
    assert "Unrecoverable exception from producer send callback" in trace
    assert f"the record to topic '{run.topic('none')}' (partition 0, key None, 20000 bytes)" in trace
    assert "MSG_SIZE_TOO_LARGE" in trace and "(errors.tolerance=none)" in trace
    counts = run.errors("big-none")  # counted from the trace: the failing batch reported nothing
    assert (counts.record_failures, counts.record_errors, counts.records_skipped) == (1, 1, 0)
