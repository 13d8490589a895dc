"""A sink connector whose topic does not exist yet waits for it, as a Kafka Connect sink's consumer does.

Spark's ``subscribe`` fails the query when a named topic is missing; sparkcat subscribes to a pattern
of exactly the listed names, so the topics that exist are read and a missing one once it is created.
"""

from __future__ import annotations

import pytest

from sparkcat.bootstrap import Driver
from tests.integration.runtime.test_recovery import FLAKY, lines, worker_for
from tests.kafka_helpers import create_topic, produce, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]


def test_a_sink_reads_its_topics_that_exist_and_a_missing_one_once_created(spark, broker, tmp_path, unique_name):
    present, later, out = f"{unique_name}-present", f"{unique_name}-later", tmp_path / "out"
    out.mkdir()
    create_topic(broker.bootstrap, present, partitions=1)
    produce(broker.bootstrap, present, [b"p%d" % i for i in range(5)])
    driver = Driver(spark, worker_for(broker, tmp_path, unique_name), rest=False, watch_pipelines=False)
    driver.start()
    try:
        driver.herder.put_connector_config("early", {
            "connector.class": FLAKY, "topics": f"{present},{later}", "tasks.max": "1", "out.dir": str(out),
            "trigger.interval.ms": "200"})
        wait_until(lambda: {f"p{i}" for i in range(5)} <= set(lines(out / "task-0.txt")), timeout_s=120,
                   message="the records of the topic that exists")
        tasks = driver.herder.connector_status("early")["tasks"]
        assert [t["state"] for t in tasks] == ["RUNNING"], tasks

        create_topic(broker.bootstrap, later, partitions=2)
        produce(broker.bootstrap, later, [b"v%d" % i for i in range(10)])
        wait_until(lambda: {f"v{i}" for i in range(10)} <= set(lines(out / "task-0.txt")), timeout_s=120,
                   message="the records of the topic created after the connector")
        tasks = driver.herder.connector_status("early")["tasks"]
        assert [t["state"] for t in tasks] == ["RUNNING"], tasks
    finally:
        driver.stop()
