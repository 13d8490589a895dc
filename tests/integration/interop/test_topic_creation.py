"""KIP-158 and KIP-558 for source connectors on the suite's broker: a source's tasks create its topics with the
settings of the group that takes each one, and GET /connectors/NAME/topics lists the topics it wrote to. Python
sources here, and a Java one from plugin.path (Apache's FileStreamSource) next to a real Kafka Connect 4.1.1 worker
running the same connector.

The broker's own default is one partition (tests/broker.py), so a topic's partition count tells who made it.
"""

from __future__ import annotations

import dataclasses
import json
import urllib.request

import pytest

from sparkcat.bootstrap import Driver
from tests.broker import free_port
from tests.connect_worker import ConnectWorker
from tests.integration.interop.test_connect_topics import FILE_SOURCE, STRING, sparkcat_worker
from tests.java_plugins import connect_file_plugin
from tests.kafka_helpers import read_topic, wait_until

pytestmark = pytest.mark.integration


def _describe(bootstrap: str, topic: str) -> tuple[int, dict[str, str]]:
    """The topic's partition count and the configs set on it (not the broker's defaults), by AdminClient."""
    from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource
    admin = AdminClient({"bootstrap.servers": bootstrap})
    partitions = len(admin.list_topics(topic, timeout=10).topics[topic].partitions)
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    entries = admin.describe_configs([resource])[resource].result(timeout=10)
    own = {k: e.value for k, e in entries.items() if e.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value}
    return partitions, own


def _increment(prefix: str, increments: str, **extra: str) -> dict[str, str]:
    return {"connector.class": "increment", "increments": increments, "topic.prefix": prefix, "tasks.max": "1",
            "records.per.poll": "5", "trigger.interval.ms": "500", **extra}


@pytest.mark.parametrize("exactly_once", ["enabled", "disabled"])  # transactional tasks, and at least once
def test_a_sources_topics_take_their_groups_settings_and_are_listed_as_its_topics(broker, spark, tmp_path,
                                                                                   unique_name, exactly_once):
    grouped, plain = f"{unique_name}-t", f"{unique_name}-plain"
    creation = {"topic.creation.groups": "big",
                "topic.creation.big.include": rf"{unique_name}-t[12]",
                "topic.creation.big.exclude": r".*-t2",
                "topic.creation.big.partitions": "3",
                "topic.creation.big.retention.ms": "3600000",
                "topic.creation.big.compression.type": "gzip",
                "topic.creation.default.replication.factor": "1",
                "topic.creation.default.partitions": "2",
                "topic.creation.default.cleanup.policy": "delete"}
    worker = dataclasses.replace(sparkcat_worker(broker.bootstrap, tmp_path, unique_name), rest_host="127.0.0.1",
                                 rest_port=free_port(), exactly_once_source_support=exactly_once)
    url = f"http://127.0.0.1:{worker.rest_port}"
    with Driver(spark, worker, rest=True, watch_pipelines=False) as driver:
        driver.herder.put_connector_config("grouped", _increment(grouped, "1,2,3", **creation))
        driver.herder.put_connector_config("plain", _increment(plain, "1"))  # no topic.creation.*: the broker's
        driver.herder.put_connector_config("unmakeable", _increment(f"{unique_name}-three", "1", **{
            "topic.creation.default.replication.factor": "3", "topic.creation.default.partitions": "1"}))
        topics = [f"{grouped}1", f"{grouped}2", f"{grouped}3"]
        for topic in [*topics, f"{plain}1"]:
            wait_until(lambda t=topic: len(read_topic(broker.bootstrap, t)) >= 5, timeout_s=180,
                       message=f"records in {topic}")

        assert _describe(broker.bootstrap, f"{grouped}1") == (3, {"retention.ms": "3600000",
                                                                  "compression.type": "gzip"})
        # excluded by big: the default group takes it, as Connect's findFirstGroup does
        assert _describe(broker.bootstrap, f"{grouped}2") == (2, {"cleanup.policy": "delete"})
        assert _describe(broker.bootstrap, f"{grouped}3") == (2, {"cleanup.policy": "delete"})
        assert _describe(broker.bootstrap, f"{plain}1") == (1, {})  # auto-created by the broker

        def failed_trace() -> str | None:
            task = (driver.herder.connector_status("unmakeable")["tasks"] or [{}])[0]
            return task.get("trace") if task.get("state") == "FAILED" else None

        trace = wait_until(failed_trace, timeout_s=120, message="the task that cannot create its topic FAILED")
        assert f"Task failed to create new topic {{name={unique_name}-three1, numPartitions=1, replicationFactor=3" \
            in str(trace), trace  # one broker: replication factor 3 is refused, and the task fails with its reason

        def listed(name: str) -> list[str]:
            with urllib.request.urlopen(f"{url}/connectors/{name}/topics", timeout=10) as r:
                return json.loads(r.read())[name]["topics"]

        wait_until(lambda: listed("grouped") == topics, timeout_s=60, message="grouped's active topics")
        wait_until(lambda: listed("plain") == [f"{plain}1"], timeout_s=60, message="plain's active topics")
        reset = urllib.request.Request(f"{url}/connectors/plain/topics/reset", method="PUT")
        assert urllib.request.urlopen(reset, timeout=10).status == 202
        # the next batches send to the topic again and, as a Connect worker does (WorkerTask.recordActiveTopic
        # asks its status store), a topic the status topic no longer lists is recorded again
        wait_until(lambda: listed("plain") == [f"{plain}1"], timeout_s=60, message="plain's topic back after reset")


def _replication(bootstrap: str, topic: str) -> int:
    from confluent_kafka.admin import AdminClient
    partitions = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=10).topics[topic].partitions
    return len(partitions[0].replicas)


def _topics(url: str, name: str) -> list[str]:
    with urllib.request.urlopen(f"{url}/connectors/{name}/topics", timeout=10) as r:
        return json.loads(r.read())[name]["topics"]


def test_a_java_sources_topic_is_created_and_listed_as_a_connect_workers_is(broker, spark, tmp_path, unique_name):
    """FileStreamSource from plugin.path with a creation group: its topic has the group's partitions, replication
    and configs, the same as the topic a Connect 4.1.1 worker creates for the same connector, and both runtimes
    list it as the connector's topic."""
    creation = {"topic.creation.groups": "lines",
                "topic.creation.lines.include": rf"{unique_name}-.*-lines",
                "topic.creation.lines.partitions": "3",
                "topic.creation.lines.replication.factor": "1",
                "topic.creation.lines.cleanup.policy": "delete",
                "topic.creation.lines.retention.ms": "3600000",
                "topic.creation.default.replication.factor": "1",
                "topic.creation.default.partitions": "2"}
    source = tmp_path / "in.txt"
    source.write_text("".join(f"line {i}\n" for i in range(20)), encoding="utf-8")

    def connector(topic: str) -> dict[str, str]:
        return {"connector.class": FILE_SOURCE, "tasks.max": "1", "file": str(source), "topic": topic,
                "key.converter": STRING, "value.converter": STRING, **creation}

    theirs, ours = f"{unique_name}-connect-lines", f"{unique_name}-sparkcat-lines"
    with ConnectWorker(broker.bootstrap, f"{unique_name}-c", log_dir=tmp_path / "connect") as connect:
        connect.request("POST", "/connectors", {"name": "fs", "config": connector(theirs)})
        wait_until(lambda: len(read_topic(broker.bootstrap, theirs)) >= 20, timeout_s=120,
                   message=f"Connect's records in {theirs}")
        connect.wait_for(lambda: connect.request("GET", "/connectors/fs/topics") == {"fs": {"topics": [theirs]}},
                         "Connect's active topic")

    plugins = connect_file_plugin(tmp_path / "plugins")
    worker = dataclasses.replace(sparkcat_worker(broker.bootstrap, tmp_path, unique_name), rest_host="127.0.0.1",
                                 rest_port=free_port(), exactly_once_source_support="disabled",
                                 plugin_path=[str(plugins)], plugin_discovery="service_load")
    url = f"http://127.0.0.1:{worker.rest_port}"
    with Driver(spark, worker, rest=True, watch_pipelines=False) as driver:
        body = json.dumps({"name": "fs", "config": connector(ours)}).encode()
        create = urllib.request.Request(f"{url}/connectors", body, {"Content-Type": "application/json"})
        assert urllib.request.urlopen(create, timeout=30).status == 201  # the keys Connect takes are taken
        wait_until(lambda: len(read_topic(broker.bootstrap, ours)) >= 20, timeout_s=180,
                   message=f"sparkcat's records in {ours}")
        wait_until(lambda: _topics(url, "fs") == [ours], timeout_s=60, message="sparkcat's active topic")
        driver.herder.put_connector_config("unmakeable", {  # one broker: replication factor 3 cannot be had
            **connector(f"{unique_name}-three"), "topic.creation.default.replication.factor": "3"})

        def failed_trace() -> str | None:
            task = (driver.herder.connector_status("unmakeable")["tasks"] or [{}])[0]
            return task.get("trace") if task.get("state") == "FAILED" else None

        trace = wait_until(failed_trace, timeout_s=120, message="the task that cannot create its topic FAILED")
        # Connect's TopicAdmin.createOrFindTopics raises this itself, so a Connect worker's task fails the same way
        assert f"ConnectException: Unable to create topic(s) '{unique_name}-three': Unable to replicate the " \
            "partition 3 time(s)" in str(trace), trace

    expected = (3, {"cleanup.policy": "delete", "retention.ms": "3600000"})  # the broker's default: 1 partition
    assert _describe(broker.bootstrap, ours) == _describe(broker.bootstrap, theirs) == expected
    assert _replication(broker.bootstrap, ours) == _replication(broker.bootstrap, theirs) == 1
