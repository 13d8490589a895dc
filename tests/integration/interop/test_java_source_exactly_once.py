"""A Java source connector exactly once (KIP-618): the tutorial's IncrementSourceConnector, compiled from
tests/plugins/java/increment onto a plugin.path, on a worker with ``exactly.once.source.support=enabled``.

The driver runs in its own session (``tests.driver_process``) and is SIGKILLed with everything it started at a random
moment while records flow, ``KILLS`` times on the same worker and checkpoint; a last driver runs on. Each topic, read
``read_committed``, must then hold every position from 1 to the stored offset exactly once, and the offsets are
Connect's (``{"increment": k}`` -> ``{"position": p}``), committed in each task's transaction.
"""

from __future__ import annotations

import collections
import json

import pytest

from sparkcat.config.worker import WorkerConfig
from sparkcat.model.config_state import TargetState
from tests.driver_process import kill_rounds, seeded_random
from tests.integration.runtime.test_exactly_once_source import stored_positions as runtime_positions
from tests.integration.runtime.test_driver import kafka_worker_fields, start_driver, states
from tests.java_plugins import INCREMENT_CONNECTOR, build_increment_plugin
from tests.kafka_helpers import create_topic, read_topic, wait_until

pytestmark = pytest.mark.integration

CONNECTOR = "java-eos"
KILLS = 2
PER_BATCH = 300
INCREMENTS = (1, 100)
STRINGS = "org.apache.kafka.connect.storage.StringConverter"
CONFIG = {"connector.class": INCREMENT_CONNECTOR, "increments": ",".join(map(str, INCREMENTS)), "tasks.max": "2",
          "records.per.poll": "100", "poll.interval.ms": "10", "batch.max.records": str(PER_BATCH),
          "trigger.interval.ms": "200", "value.converter": STRINGS}


def stored_positions(worker: WorkerConfig) -> dict[int, int]:
    return runtime_positions(worker, CONNECTOR, INCREMENTS)


def positions(bootstrap: str, topic: str, increment: int) -> list[int]:
    """The positions of the committed records of ``topic`` (value ``(p - 1) * k``), in order."""
    return [int(v) // increment + 1 for _, _, _, v in read_topic(bootstrap, topic, timeout_s=30)]


@pytest.mark.timeout(900)
def test_sigkilled_driver_restarts_a_java_source_with_every_record_exactly_once(spark, broker, tmp_path, unique_name):
    prefix = f"{unique_name}-seq_"
    for k in INCREMENTS:
        create_topic(broker.bootstrap, f"{prefix}{k}")
    plugins = build_increment_plugin(tmp_path / "plugins", tmp_path)
    fields = {**kafka_worker_fields(broker.bootstrap, tmp_path, unique_name), "plugin_path": [str(plugins)],
              "plugin_discovery": "service_load"}
    worker = WorkerConfig(**fields)
    config = {**CONFIG, "topic.prefix": prefix, "exactly.once.support": "required"}
    rng, seed = seeded_random()
    kills = kill_rounds(fields, {CONNECTOR: config}, tmp_path, KILLS, lambda: min(stored_positions(worker).values()),
                        rng)

    driver = start_driver(spark, worker)
    try:
        target = min(stored_positions(worker).values()) + 3 * PER_BATCH
        wait_until(lambda: min(stored_positions(worker).values()) >= target, timeout_s=180,
                   message=lambda: f"stored offsets to pass {target}: {stored_positions(worker)}")
        assert states(driver, CONNECTOR) == ("RUNNING", ["RUNNING", "RUNNING"])
        driver.herder.set_target_state(CONNECTOR, TargetState.STOPPED)  # its last batch commits, then it stops
        wait_until(lambda: CONNECTOR not in driver.herder.running_connectors(), timeout_s=120,
                   message="the query to stop")
    finally:
        driver.stop()

    stored = stored_positions(worker)
    for k in INCREMENTS:
        topic = f"{prefix}{k}"
        got = positions(broker.bootstrap, topic, k)
        duplicates = sorted(p for p, n in collections.Counter(got).items() if n > 1)
        assert got == list(range(1, stored[k] + 1)), (
            f"{topic} (seed {seed}, kills at stored position/delay {kills}): {len(got)} committed records for "
            f"stored position {stored[k]}, duplicated {duplicates[:20]}, "
            f"missing {sorted(set(range(1, stored[k] + 1)) - set(got))[:20]}")
    fencing = [json.loads(v) for _, _, key, v in read_topic(broker.bootstrap, worker.config_topic)
               if key == f"tasks-fencing-{CONNECTOR}".encode()]
    assert fencing and fencing[-1] == {"task-count": 2}
