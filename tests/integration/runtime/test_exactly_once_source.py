"""Exactly-once source → Kafka: kill -9 of the whole driver at several points, then a restart.

The driver runs in its own session (``tests.driver_process``); a kill point (``sparkcat.spark.kill_points``)
parks it in batch ``HELD``, and every process of the session (the JVM, the Python daemon that moved to a
process group of its own, its workers) is SIGKILLed there. A driver started again on the same
worker and checkpoint must leave each topic, read ``read_committed``, holding every position
from 1 to the stored offset exactly once.
"""

from __future__ import annotations

import collections
import json
import logging
import os

import pytest

from sparkcat.runtime.plans import checkpoint_dir
from sparkcat.runtime.stores import offsets_store_spec
from sparkcat.spark.kill_points import HOLD_DIR_ENV, HOLD_ENV
from sparkcat.storage.factory import open_offsets_store
from tests.driver_process import kill_session, start_driver_process
from tests.integration.runtime.test_driver import (
    JSON_NO_SCHEMA,
    kafka_worker,
    kafka_worker_fields,
    start_driver,
    states,
)
from tests.kafka_helpers import read_json_values, read_topic, wait_until

pytestmark = pytest.mark.integration

CONNECTOR = "eos"
HELD = 3
PER_BATCH = 400
INCREMENTS = (1, 100)
CONFIG = {"connector.class": "increment", "increments": ",".join(map(str, INCREMENTS)), "tasks.max": "2",
          "records.per.poll": str(PER_BATCH), "batch.max.records": str(PER_BATCH), "trigger.interval.ms": "200",
          "exactly.once.support": "required", **JSON_NO_SCHEMA}


def stored_positions(worker) -> dict[int, int]:
    store = open_offsets_store(offsets_store_spec(worker))
    try:
        stored = store.get(CONNECTOR, stable=True)
    finally:
        store.close()
    return {k: stored.get(f'{{"increment":{k}}}', {}).get("position", 0) for k in INCREMENTS}


def positions(bootstrap: str, topic: str) -> list[int]:
    return sorted(v["position"] for v in read_json_values(bootstrap, topic))


@pytest.mark.parametrize("point", ["mid-produce", "after-commit", "before-spark-commit"])
def test_sigkilled_driver_restarts_with_every_record_exactly_once(spark, broker, tmp_path, unique_name, point,
                                                                  caplog):
    prefix = f"{unique_name}-seq_"
    config = {**CONFIG, "topic.prefix": prefix}
    worker = kafka_worker(broker, tmp_path, unique_name)
    markers, log_path = tmp_path / "markers", tmp_path / "driver.log"
    markers.mkdir()
    child = start_driver_process(kafka_worker_fields(broker.bootstrap, tmp_path, unique_name), {CONNECTOR: config},
                                 log_path, {HOLD_ENV: f"{CONNECTOR}={point}@{HELD}", HOLD_DIR_ENV: str(markers)})
    try:
        wait_until(lambda: any(markers.iterdir()) or child.poll() is not None, timeout_s=240,
                   message=f"the driver to reach {point} of batch {HELD}")
        assert child.poll() is None, log_path.read_text()[-3000:]
    finally:
        kill_session(child)
    ck = checkpoint_dir(worker, CONNECTOR)
    assert os.path.exists(f"{ck}/offsets/{HELD}") and not os.path.exists(f"{ck}/commits/{HELD}")

    caplog.set_level(logging.INFO, logger="sparkcat.spark.source_txn")
    driver = start_driver(spark, worker)
    try:
        target = (HELD + 3) * PER_BATCH
        wait_until(lambda: min(stored_positions(worker).values()) >= target, timeout_s=180,
                   message=lambda: f"stored offsets to pass {target}: {stored_positions(worker)}")
        assert states(driver, CONNECTOR) == ("RUNNING", ["RUNNING", "RUNNING"])
    finally:
        driver.stop()

    stored = stored_positions(worker)
    for k in INCREMENTS:
        topic = f"{prefix}{k}"
        got = positions(broker.bootstrap, topic)
        duplicates = sorted(p for p, n in collections.Counter(got).items() if n > 1)
        assert got == list(range(1, stored[k] + 1)), (
            f"{topic}: {len(got)} committed records for stored position {stored[k]}, duplicated {duplicates[:20]}, "
            f"missing {sorted(set(range(1, stored[k] + 1)) - set(got))[:20]}")
        # the replayed batch was written a second time into a transaction that was aborted (or fenced)
        assert len(read_topic(broker.bootstrap, topic, isolation="read_uncommitted")) > len(got)
    if point != "mid-produce":  # the held batch had committed at least one task's transaction: skipped on replay
        assert f"batch {HELD} was replayed" in caplog.text
    fencing = [json.loads(v) for _, _, k, v in read_topic(broker.bootstrap, worker.config_topic)
               if k == f"tasks-fencing-{CONNECTOR}".encode()]
    assert fencing and fencing[-1] == {"task-count": 2}
