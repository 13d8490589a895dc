"""Config log, offsets and status stores on real Kafka topics (Apache Kafka), as a restarted driver sees them."""

from __future__ import annotations

import pytest

from sparkcat.model.config_state import TargetState
from sparkcat.model.status import State, Status
from sparkcat.config.worker import WorkerConfig
from sparkcat.config.stores import open_stores
from sparkcat.storage.kafka.log import KafkaLog

pytestmark = pytest.mark.integration


def worker(broker, name: str) -> WorkerConfig:
    return WorkerConfig(bootstrap_servers=broker.bootstrap, config_topic=f"{name}-configs",
                        offset_topic=f"{name}-offsets", status_topic=f"{name}-status")


def test_stores_survive_a_restart_on_kafka_topics(broker, unique_name):
    stores = open_stores(worker(broker, unique_name))
    stores.config.put_connector_config("inc", {"connector.class": "increment", "increments": "1"},
                                       TargetState.PAUSED)
    stores.config.put_task_configs("inc", [{"increments": "1"}])
    stores.offsets.put("inc", [({"increment": 1}, {"position": 3471})])
    stores.status.put(Status("inc", 0, State.RUNNING, "host:1", 5))
    stores.close()

    again = open_stores(worker(broker, unique_name))
    try:
        state = again.config.snapshot()
        assert state.connectors() == ["inc"]
        assert state.target_state("inc") == TargetState.PAUSED
        assert state.all_task_configs("inc") == [{"increments": "1"}]
        assert again.offsets.get("inc") == {'{"increment":1}': {"position": 3471}}
        assert again.status.get_task("inc", 0).worker_id == "host:1"
        # A late write from an older generation does not win.
        assert again.status.put(Status("inc", 0, State.FAILED, "old:1", 4)) is False
        assert again.status.get_task("inc", 0).state == State.RUNNING
    finally:
        again.close()


def test_config_topic_written_as_kafka_connect_writes_it(broker, unique_name):
    topic = f"{unique_name}-configs"
    raw = KafkaLog(broker.bootstrap, topic)
    raw.append([
        ("connector-local-file-source", b'{"properties":{"connector.class":"FileStreamSource","tasks.max":"1",'
                                        b'"file":"test.txt","topic":"connect-test","name":"local-file-source"}}'),
        ("task-local-file-source-0", b'{"properties":{"file":"test.txt","topic":"connect-test",'
                                     b'"task.class":"org.apache.kafka.connect.file.FileStreamSourceTask"}}'),
        ("commit-local-file-source", b'{"tasks":1}'),
        ("target-state-local-file-source", b'{"state":"PAUSED","state.v2":"PAUSED"}'),
    ])
    raw.close()
    stores = open_stores(worker(broker, unique_name))
    try:
        state = stores.config.snapshot()
        assert state.connector_config("local-file-source")["file"] == "test.txt"
        assert state.task_ids("local-file-source") == [0]
        assert state.target_state("local-file-source") == TargetState.PAUSED
    finally:
        stores.close()


def test_offsets_topic_records_are_byte_compatible_with_connect(broker, unique_name):
    stores = open_stores(worker(broker, unique_name))
    stores.offsets.put("kafka-connect-increment", [({"increment": 1}, {"position": 3471})])
    stores.close()
    records = KafkaLog(broker.bootstrap, f"{unique_name}-offsets", multi_partition=True).read()
    assert [(r.key, r.value) for r in records] == [
        ('["kafka-connect-increment",{"increment":1}]', b'{"position":3471}')]


def test_internal_topics_are_created_with_the_configured_replication_factor(broker, unique_name):
    from confluent_kafka.admin import AdminClient

    for factor in (-1, 1):
        name = f"{unique_name}-rf{factor + 1}"
        stores = open_stores(WorkerConfig(bootstrap_servers=broker.bootstrap, config_topic=f"{name}-configs",
                                          offset_topic=f"{name}-offsets", status_topic=f"{name}-status",
                                          config_replication_factor=factor, offset_replication_factor=factor,
                                          status_replication_factor=factor))
        try:
            stores.config.put_target_state("x", TargetState.PAUSED)
            stores.offsets.put("x", [({"p": 1}, {"o": 1})])
            stores.status.put(Status("x", None, State.RUNNING, "w", 1))
        finally:
            stores.close()
        topics = AdminClient({"bootstrap.servers": broker.bootstrap}).list_topics(timeout=30).topics
        # Connect's partition counts: config 1, offsets 25, status 5 (offset/status.storage.partitions)
        for suffix, count in (("configs", 1), ("offsets", 25), ("status", 5)):
            meta = topics[f"{name}-{suffix}"]
            assert len(meta.partitions) == count and len(meta.partitions[0].replicas) == 1  # a one-broker cluster


def replicas_of(bootstrap: str, topic: str) -> int:
    """Replicas of partition 0, once every broker's metadata has the new topic's partition."""
    from confluent_kafka.admin import AdminClient

    from tests.kafka_helpers import wait_until
    admin = AdminClient({"bootstrap.servers": bootstrap})
    found: list[int] = []

    def listed() -> bool:  # all topics: a metadata request naming the topic would auto-create it
        metadata = admin.list_topics(timeout=10).topics.get(topic)
        partitions = metadata.partitions if metadata is not None else {}
        found[:] = [len(partitions[0].replicas)] if 0 in partitions else []
        return bool(found)
    wait_until(listed, timeout_s=30, message=f"metadata of {topic}")
    return found[0]


def use(stores) -> None:
    """Write to each store (topics are created on first use), then close them."""
    try:
        stores.config.put_connector_config("inc", {"connector.class": "increment", "increments": "1"},
                                           TargetState.STARTED)
        stores.offsets.put("inc", [({"increment": 1}, {"position": 1})])
        stores.status.put(Status("inc", 0, State.RUNNING, "host:1", 1))
    finally:
        stores.close()


def test_internal_topics_take_the_brokers_replication_unless_a_factor_is_set(kafka_cluster, unique_name):
    """On three brokers, -1 (the default) gives the broker's default of 3; Connect's keys set their own."""
    use(open_stores(worker(kafka_cluster, unique_name)))
    assert [replicas_of(kafka_cluster.bootstrap, f"{unique_name}-{kind}")
            for kind in ("configs", "offsets", "status")] == [3, 3, 3]

    other = f"{unique_name}-set"
    configured = worker(kafka_cluster, other).with_overrides(
        config_replication_factor=2, offset_replication_factor=1, status_replication_factor=2)
    use(open_stores(configured))
    assert [replicas_of(kafka_cluster.bootstrap, f"{other}-{kind}")
            for kind in ("configs", "offsets", "status")] == [2, 1, 2]
