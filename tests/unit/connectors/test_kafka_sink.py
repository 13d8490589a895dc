"""The kafka sink's configuration, routing and producer settings (no broker; see the integration tests)."""

from __future__ import annotations

import pytest

from sparkcat.connectors.kafka_sink import (
    KafkaSinkConnector,
    KafkaSinkTask,
    TopicRouter,
    producer_overrides,
    target_servers,
    target_topic,
)
from sparkcat.errors import ConfigError, ConnectorError
from sparkcat.plugins import connector_class
from sparkcat.config.validation import validate_connector_config


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


def test_producer_overrides_the_java_writer_cannot_honour_are_refused_by_name():
    assert producer_overrides({"producer.override.linger.ms": "7", "topics": "a"}) == {"linger.ms": "7"}
    with pytest.raises(ConfigError) as refused:
        producer_overrides({"producer.override.transactional.id": "x", "producer.override.key.serializer": "y",
                            "producer.override.message.timeout.ms": "5"})
    assert set(refused.value.errors) == {"producer.override.transactional.id", "producer.override.key.serializer",
                                         "producer.override.message.timeout.ms"}
    assert "use producer.override.delivery.timeout.ms" in refused.value.errors["producer.override.message.timeout.ms"][0]
    with pytest.raises(ConfigError, match="transactional.id"):  # at connector start, before any query
        KafkaSinkConnector().start({"name": "c", "topics": "a", "producer.override.transactional.id": "x"})


def test_target_servers_default_to_the_worker_and_one_is_needed():
    assert target_servers({}, "w:9092") == "w:9092"
    assert target_servers({"target.bootstrap.servers": " t:9092 "}, "w:9092") == "t:9092"
    with pytest.raises(ConfigError):
        target_servers({}, "")


def test_the_copy_is_a_native_sink_and_its_task_never_takes_records_through_put():
    from sparkcat.api.connector import SinkConnector
    from sparkcat.api.records import SinkRecord

    assert KafkaSinkConnector.native_write is not SinkConnector.native_write
    task = KafkaSinkTask()
    task.start({"name": "c", "topics": "a"})
    with pytest.raises(ConnectorError, match="never through put"):
        task.put([SinkRecord("t", 0, 0, value=b"x")])


@pytest.mark.parametrize("key,value,named", [("trigger.mode", "realtime", "trigger.mode"),
                                             ("async.progress.tracking.enabled", "true",
                                              "async.progress.tracking.enabled")])
def test_an_exactly_once_copy_refuses_what_only_spark_kafka_sink_does(key, value, named):
    config = {"name": "c", "connector.class": "kafka", "topics": "a", "exactly.once.support": "required", key: value}
    with pytest.raises(ConfigError) as refused:
        KafkaSinkConnector().start(config)
    assert named in refused.value.errors
    at_least_once = {**config, "exactly.once.support": "requested"}
    KafkaSinkConnector().start(at_least_once)
    assert validate_connector_config(at_least_once).errors == {}
    assert validate_connector_config({**at_least_once, "trigger.mode": "sometimes"}).errors.keys() == {"trigger.mode"}


def test_a_source_naming_the_copy_in_sink_keys_is_refused_clearly():
    errors = validate_connector_config({"name": "s", "connector.class": "increment", "sink.connector.class": "kafka",
                                        "sink.topics": "a"}).errors
    assert "writes to Kafka by default" in errors["sink.connector.class"][0]
