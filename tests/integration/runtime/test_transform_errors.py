"""``errors.tolerance=all`` covers a sink connector's transforms, as Connect's covers its TRANSFORMATION stage.

A real broker, the driver and Spark: a ``file-sink`` casts each JSON value's ``n`` to ``int32`` (``Cast$Value``);
one record's ``n`` is ``"x"``, which Spark's cast refuses. The record goes to the dead letter queue with its
original bytes and Connect's ``__connect.errors.*`` headers (stage ``TRANSFORMATION``, the transform's class),
every other record is written, the task stays RUNNING and its position passes the bad record.
"""

from __future__ import annotations

import json

import pytest
from confluent_kafka import Producer

from sparkcat.bootstrap import Driver
from sparkcat.config.worker import WorkerConfig
from tests.integration.runtime.test_dead_letter_queue import JSON_VALUES, context, read_records
from tests.kafka_helpers import create_topic, read_topic, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

CAST = {"transforms": "cast", "transforms.cast.type": "org.apache.kafka.connect.transforms.Cast$Value",
        "transforms.cast.spec": "n:int32"}
DLQ = {"errors.tolerance": "all", "errors.deadletterqueue.topic.replication.factor": "1",
       "errors.deadletterqueue.context.headers.enable": "true", "errors.log.enable": "true"}


def test_a_record_whose_transform_fails_goes_to_the_dlq_and_the_others_are_written(spark, broker, tmp_path,
                                                                                    unique_name):
    topic, dlq, out = f"{unique_name}-in", f"{unique_name}-dlq", tmp_path / "out.txt"
    create_topic(broker.bootstrap, topic)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(8):
        n = "x" if i == 5 else str(i)
        producer.produce(topic, json.dumps({"n": n}).encode(), f"k{i}".encode(), timestamp=1_700_000_000_000 + i)
    assert producer.flush(30) == 0
    worker = WorkerConfig(state_dir=str(tmp_path / "state"), bootstrap_servers=broker.bootstrap,
                          config_topic=f"{unique_name}-configs", offset_topic=f"{unique_name}-offsets",
                          status_topic=f"{unique_name}-status", file_allowed_dirs=[str(tmp_path)])
    driver = Driver(spark, worker, rest=False, watch_pipelines=False)
    driver.start()
    try:
        driver.herder.put_connector_config("cast", {
            "connector.class": "file-sink", "file": str(out), "topics": topic, "trigger.interval.ms": "300",
            "errors.deadletterqueue.topic.name": dlq, **JSON_VALUES, **CAST, **DLQ})
        wait_until(lambda: out.exists() and len(out.read_text().splitlines()) == 7,
                   message=lambda: f"the 7 good records: {driver.herder.connector_status('cast')}")
        assert out.read_text().splitlines() == [f'{{"n":{i}}}' for i in (0, 1, 2, 3, 4, 6, 7)]
        wait_until(lambda: read_topic(broker.bootstrap, dlq), message="the dead letter")
        [letter] = read_records(broker.bootstrap, dlq)
        assert (letter["key"], letter["value"], letter["timestamp"]) == (b"k5", b'{"n": "x"}', 1_700_000_000_005)
        headers = context(letter["headers"])
        assert {k: headers[k] for k in ("topic", "partition", "offset", "connector.name", "task.id", "stage",
                                        "class.name", "exception.class.name")} == {
            "topic": topic, "partition": "0", "offset": "5", "connector.name": "cast", "task.id": "0",
            "stage": "TRANSFORMATION", "class.name": "org.apache.kafka.connect.transforms.Cast$Value",
            "exception.class.name": "sparkcat.transforms.frame.DataError"}
        assert "CAST_INVALID_INPUT" in headers["exception.message"], headers["exception.message"]
        status = driver.herder.connector_status("cast")
        assert [t["state"] for t in status["tasks"]] == ["RUNNING"], status
        def position() -> dict | None:
            return next((o for p, o in driver.stores.offsets.partitions("cast") if p["kafka_partition"] == 0), None)

        wait_until(lambda: position() == {"kafka_offset": 8}, message=lambda: f"past the skipped record: {position()}")
        errors = dict(driver.herder.connector_progress())["cast"].task_errors[0]
        assert (errors.records_skipped, errors.dlq_produce_requests) == (1, 1)
    finally:
        driver.stop()
