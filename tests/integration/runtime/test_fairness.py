"""One connector stuck in a slow ``put`` does not hold back another connector's batches on the same driver.

Kafka Connect runs each task on its own thread, so a slow task delays only itself. On a sparkcat
driver each connector is its own streaming query in the fair scheduler pools: while the slow sink's
one task sits in ``put`` (holding one of local[2]'s two cores), a second sink keeps committing
batch after batch; the slow sink's records arrive once it is released.
"""

from __future__ import annotations


import pytest

from sparkcat.bootstrap import Driver
from tests.integration.runtime.test_recovery import FLAKY, lines, worker_for
from tests.kafka_helpers import create_topic, produce, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

SLOW = "tests.integration.runtime.slow_sink:SlowSinkConnector"


def test_a_sink_stuck_in_put_does_not_hold_back_another_connector(spark, broker, tmp_path, unique_name):
    slow_topic, fast_topic = f"{unique_name}-slow", f"{unique_name}-fast"
    for topic in (slow_topic, fast_topic):
        create_topic(broker.bootstrap, topic, partitions=1)
    entered, release, slow_out = tmp_path / "entered", tmp_path / "release", tmp_path / "slow.txt"
    fast_out = tmp_path / "fast"
    fast_out.mkdir()
    driver = Driver(spark, worker_for(broker, tmp_path, unique_name), rest=False, watch_pipelines=False)
    driver.start()
    try:
        produce(broker.bootstrap, slow_topic, [b"s%d" % i for i in range(10)])
        driver.herder.put_connector_config("slow", {
            "connector.class": SLOW, "topics": slow_topic, "tasks.max": "1", "out.file": str(slow_out),
            "entered.file": str(entered), "release.file": str(release), "trigger.interval.ms": "200"})
        wait_until(lambda: entered.exists(), timeout_s=120, message="the slow sink inside put")
        driver.herder.put_connector_config("fast", {
            "connector.class": FLAKY, "topics": fast_topic, "tasks.max": "1", "out.dir": str(fast_out),
            "trigger.interval.ms": "200"})
        for round_ in range(3):  # three separate batches: each round's records arrive before the next is sent
            values = [f"f{round_}-{i}" for i in range(5)]
            produce(broker.bootstrap, fast_topic, [v.encode() for v in values])
            wait_until(lambda: set(values) <= set(lines(fast_out / "task-0.txt")), timeout_s=120,
                       message=f"round {round_} of the fast sink while the slow one is in put")
        # a batch is counted once its handler returns, after put wrote the file: wait for the third count
        wait_until(lambda: _batches(driver, "fast") >= 3, timeout_s=30, message="the fast sink's third batch")
        assert not slow_out.exists() and not release.exists()  # the slow batch was held all along
        release.touch()
        wait_until(lambda: set(lines(slow_out)) == {f"s{i}" for i in range(10)}, timeout_s=120,
                   message="the slow sink's records once released")
    finally:
        release.touch()
        driver.stop()


def _batches(driver: Driver, name: str) -> int:
    rt = driver.reconciler.lifecycles.get(name)
    return 0 if rt is None else rt.batches.progress.batches
