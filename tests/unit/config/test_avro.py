"""AvroConverter in connector configs: accepted with its registry URL, every bad setting refused naming its key."""

from __future__ import annotations

import pytest

from sparkcat.converters import avro_data
from sparkcat.converters import AvroConverter, at_topic, converter_for, is_builtin_converter
from sparkcat.config.validation import validate_connector_config

AVRO = "io.confluent.connect.avro.AvroConverter"
SOURCE = {"name": "inc", "connector.class": "increment", "increments": "1"}
SINK = {"name": "out", "connector.class": "file-sink", "topics": "t", "file": "state/avro-out.txt"}
URL = "http://localhost:8081"


@pytest.mark.parametrize("name", [AVRO, "AvroConverter", "avro"])
def test_avro_converter_is_a_built_in_converter(name):
    assert is_builtin_converter(name)
    conv = converter_for({"value.converter": name, "value.converter.schema.registry.url": URL}, False)
    assert isinstance(conv, AvroConverter) and at_topic(conv, "orders").topic == "orders"


@pytest.mark.parametrize("base", [SOURCE, SINK])
@pytest.mark.parametrize("side", ["key", "value"])
def test_a_missing_registry_url_is_refused_naming_the_prefixed_key(base, side):
    errors = validate_connector_config({**base, f"{side}.converter": AVRO}).errors
    key = f"{side}.converter.schema.registry.url"
    assert list(errors) == [key]
    assert f"needs {key}" in errors[key][0]
    assert validate_connector_config({**base, f"{side}.converter": AVRO, key: URL}).errors == {}


def test_a_plain_schema_registry_url_is_no_converter_setting():
    errors = validate_connector_config({**SOURCE, "value.converter": AVRO, "schema.registry.url": URL}).errors
    assert set(errors) == {"schema.registry.url", "value.converter.schema.registry.url"}


def test_settings_nothing_implements_are_refused_not_ignored():
    errors = validate_connector_config({
        **SOURCE, "value.converter": AVRO, "value.converter.schema.registry.url": URL,
        "value.converter.normalize.schemas": "true", "value.converter.auto.register.schemas": "maybe",
        "value.converter.value.subject.name.strategy": "MyStrategy",
        "value.converter.basic.auth.credentials.source": "SASL_INHERIT"}).errors
    assert "is not implemented by sparkcat" in errors["value.converter.normalize.schemas"][0]
    assert "must be true or false" in errors["value.converter.auto.register.schemas"][0]
    assert "unknown subject name strategy 'MyStrategy'" in errors["value.converter.value.subject.name.strategy"][0]
    assert "USER_INFO" in errors["value.converter.basic.auth.credentials.source"][0]


def test_supported_settings_are_accepted():
    config = {**SINK, "key.converter": AVRO, "key.converter.schema.registry.url": URL,
              "key.converter.key.subject.name.strategy": "io.confluent.kafka.serializers.subject.RecordNameStrategy",
              "key.converter.auto.register.schemas": "false", "key.converter.use.latest.version": "true",
              "key.converter.basic.auth.credentials.source": "USER_INFO",
              "key.converter.basic.auth.user.info": "user:secret"}
    result = validate_connector_config(config)
    assert result.errors == {}
    assert "user:secret" not in str(result.response)


def test_without_fastavro_the_converter_key_names_the_package(monkeypatch):
    monkeypatch.setattr(avro_data, "AVRO_PACKAGES", ("fastavro", "sparkcat_no_such_package"))
    errors = validate_connector_config({**SOURCE, "value.converter": AVRO,
                                        "value.converter.schema.registry.url": URL}).errors
    assert "sparkcat_no_such_package" in errors["value.converter"][0]
    assert "fastavro" not in errors["value.converter"][0] and "sparkcat[avro]" in errors["value.converter"][0]


def test_the_delta_sink_still_refuses_avro_values():
    errors = validate_connector_config({"name": "d", "connector.class": "delta", "topics": "t",
                                        "table.path": "/tmp/sparkcat-delta-avro", "value.converter": AVRO,
                                        "value.converter.schema.registry.url": URL}).errors
    assert "value.converter" in errors
