"""A worker file whose Kafka client settings carry role prefixes and security names runs every kind of client
(issue 27): the stores, leader election, a source writing to Kafka, a sink reading it, a native copy.

librdkafka refuses a name it does not know ("No such configuration property"), so before one module shared
the settings out, ``kafka.producer.acks`` stopped the stores' and leader election's admin clients, and a
Java name such as ``sasl.jaas.config`` every Python client. The security settings here are harmless on the
test broker's PLAINTEXT listener (``security.protocol: PLAINTEXT`` explicitly): real SASL/SSL is not set up.
"""

from __future__ import annotations

import pytest
import yaml

from sparkcat.bootstrap import Driver
from sparkcat.kafka.client_dialects import PLAIN_MODULE
from sparkcat.kafka.client_settings import consumer_settings
from sparkcat.kafka.sink_groups import committed_positions
from sparkcat.rest.cluster import ClusterInfo
from sparkcat.config.worker import load_worker_config
from tests.integration.runtime.test_driver import JSON_NO_SCHEMA, file_lines, states
from tests.kafka_helpers import create_topic, read_topic, wait_until

pytestmark = pytest.mark.integration

#: The worker file's kafka.* keys: one per role prefix, and security settings in the Java client's names.
CLIENT_SETTINGS = {
    "kafka.security.protocol": "PLAINTEXT",
    "kafka.sasl.mechanism": "PLAIN",
    "kafka.sasl.jaas.config": f'{PLAIN_MODULE} required username="sparkcat" password="unused";',
    "kafka.ssl.endpoint.identification.algorithm": "",
    "kafka.producer.acks": "all",
    "kafka.producer.linger.ms": "20",
    "kafka.consumer.fetch.min.bytes": "1",
    "kafka.admin.request.timeout.ms": "20000",
}
STRING = "org.apache.kafka.connect.storage.StringConverter"
RECORDS = 40


def test_role_prefixed_and_security_settings_reach_stores_leadership_source_sink_and_copy(spark, broker, tmp_path,
                                                                                           unique_name):
    path = tmp_path / "worker.yaml"
    path.write_text(yaml.safe_dump({
        "bootstrap.servers": broker.bootstrap, "state.dir": str(tmp_path / "state"),
        "config.storage.topic": f"{unique_name}-configs", "offset.storage.topic": f"{unique_name}-offsets",
        "status.storage.topic": f"{unique_name}-status", "file.allowed.dirs": str(tmp_path), **CLIENT_SETTINGS}))
    worker = load_worker_config(path)
    assert worker.kafka["producer.acks"] == "all" and worker.kafka["admin.request.timeout.ms"] == "20000"
    prefix = f"{unique_name}-n"
    topic, out = f"{prefix}1", tmp_path / "out.txt"
    create_topic(broker.bootstrap, topic, partitions=2)
    driver = Driver(spark, worker, rest=False, watch_pipelines=False)
    driver.start()
    try:
        assert driver.membership is not None and driver.herder.is_leader  # elected through the group
        assert ClusterInfo(worker).kafka_cluster_id()  # GET /'s admin client
        put = driver.herder.put_connector_config
        put("numbers", {"connector.class": "increment", "increments": "1", "topic.prefix": prefix,
                        "records.per.poll": "20", "trigger.interval.ms": "300", **JSON_NO_SCHEMA})
        put("to-file", {"connector.class": "file-sink", "file": str(out), "topics": topic, "value.converter": STRING,
                        "trigger.interval.ms": "300"})
        put("copy", {"connector.class": "kafka", "topics": topic, "tasks.max": "1", "trigger.interval.ms": "300"})
        wait_until(lambda: len(file_lines(out)) >= RECORDS, timeout_s=180, message="the sink's file")
        wait_until(lambda: len(read_topic(broker.bootstrap, f"{topic}.copy")) >= RECORDS, timeout_s=180,
                   message="the copy")
        group_conf = consumer_settings(broker.bootstrap, worker.kafka)
        wait_until(lambda: committed_positions(group_conf, "connect-to-file", [(topic, 0), (topic, 1)]),
                   message="the sink's positions in its consumer group")
        for name in ("numbers", "to-file", "copy"):
            wait_until(lambda name=name: states(driver, name) == ("RUNNING", ["RUNNING"]),
                       message=lambda name=name: f"{name} RUNNING: {states(driver, name)}")
    finally:
        driver.stop()
