"""JsonSchemaConverter in connector and worker configs: accepted with its registry URL, every bad setting refused
naming its key."""

from __future__ import annotations

import pytest

from sparkcat.config.validation import validate_connector_config
from sparkcat.config.worker import load_worker_config
from sparkcat.converters import JsonSchemaConverter, at_topic, converter_for, is_builtin_converter, java_name
from sparkcat.converters.json_schema_values import JsonSchemaError
from sparkcat.errors import ConfigError

JSON_SCHEMA = "io.confluent.connect.json.JsonSchemaConverter"
SOURCE = {"name": "inc", "connector.class": "increment", "increments": "1"}
SINK = {"name": "out", "connector.class": "file-sink", "topics": "t", "file": "state/json-schema-out.txt"}
URL = "http://localhost:8081"


@pytest.mark.parametrize("name", [JSON_SCHEMA, "JsonSchemaConverter", "jsonschema"])
def test_json_schema_converter_is_a_built_in_converter(name):
    assert is_builtin_converter(name) and java_name(name) == JSON_SCHEMA
    conv = converter_for({"value.converter": name, "value.converter.schema.registry.url": URL}, False)
    assert isinstance(conv, JsonSchemaConverter) and at_topic(conv, "orders").topic == "orders"


@pytest.mark.parametrize("base", [SOURCE, SINK])
@pytest.mark.parametrize("side", ["key", "value"])
def test_a_missing_registry_url_is_refused_naming_the_prefixed_key(base, side):
    errors = validate_connector_config({**base, f"{side}.converter": JSON_SCHEMA}).errors
    key = f"{side}.converter.schema.registry.url"
    assert list(errors) == [key] and f"JsonSchemaConverter needs {key}" in errors[key][0]
    assert validate_connector_config({**base, f"{side}.converter": JSON_SCHEMA, key: f"{URL},{URL}"}).errors == {}


def test_its_own_settings_are_checked_and_others_refused_not_ignored():
    p = "value.converter."
    errors = validate_connector_config({
        **SOURCE, "value.converter": JSON_SCHEMA, p + "schema.registry.url": URL, p + "decimal.format": "TEXT",
        p + "object.additional.properties": "no", p + "json.fail.invalid.schema": "true",
        p + "use.latest.version": "maybe"}).errors
    assert "decimal.format must be BASE64 or NUMERIC, not 'TEXT'" in errors[p + "decimal.format"][0]
    assert "must be true or false" in errors[p + "object.additional.properties"][0]
    assert "JsonSchemaConverter setting 'value.converter.json.fail.invalid.schema' is not implemented" in \
        errors[p + "json.fail.invalid.schema"][0]
    assert "must be true or false" in errors[p + "use.latest.version"][0]
    assert validate_connector_config({
        **SOURCE, "value.converter": JSON_SCHEMA, p + "schema.registry.url": URL, p + "decimal.format": "numeric",
        p + "object.additional.properties": "false", p + "auto.register.schemas": "false",
        p + "value.subject.name.strategy": "io.confluent.kafka.serializers.subject.TopicRecordNameStrategy",
        p + "max.retries": "1"}).errors == {}


def test_the_converter_refuses_bad_settings_when_made_directly():
    with pytest.raises(ConfigError, match="decimal.format"):
        JsonSchemaConverter().configure({"schema.registry.url": URL, "decimal.format": "x"}, is_key=False)


def test_bytes_not_in_confluents_wire_format_fail_naming_the_topic():
    conv = at_topic(converter_for({"value.converter": "jsonschema", "value.converter.schema.registry.url": URL},
                                  False), "orders")
    with pytest.raises(JsonSchemaError, match="topic 'orders' is not in Confluent's wire format"):
        conv.from_bytes(b'{"a":1}')
    with pytest.raises(JsonSchemaError, match="key without a schema .* not a dict"):
        at_topic(converter_for({"key.converter": "jsonschema", "key.converter.schema.registry.url": URL},
                               True), "orders").to_bytes({"id": 1}, None)


def test_the_worker_config_takes_json_schema(tmp_path):
    path = tmp_path / "worker.yaml"
    path.write_text(f"value.converter: jsonschema\nvalue.converter.schema.registry.url: {URL}\n"
                    "value.converter.decimal.format: NUMERIC\n")
    assert load_worker_config(path).converters["value.converter"] == JSON_SCHEMA
    path.write_text(f"key.converter: {JSON_SCHEMA}\n")
    with pytest.raises(ConfigError) as e:
        load_worker_config(path)
    assert "key.converter.schema.registry.url" in e.value.errors


def test_a_schemaless_key_is_written_under_its_primitive_schema_in_confluents_wire_format():
    """The registry calls replaced: the schema asked for, the subject, and the framing of the JSON text."""
    conv = at_topic(converter_for({"key.converter": "jsonschema", "key.converter.schema.registry.url": URL}, True),
                    "orders")
    asked = []
    conv._client.id_for = lambda subject, schema: (asked.append((subject, schema)), (42, schema))[1]
    assert conv.to_bytes("k1", None) == b"\x00\x00\x00\x00\x2a" + b'"k1"'
    assert conv.to_bytes(7, None) == b"\x00\x00\x00\x00\x2a" + b"7"
    assert asked == [("orders-key", {"type": "string"}), ("orders-key", {"type": "integer", "connect.type": "int64"})]
    conv._client.schema = lambda schema_id: {"type": "string"}
    assert conv.from_bytes(b"\x00\x00\x00\x00\x2a" + b'"k1"') == "k1"
