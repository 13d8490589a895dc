"""The worker's key.converter / value.converter / header.converter: read, checked, inherited by connectors."""

from __future__ import annotations

import pytest

from sparkcat.config.validation import validate_connector_config
from sparkcat.config.worker import WorkerConfig, load_worker_config
from sparkcat.errors import ConfigError
from sparkcat.policy.input_policy import InputPolicy

STRING = "org.apache.kafka.connect.storage.StringConverter"
JSON = "org.apache.kafka.connect.json.JsonConverter"


def _worker(tmp_path, text: str) -> WorkerConfig:
    path = tmp_path / "worker.yaml"
    path.write_text(text)
    return load_worker_config(path)


def test_worker_converters_are_read_with_their_settings_and_connects_names(tmp_path):
    worker = _worker(tmp_path, "key.converter: string\nvalue.converter: " + JSON + "\n"
                               "value.converter.schemas.enable: false\nkey.converter.encoding: UTF-16\n")
    assert worker.converters == {"key.converter": STRING, "value.converter": JSON,
                                 "value.converter.schemas.enable": "false", "key.converter.encoding": "UTF-16"}


def test_without_worker_converters_nothing_is_inherited():
    assert WorkerConfig().converters == {}
    config = {"connector.class": "file-source", "topic": "t"}
    assert InputPolicy.of(WorkerConfig()).with_worker_converters(config) == config


@pytest.mark.parametrize("text, key", [
    ("value.converter: com.example.AvroLikeConverter\n", "value.converter"),
    ("header.converter: org.apache.kafka.connect.json.JsonConverter\n", "header.converter"),
    ("header.converter.foo: bar\n", "header.converter.foo"),
    ("value.converter: io.confluent.connect.avro.AvroConverter\n", "value.converter.schema.registry.url"),
])
def test_a_converter_sparkcat_does_not_have_is_an_error_naming_the_key(tmp_path, text, key):
    with pytest.raises(ConfigError) as e:
        _worker(tmp_path, text)
    assert key in e.value.errors and key in e.value.message and "worker.yaml" in e.value.message


def test_a_plugin_converter_in_plugin_packages_is_accepted(tmp_path):
    worker = _worker(tmp_path, "plugin.packages: [sparkcat.connectors, my_converters]\n"
                               "value.converter: my_converters.upper:UpperConverter\n")
    assert worker.converters == {"value.converter": "my_converters.upper:UpperConverter"}


def _policy(**converters: str) -> InputPolicy:
    keys = {k.replace("_", "."): v for k, v in converters.items()}
    classes = {k: v for k, v in keys.items() if k.count(".") == 1}
    worker = WorkerConfig(key_converter=classes.get("key.converter", ""),
                          value_converter=classes.get("value.converter", ""),
                          converter_settings={k: v for k, v in keys.items() if k not in classes})
    return InputPolicy.of(worker)


def test_a_connector_naming_none_inherits_the_workers_class_and_settings():
    policy = _policy(value_converter=STRING, value_converter_encoding="UTF-16")
    config = policy.with_worker_converters({"connector.class": "file-source", "topic": "t"})
    assert config["value.converter"] == STRING and config["value.converter.encoding"] == "UTF-16"
    assert "key.converter" not in config  # the worker names no key converter: sparkcat's default (JSON)


def test_a_connectors_own_class_takes_only_its_own_settings():
    policy = _policy(value_converter=STRING, value_converter_encoding="UTF-16")
    config = policy.with_worker_converters({"value.converter": JSON, "value.converter.schemas.enable": "false"})
    assert config == {"value.converter": JSON, "value.converter.schemas.enable": "false"}


def test_a_connectors_settings_without_a_class_apply_over_the_workers():
    policy = _policy(value_converter=STRING, value_converter_encoding="UTF-16")
    config = policy.with_worker_converters({"value.converter.encoding": "ISO-8859-1", "value.converter": ""})
    assert config == {"value.converter": STRING, "value.converter.encoding": "ISO-8859-1"}


def test_validation_checks_the_converters_the_connector_runs_with():
    """A worker's AvroConverter reaches a connector naming none: its Avro settings are checked as Avro's."""
    policy = _policy(value_converter="io.confluent.connect.avro.AvroConverter",
                     value_converter_schema_registry_url="http://registry:8081")
    config = {"name": "c", "connector.class": "file-source", "file": "state/in.txt", "topic": "t",
              "value.converter.normalize.schemas": "true"}
    assert "value.converter.normalize.schemas" in validate_connector_config(config, policy).errors
    errors = validate_connector_config(config, InputPolicy.default()).errors  # JsonConverter's: not one it takes
    assert "JsonConverter does not take it" in errors["value.converter.normalize.schemas"][0]


def test_the_kafka_copy_refuses_an_inherited_converter_naming_the_worker():
    from sparkcat.connectors.kafka_sink_settings import check_kafka_sink_config

    config = {"name": "c", "connector.class": "kafka", "topics": "a", "target.bootstrap.servers": "b:9092"}
    with pytest.raises(ConfigError, match="worker config") as e:
        check_kafka_sink_config(_policy(value_converter=JSON).with_worker_converters(config))
    assert "value.converter" in e.value.errors
