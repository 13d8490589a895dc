"""Exactly-once source -> Kafka: kill -9 of the whole driver at random moments, then a restart.

The driver runs in its own session (``tests.driver_process``) and is SIGKILLed with everything it
started (the JVM, pyspark's daemon and workers) at a random moment while its records flow: no hook in
the product says where a batch is, so the kills land mid-produce, between a task's commit and Spark's,
or between batches, as they fall. The driver is started and killed again ``KILLS`` times on the same
worker and checkpoint; a last driver runs on. Each topic, read ``read_committed``, must then hold every
position from 1 to the stored offset exactly once.
"""

from __future__ import annotations

import collections
import json

import pytest

from sparkcat.config.stores import offsets_store_spec
from sparkcat.storage.factory import open_offsets_store
from tests.driver_process import kill_rounds, seeded_random
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
KILLS = 3
PER_BATCH = 400
INCREMENTS = (1, 100)
CONFIG = {"connector.class": "increment", "increments": ",".join(map(str, INCREMENTS)), "tasks.max": "2",
          "records.per.poll": str(PER_BATCH), "batch.max.records": str(PER_BATCH), "trigger.interval.ms": "200",
          "exactly.once.support": "required", **JSON_NO_SCHEMA}


def stored_positions(worker, connector: str = CONNECTOR, increments: tuple[int, ...] = INCREMENTS) -> dict[int, int]:
    """The committed position of each increment of ``connector`` (its ``{"increment": k}`` partitions), 0 if none."""
    store = open_offsets_store(offsets_store_spec(worker))
    try:
        stored = store.get(connector, stable=True)
    finally:
        store.close()
    return {k: stored.get(f'{{"increment":{k}}}', {}).get("position", 0) for k in increments}


def positions(bootstrap: str, topic: str) -> list[int]:
    return sorted(v["position"] for v in read_json_values(bootstrap, topic))


@pytest.mark.timeout(900)
def test_sigkilled_driver_at_random_moments_restarts_with_every_record_exactly_once(spark, broker, tmp_path,
                                                                                   unique_name):
    prefix = f"{unique_name}-seq_"
    config = {**CONFIG, "topic.prefix": prefix}
    worker = kafka_worker(broker, tmp_path, unique_name)
    fields = kafka_worker_fields(broker.bootstrap, tmp_path, unique_name)
    rng, seed = seeded_random()
    kills = kill_rounds(fields, {CONNECTOR: config}, tmp_path, KILLS, lambda: min(stored_positions(worker).values()),
                        rng)

    driver = start_driver(spark, worker)
    try:
        target = min(stored_positions(worker).values()) + 3 * PER_BATCH
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
            f"{topic} (seed {seed}, kills at stored position/delay {kills}): {len(got)} committed records for "
            f"stored position {stored[k]}, duplicated {duplicates[:20]}, "
            f"missing {sorted(set(range(1, stored[k] + 1)) - set(got))[:20]}")
    fencing = [json.loads(v) for _, _, k, v in read_topic(broker.bootstrap, worker.config_topic)
               if k == f"tasks-fencing-{CONNECTOR}".encode()]
    assert fencing and fencing[-1] == {"task-count": 2}
