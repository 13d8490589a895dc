"""A standby's warm-up (spark/warm_up.py) on a real Spark session: it runs a query of the connectors' kind,
leaves no query and no checkpoint behind, and the next Python job finds sparkcat's handler modules imported."""

from __future__ import annotations

import threading
from pathlib import Path

import httpx

from sparkcat.config.names import WARM_UP_QUERY
from sparkcat.spark.driver.warm_up import run_warm_up


def _handler_module_imported(batches):
    import sys

    import pyarrow as pa

    for _ in batches:
        pass
    yield pa.RecordBatch.from_arrays([pa.array(["sparkcat.spark.executor.source_txn" in sys.modules])], names=["warm"])


def test_warm_up_leaves_nothing_running_and_its_workers_warm(spark, tmp_path: Path):
    checkpoint = tmp_path / "warm-up-checkpoint"
    took = run_warm_up(spark, WARM_UP_QUERY, str(checkpoint))
    assert took > 0
    assert not checkpoint.exists(), "the warm-up's checkpoint is deleted"
    assert WARM_UP_QUERY not in [q.name for q in spark.streams.active]
    rows = spark.range(0, 1, 1, 1).mapInArrow(_handler_module_imported, "warm BOOLEAN").collect()
    assert rows and all(r.warm for r in rows), "the next Python worker has the handlers imported"


def test_a_warm_up_told_to_stop_ends_its_query_before_its_first_batch_and_leaves_nothing(spark, tmp_path: Path):
    """What ``Driver.stop`` relies on during a leader's warm-up: the step's query is stopped at once, not waited for
    until its batch is done (a driver stopped just after its start waited for the step in progress)."""
    checkpoint = tmp_path / "stopped-warm-up-checkpoint"
    asked: list[bool] = []

    def stopping() -> bool:  # set for good once the warm-up's query runs, as Driver.stop's event would be
        if WARM_UP_QUERY in [q.name for q in spark.streams.active]:
            asked.append(True)
        return bool(asked)

    assert run_warm_up(spark, WARM_UP_QUERY, str(checkpoint), stopping=stopping) is None
    assert asked, "the stop came while the warm-up's query ran"
    assert WARM_UP_QUERY not in [q.name for q in spark.streams.active]
    assert not checkpoint.exists(), "the warm-up's checkpoint is deleted"


def test_leaders_warm_up_runs_behind_a_ready_driver_and_leaves_nothing_behind(spark, broker, tmp_path, unique_name,
                                                                               monkeypatch):
    """The leader's warm-up (a Kafka stream, Spark's Kafka writer, Delta, Python workers) runs in the background: held
    back here, the driver already answers /health and takes a POST whose connector runs; let go, it ends with no
    query, checkpoint, scratch table or topic of its own left."""
    from confluent_kafka.admin import AdminClient

    from sparkcat.bootstrap import Driver
    from sparkcat.config.worker import WorkerConfig
    from sparkcat.spark.driver import warm_up
    from sparkcat.spark.driver.warm_writers import NO_TOPIC
    from tests.integration.runtime.test_driver import JSON_NO_SCHEMA, kafka_worker_fields
    from tests.integration.runtime.test_leadership import free_port
    from tests.kafka_helpers import read_json_values, wait_until

    monkeypatch.setattr(warm_up, "_WARMED", set())  # earlier drivers of this session warmed it: run it again
    gate, held, run_step = threading.Event(), threading.Event(), warm_up._run_step

    def gated_step(*args):
        held.set()
        assert gate.wait(120), "the test let the warm-up go"
        return run_step(*args)

    monkeypatch.setattr(warm_up, "_run_step", gated_step)
    topics_before = set(AdminClient({"bootstrap.servers": broker.bootstrap}).list_topics(timeout=10).topics)
    worker = WorkerConfig(**kafka_worker_fields(broker.bootstrap, tmp_path, unique_name), rest_port=free_port())
    driver = Driver(spark, worker, watch_pipelines=False)
    try:
        driver.start()
        assert held.wait(60), "the leader's warm-up began"
        assert httpx.get(driver.url + "/health", timeout=30).status_code == 200
        config = {"connector.class": "increment", "increments": "1", "topic.prefix": f"{unique_name}-seq_",
                  "records.per.poll": "10", "trigger.interval.ms": "200", **JSON_NO_SCHEMA}
        answer = httpx.post(driver.url + "/connectors", json={"name": "early", "config": config}, timeout=60)
        assert answer.status_code == 201, answer.text
        assert not driver._leader_warm_up.done.is_set(), "the warm-up was still held while the driver served"
        gate.set()
        assert driver._leader_warm_up.done.wait(300), "the warm-up ended"
        assert set(driver._leader_warm_up.took) == set(warm_up.LEADER_STEPS), "every step ran"
        wait_until(lambda: len(read_json_values(broker.bootstrap, f"{unique_name}-seq_1")) >= 10, timeout_s=120,
                   message="the connector POSTed during the warm-up writes")
        threads = [str(t.getName()) for t in spark.sparkContext._jvm.java.lang.Thread.getAllStackTraces().keySet()]
        assert not [t for t in threads if WARM_UP_QUERY in t], "no warm-up query runs, in any session"
        left = sorted(p.name for p in Path(worker.checkpoint_root).iterdir() if WARM_UP_QUERY in p.name)
        assert left == [], "the warm-up's checkpoint and scratch Delta table are deleted"
        topics_after = set(AdminClient({"bootstrap.servers": broker.bootstrap}).list_topics(timeout=10).topics)
        assert NO_TOPIC not in topics_after
        created = [t for t in topics_after - topics_before if not t.startswith((unique_name, "__"))]
        assert created == [], "the warm-up created no topic (the driver's and the connector's are named so)"
    finally:
        gate.set()
        driver.stop()
