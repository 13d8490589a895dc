"""MirrorMaker 2's own MirrorSourceConnector (connect-mirror 4.1.1 from ``plugin.path``) run by a sparkcat driver,
as a Connect user runs it in a Connect cluster instead of MirrorMaker's dedicated driver.

Source and target cluster are the test broker: the default replication policy copies topic T of the cluster
aliased ``src`` to ``src.T``. MirrorSourceConnector's tasks make their own consumer of the source cluster; the
connector makes its own admin clients (to find the topic's partitions and create the remote topic). Converters
are ByteArrayConverter, as MirrorMaker sets them, so keys, values and headers are copied byte for byte. The worker
runs twice, writing at least once (``exactly.once.source.support=disabled``), then exactly once (each task's batch
and MirrorSource's offsets in one transaction); with a clean stop and resume, both copy every record once.
Partitions added to the source topic are found by the connector's own scheduler thread, which asks for new task
configs through its ConnectorContext (``requestTaskReconfiguration``), as on Connect.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions

from sparkcat.bootstrap import Driver
from sparkcat.config.worker import WorkerConfig
from sparkcat.model.config_state import TargetState
from tests.java_plugins import connect_mirror_plugin
from tests.kafka_helpers import create_topic, end_offsets, ordered_producer_settings, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

MIRROR_SOURCE = "org.apache.kafka.connect.mirror.MirrorSourceConnector"
BYTES = "org.apache.kafka.connect.converters.ByteArrayConverter"
PARTITIONS = 4
PER_STEP = 20  # records per partition and step

Record = tuple[int, bytes | None, bytes | None, list[tuple[str, bytes]]]


@pytest.fixture(scope="module")
def plugins(tmp_path_factory) -> Path:
    """One plugin.path with connect-mirror for both drivers, so both use the JVM's one Connect host of that spec.

    Two hosts (two plugin.path values) in one JVM fail today when the same Python thread calls both: py4j caches
    methods by class name, and each host's ConnectHost is a class of its own loader ("object is not an instance of
    declaring class"); ConnectHosts should load every host from one class loader.
    """
    return connect_mirror_plugin(tmp_path_factory.mktemp("java-mirror-plugins"))


@pytest.fixture(scope="module", params=["disabled", "enabled"], ids=["at-least-once", "exactly-once"])
def driver(request, spark, broker, plugins, tmp_path_factory) -> Iterator[Driver]:
    """A driver with connect-mirror on its plugin.path, writing sources at least once, then exactly once."""
    name = f"mm-{uuid.uuid4().hex[:10]}"
    work = tmp_path_factory.mktemp("java-mirror")
    worker = WorkerConfig(state_dir=str(work / "state"), bootstrap_servers=broker.bootstrap,
                          config_topic=f"{name}-configs", offset_topic=f"{name}-offsets", status_topic=f"{name}-status",
                          exactly_once_source_support=request.param, plugin_path=[str(plugins)],
                          plugin_discovery="service_load")
    running = Driver(spark, worker, rest=False, watch_pipelines=False)
    running.start()
    try:
        yield running
    finally:
        running.stop()


def _produce(bootstrap: str, topic: str, first: int, count: int, partitions: int = PARTITIONS) -> list[Record]:
    """``count`` records to each partition, with binary values (not text: ByteArrayConverter keeps every byte),
    every tenth without a key, each with a header."""
    producer = Producer(ordered_producer_settings(bootstrap))
    sent = []
    for p in range(partitions):
        for i in range(first, first + count):
            key = None if i % 10 == 0 else f"key-{p}-{i}".encode()
            value = bytes([p, i % 256, 0, 255]) + f"value {i}".encode()
            headers = [("origin", f"p{p}".encode())]
            producer.produce(topic, key=key, value=value, partition=p, headers=headers)
            sent.append((p, key, value, headers))
    assert producer.flush(30) == 0
    return sent


def _records(bootstrap: str, topic: str) -> list[Record]:
    """Every committed record now in ``topic``, partition by partition, as (partition, key, value, headers)."""
    if topic not in _topics(bootstrap):
        return []
    ends = end_offsets(bootstrap, topic)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"test-{uuid.uuid4().hex}",
                         "enable.auto.commit": False, "enable.partition.eof": True})
    out: list[tuple[int, int, Record]] = []
    try:
        pending = {p for p, end in ends.items() if end > 0}
        consumer.assign([TopicPartition(topic, p, 0) for p in pending])
        deadline = time.monotonic() + 30
        while pending:
            assert time.monotonic() < deadline, f"{topic}: partitions {pending} not read to {ends} within 30 s"
            msg = consumer.poll(1)
            if msg is None:
                continue
            if msg.error() is not None:
                assert msg.error().code() == KafkaError._PARTITION_EOF, msg.error()
                pending.discard(msg.partition())
                continue
            if msg.offset() >= ends[msg.partition()] - 1:  # the end when the read began (a commit marker may follow)
                pending.discard(msg.partition())
            if msg.offset() < ends[msg.partition()]:
                out.append((msg.partition(), msg.offset(),
                            (msg.partition(), msg.key(), msg.value(), list(msg.headers() or []))))
    finally:
        consumer.close()
    return [r for _, _, r in sorted(out, key=lambda x: (x[0], x[1]))]


def _topics(bootstrap: str) -> set[str]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"test-{uuid.uuid4().hex}"})
    try:
        return set(consumer.list_topics(timeout=10).topics)
    finally:
        consumer.close()


def test_mirror_source_connector_copies_a_topic_with_two_tasks_and_resumes_from_mirrormakers_offsets(driver, broker):
    bootstrap, name = broker.bootstrap, f"mm-{uuid.uuid4().hex[:8]}"
    topic, remote = f"{name}-orders", f"src.{name}-orders"
    create_topic(bootstrap, topic, partitions=PARTITIONS)
    sent = _produce(bootstrap, topic, 0, PER_STEP)
    driver.herder.put_connector_config(name, _mirror_config(bootstrap, topic))
    _wait_running(driver, name)
    assert driver.herder.connector_status(name)["type"] == "source"  # as Connect says (no Python twin to ask)
    # MirrorSourceConnector hands each task its share of the topic's partitions
    assigned = [c["task.assigned.partitions"] for c in driver.herder.task_configs(name)]
    assert sorted(",".join(assigned).split(",")) == sorted(f"{topic}-{p}" for p in range(PARTITIONS))
    assert all(a.count(topic) == PARTITIONS // 2 for a in assigned), assigned
    _wait_copied(bootstrap, remote, len(sent))

    sent += _produce(bootstrap, topic, PER_STEP, PER_STEP)  # read by the same task instances, batch after batch
    _wait_copied(bootstrap, remote, len(sent))
    # MirrorMaker's own offsets: {cluster, topic, partition} -> {offset: the last offset copied}
    _wait_offsets(driver, name, topic, 2 * PER_STEP - 1)

    driver.herder.set_target_state(name, TargetState.STOPPED)
    wait_until(lambda: name not in driver.herder.running_connectors(), timeout_s=120, message=f"{name} to stop")
    sent += _produce(bootstrap, topic, 2 * PER_STEP, PER_STEP)
    driver.herder.set_target_state(name, TargetState.STARTED)  # new task instances, seeking past the stored offsets
    _wait_running(driver, name)
    _wait_copied(bootstrap, remote, len(sent))
    _wait_offsets(driver, name, topic, 3 * PER_STEP - 1)
    # Partition for partition, in order, each record once: keys, binary values and headers as produced
    assert _records(bootstrap, remote) == sorted(sent, key=lambda r: r[0])


def test_partitions_added_to_the_source_topic_are_mirrored_once_the_connector_asks_for_new_task_configs(driver,
                                                                                                      broker):
    """MirrorSourceConnector finds new partitions on a scheduler thread of its own and calls
    ``requestTaskReconfiguration`` from there; sparkcat then regenerates the task configs and restarts the tasks."""
    bootstrap, name = broker.bootstrap, f"mm-{uuid.uuid4().hex[:8]}"
    topic, remote = f"{name}-grow", f"src.{name}-grow"
    create_topic(bootstrap, topic, partitions=PARTITIONS)
    sent = _produce(bootstrap, topic, 0, PER_STEP)
    driver.herder.put_connector_config(name, _mirror_config(bootstrap, topic))
    _wait_running(driver, name)
    _wait_copied(bootstrap, remote, len(sent))

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_partitions([NewPartitions(topic, PARTITIONS + 2)]).values():
        future.result(timeout=30)
    wait_until(lambda: sorted(",".join(c["task.assigned.partitions"] for c in driver.herder.task_configs(name))
                              .split(",")) == sorted(f"{topic}-{p}" for p in range(PARTITIONS + 2)), timeout_s=60,
               message=lambda: f"task configs with 6 partitions: {driver.herder.task_configs(name)}")
    _wait_running(driver, name)
    sent += _produce(bootstrap, topic, PER_STEP, PER_STEP, partitions=PARTITIONS + 2)
    _wait_copied(bootstrap, remote, len(sent))
    assert _records(bootstrap, remote) == sorted(sent, key=lambda r: r[0])


def _mirror_config(bootstrap: str, topic: str) -> dict[str, str]:
    """MirrorSourceConnector copying ``topic`` of the cluster ``src`` to ``src.TOPIC`` of the same broker, two tasks."""
    return {"connector.class": MIRROR_SOURCE, "tasks.max": "2",
            "source.cluster.alias": "src", "target.cluster.alias": "dst",
            "source.cluster.bootstrap.servers": bootstrap, "target.cluster.bootstrap.servers": bootstrap,
            "topics": topic, "replication.factor": "1", "heartbeats.replication.enabled": "false",
            "sync.topic.acls.enabled": "false", "sync.topic.configs.enabled": "false",
            "emit.offset-syncs.enabled": "false", "refresh.topics.interval.seconds": "1",
            "consumer.poll.timeout.ms": "200",
            "key.converter": BYTES, "value.converter": BYTES, "header.converter": BYTES,
            "trigger.interval.ms": "300"}


def _wait_running(driver: Driver, name: str) -> None:
    def running() -> bool:
        status = driver.herder.connector_status(name)
        return status["connector"]["state"] == "RUNNING" and len(status["tasks"]) == 2 \
            and all(t["state"] == "RUNNING" for t in status["tasks"])
    wait_until(running, timeout_s=120, message=lambda: f"two RUNNING tasks: {driver.herder.connector_status(name)}")


def _wait_copied(bootstrap: str, remote: str, count: int) -> None:
    wait_until(lambda: len(_records(bootstrap, remote)) >= count, timeout_s=120,
               message=lambda: f"{count} records in {remote}, found {len(_records(bootstrap, remote))}")


def _wait_offsets(driver: Driver, name: str, topic: str, last: int) -> None:
    expected = [({"cluster": "src", "partition": p, "topic": topic}, {"offset": last}) for p in range(PARTITIONS)]
    wait_until(lambda: sorted(driver.herder.connector_offsets(name), key=lambda x: x[0]["partition"]) == expected,
               timeout_s=60, message=lambda: f"offsets at {last}: {driver.herder.connector_offsets(name)}")
