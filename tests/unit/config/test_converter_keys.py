"""Each key.converter.* / value.converter.* setting is one its converter takes, or an error naming it."""

from __future__ import annotations

import pytest

from sparkcat.config.validation import validate_connector_config
from sparkcat.config.worker import WorkerConfig, load_worker_config
from sparkcat.converters import JsonConverter
from sparkcat.errors import ConfigError
from sparkcat.policy.input_policy import InputPolicy

STRING = "org.apache.kafka.connect.storage.StringConverter"
JSON = "org.apache.kafka.connect.json.JsonConverter"
SOURCE = {"name": "s", "connector.class": "file-source", "topic": "t", "file": "state/in.txt"}


def _errors(config: dict, policy: InputPolicy | None = None) -> dict[str, list[str]]:
    return validate_connector_config({**SOURCE, **config}, policy).errors


def test_a_typo_in_a_json_converter_setting_is_refused_naming_the_key():
    errors = _errors({"value.converter": JSON, "value.converter.schemas.enabel": "false"})
    assert list(errors) == ["value.converter.schemas.enabel"]
    assert JSON in errors["value.converter.schemas.enabel"][0]
    assert "value.converter.schemas.enable" in errors["value.converter.schemas.enabel"][0]  # the one it takes


def test_settings_without_a_converter_are_checked_against_json_the_default():
    assert list(_errors({"key.converter.schemas.enabel": "false"})) == ["key.converter.schemas.enabel"]


@pytest.mark.parametrize("value", ["yes", "0", "flase"])
def test_a_non_boolean_schemas_enable_is_an_error_not_false(value):
    errors = _errors({"value.converter.schemas.enable": value})
    assert "Expected value to be either true or false" in errors["value.converter.schemas.enable"][0]
    with pytest.raises(ConfigError, match="schemas.enable"):
        JsonConverter().configure({"schemas.enable": value}, is_key=False)


def test_json_converter_settings_connect_defines_are_accepted_and_checked():
    assert _errors({"value.converter.schemas.enable": "FALSE", "value.converter.schemas.cache.size": "10",
                    "value.converter.decimal.format": "numeric"}) == {}
    assert _errors({"value.converter.replace.null.with.default": "false"}) == {}
    errors = _errors({"value.converter.replace.null.with.default": "no"})
    assert "Expected value to be either true or false" in errors["value.converter.replace.null.with.default"][0]
    assert "value.converter.decimal.format" in _errors({"value.converter.decimal.format": "TEXT"})


@pytest.mark.parametrize("converter, key", [
    (STRING, "value.converter.schemas.enable"),
    ("org.apache.kafka.connect.converters.ByteArrayConverter", "value.converter.encoding"),
    ("org.apache.kafka.connect.converters.LongConverter", "value.converter.schemas.enable"),
    (JSON, "value.converter.converter.type"),
])
def test_a_setting_the_chosen_converter_does_not_take_is_refused(converter, key):
    errors = _errors({"value.converter": converter, key: "false"})
    assert list(errors) == [key]


def test_string_converter_encoding_is_accepted():
    assert _errors({"value.converter": STRING, "value.converter.converter.encoding": "UTF-16"}) == {}


def test_settings_are_checked_against_the_converter_inherited_from_the_worker():
    """The worker's StringConverter reaches a connector naming none: a JsonConverter setting is refused there."""
    worker = WorkerConfig(value_converter=STRING, converter_settings={"value.converter.converter.encoding": "UTF-8"})
    errors = _errors({"value.converter.schemas.enable": "false"}, InputPolicy.of(worker))
    assert list(errors) == ["value.converter.schemas.enable"] and STRING in errors["value.converter.schemas.enable"][0]
    assert _errors({"value.converter": JSON, "value.converter.schemas.enable": "false"}, InputPolicy.of(worker)) == {}


def test_a_bad_worker_converter_setting_stops_the_worker_naming_it(tmp_path):
    path = tmp_path / "worker.yaml"
    path.write_text("value.converter: string\nvalue.converter.schemas.enable: false\n")
    with pytest.raises(ConfigError) as e:
        load_worker_config(path)
    assert "value.converter.schemas.enable" in e.value.errors and STRING in e.value.message


def test_a_plugin_converter_declaring_its_settings_has_them_checked():
    policy = InputPolicy.of(WorkerConfig(plugin_packages=["sparkcat.connectors", "tests.unit.config"]))
    upper = {"value.converter": "tests.unit.config.declaring_converter:UpperConverter"}
    assert _errors({**upper, "value.converter.strip": "true"}, policy) == {}
    errors = _errors({**upper, "value.converter.strp": "true", "value.converter.strip": "maybe"}, policy)
    assert set(errors) == {"value.converter.strp", "value.converter.strip"}
    assert "tests.unit.config.declaring_converter:UpperConverter does not take it" in errors["value.converter.strp"][0]


def test_schemas_enable_given_to_avro_converter_is_refused_not_ignored():
    errors = _errors({"value.converter": "io.confluent.connect.avro.AvroConverter",
                      "value.converter.schema.registry.url": "http://registry:8081",
                      "value.converter.schemas.enable": "false"})
    assert "not implemented by sparkcat" in errors["value.converter.schemas.enable"][0]


def test_json_converter_reads_a_null_field_with_a_schema_default_as_the_default():
    # Connect's JsonConverter.convertToConnect: replace.null.with.default (true) gives the field's default
    envelope = (b'{"schema":{"type":"struct","fields":[{"field":"a","type":"int32","optional":true,"default":5},'
                b'{"field":"raw","type":"bytes","optional":true,"default":"AQI="},'
                b'{"field":"b","type":"string","optional":true}],"optional":false},"payload":{"a":null,"b":null}}')
    converter = JsonConverter()
    converter.configure({}, is_key=False)
    assert converter.from_bytes(envelope) == {"a": 5, "b": None, "raw": b"\x01\x02"}
    converter.configure({"replace.null.with.default": "false"}, is_key=False)
    assert converter.from_bytes(envelope) == {"a": None, "b": None}


def test_json_converter_gives_the_default_for_a_null_value_element_and_map_value_too():
    # convertToConnect returns schema.defaultValue() for any null, the record's own value included
    converter = JsonConverter()
    converter.configure({}, is_key=False)
    root = b'{"schema":{"type":"int64","optional":true,"default":7},"payload":null}'
    assert converter.from_bytes(root) == 7
    array = (b'{"schema":{"type":"array","items":{"type":"string","optional":true,"default":"x"},"optional":false},'
             b'"payload":["a",null]}')
    assert converter.from_bytes(array) == ["a", "x"]
    converter.configure({"replace.null.with.default": "false"}, is_key=False)
    assert converter.from_bytes(root) is None
    assert converter.from_bytes(array) == ["a", None]
