"""A ``topics.regex`` sink picks up a topic created while it runs, and records it as an active topic."""

from __future__ import annotations

import pytest

from sparkcat.bootstrap import Driver
from tests.integration.interop.test_connect_topics import STRING, sparkcat_worker
from tests.kafka_helpers import create_topic, produce, wait_until

pytestmark = pytest.mark.integration


def test_regex_sink_reads_a_new_matching_topic_at_its_next_trigger(broker, spark, tmp_path, unique_name):
    first, later, out = f"{unique_name}-r-a", f"{unique_name}-r-b", tmp_path / "out.txt"
    create_topic(broker.bootstrap, first)
    produce(broker.bootstrap, first, [f"a{i}".encode() for i in range(10)])
    config = {"connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector", "file": str(out),
              "topics.regex": f"{unique_name}-r-.*", "value.converter": STRING, "key.converter": STRING,
              "trigger.interval.ms": "1000"}

    def lines() -> list[str]:
        return sorted(out.read_text().splitlines()) if out.exists() else []

    with Driver(spark, sparkcat_worker(broker.bootstrap, tmp_path, unique_name), rest=False,
                watch_pipelines=False) as driver:
        driver.herder.put_connector_config("regex", config)
        wait_until(lambda: lines() == sorted(f"a{i}" for i in range(10)), timeout_s=120, message="first topic")
        create_topic(broker.bootstrap, later)
        produce(broker.bootstrap, later, [f"b{i}".encode() for i in range(10)])
        # Spark's Kafka source lists topics at every trigger (1 s here): the next batches take the new topic.
        # A source that only found it at the consumer's metadata refresh (metadata.max.age.ms, 5 minutes) or
        # at a restart would not get here within the minute.
        wait_until(lambda: len(lines()) == 20, timeout_s=60, message="the new topic's records")
        assert lines() == sorted([f"a{i}" for i in range(10)] + [f"b{i}" for i in range(10)])
        wait_until(lambda: driver.herder.active_topics("regex") == sorted([first, later]), timeout_s=30,
                   message="both topics active")
