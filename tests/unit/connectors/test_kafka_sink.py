"""The kafka sink's configuration, routing and producer settings (no broker; see the integration tests)."""

from __future__ import annotations

import pytest

from sparkcat.connectors.kafka_sink import (
    COPY_PRODUCER_DEFAULTS,
    KafkaSinkConnector,
    KafkaSinkTask,
    TopicRouter,
    copy_producer_config,
    target_topic,
)
from sparkcat.errors import ConfigError, ConnectorError
from sparkcat.plugins import connector_class
from sparkcat.runtime.validation import validate_connector_config


def test_aliases_resolve_to_the_connector():
    assert connector_class("kafka") is KafkaSinkConnector
    assert connector_class("kafka-sink") is KafkaSinkConnector
    assert connector_class("sparkcat.connectors.kafka_sink:KafkaSinkConnector") is KafkaSinkConnector


def test_validation_accepts_a_minimal_config_and_names_bad_keys():
    ok = validate_connector_config({"name": "c", "connector.class": "kafka", "topics": "a,b"})
    assert ok.errors == {}
    bad = validate_connector_config({"name": "c", "connector.class": "kafka", "topics": "a",
                                     "target.topic.format": "${source}.x", "target.topic.replication.factor": "x",
                                     "target.topc.format": "y"})
    assert set(bad.errors) == {"target.topic.format", "target.topic.replication.factor", "target.topc.format"}
    assert "only ${topic}" in bad.errors["target.topic.format"][0]
    illegal = validate_connector_config({"name": "c", "connector.class": "kafka", "topics": "a",
                                         "target.topic.format": "copy of ${topic}"})
    assert "target.topic.format" in illegal.errors
    assert "topics" in validate_connector_config({"name": "c", "connector.class": "kafka"}).errors


def test_task_configs_are_copies_with_task_ids():
    c = KafkaSinkConnector()
    c.start({"name": "c", "connector.class": "kafka", "topics": "a", "tasks.max": "3"})
    configs = c.task_configs(3)
    assert [t["task.id"] for t in configs] == ["0", "1", "2"]
    assert all(t["topics"] == "a" for t in configs)
    assert c.task_class() is KafkaSinkTask


@pytest.mark.parametrize("converter", ["org.apache.kafka.connect.json.JsonConverter", "string"])
def test_converters_other_than_bytes_are_refused(converter):
    with pytest.raises(ConfigError, match="copies keys and values as bytes"):
        KafkaSinkConnector().start({"name": "c", "topics": "a", "value.converter": converter})
    KafkaSinkConnector().start({"name": "c", "topics": "a",
                                "value.converter": "org.apache.kafka.connect.converters.ByteArrayConverter"})


def test_routing_and_the_self_feeding_guard():
    assert target_topic("${topic}.copy", "orders") == "orders.copy"
    assert target_topic("mirror.${topic}.${topic}", "o") == "mirror.o.o"
    assert target_topic("all", "o") == "all"
    same = TopicRouter("${topic}.copy", [], r"orders.*", same_cluster=True)
    with pytest.raises(ConnectorError, match="would feed itself"):
        same("orders")
    assert TopicRouter("${topic}.copy", [], r"orders.*", same_cluster=False)("orders") == "orders.copy"
    assert TopicRouter("${topic}.copy", ["orders"], None, same_cluster=True)("orders") == "orders.copy"
    with pytest.raises(ConnectorError):
        TopicRouter("${topic}", ["orders"], None, same_cluster=True)("orders")


def test_producer_settings_layering():
    conf = copy_producer_config({"producer.override.linger.ms": "7"}, "w:9092",
                                {"producer.acks": "1", "security.protocol": "SSL", "consumer.fetch.min.bytes": "9"})
    assert conf["bootstrap.servers"] == "w:9092"
    assert conf["linger.ms"] == "7"                     # override wins
    assert conf["acks"] == "1"                          # worker producer setting beats the default
    assert conf["security.protocol"] == "SSL"           # worker client setting applies on its own cluster
    assert "fetch.min.bytes" not in conf                # consumer settings do not
    assert conf["batch.size"] == COPY_PRODUCER_DEFAULTS["batch.size"]
    other = copy_producer_config({"target.bootstrap.servers": "t:9092"}, "w:9092", {"security.protocol": "SSL"})
    assert other["bootstrap.servers"] == "t:9092" and "security.protocol" not in other
    with pytest.raises(ConfigError):
        copy_producer_config({}, "", {})


def test_unstarted_task_refuses_work_and_values_must_be_bytes():
    from sparkcat.api.records import SinkRecord
    from sparkcat.connectors.kafka_sink import _raw

    with pytest.raises(ConnectorError, match="not started"):
        KafkaSinkTask().put([SinkRecord("t", 0, 0, value=b"x")])
    assert _raw(b"x", "value") == b"x" and _raw(None, "key") is None and _raw("é", "key") == "é".encode()
    assert _raw(bytearray(b"ab"), "value") == b"ab"
    with pytest.raises(ConnectorError, match="ByteArrayConverter"):
        _raw({"a": 1}, "value")
