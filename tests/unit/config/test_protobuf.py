"""ProtobufConverter in connector and worker configs: accepted with its registry URL, its own settings checked,
ProtobufData's others refused by name; the schema asked for and the framing with the registry calls replaced."""

from __future__ import annotations

import pytest
from pyspark.sql import Row
from pyspark.sql import types as T

from sparkcat.config.validation import validate_connector_config
from sparkcat.config.worker import load_worker_config
from sparkcat.converters import ProtobufConverter, at_topic, converter_for, is_builtin_converter, java_name
from sparkcat.converters import protobuf as protobuf_module
from sparkcat.converters.protobuf_schema import ProtobufError
from sparkcat.converters.protobuf_values import ProtoSchema, message_name
from sparkcat.errors import ConfigError

PROTOBUF = "io.confluent.connect.protobuf.ProtobufConverter"
SOURCE = {"name": "inc", "connector.class": "increment", "increments": "1"}
SINK = {"name": "out", "connector.class": "file-sink", "topics": "t", "file": "state/protobuf-out.txt"}
URL = "http://localhost:8081"
ROW = T.StructType([T.StructField("id", T.LongType(), False), T.StructField("name", T.StringType())])


@pytest.mark.parametrize("name", [PROTOBUF, "ProtobufConverter", "protobuf"])
def test_protobuf_converter_is_a_built_in_converter(name):
    assert is_builtin_converter(name) and java_name(name) == PROTOBUF
    conv = converter_for({"value.converter": name, "value.converter.schema.registry.url": URL}, False)
    assert isinstance(conv, ProtobufConverter) and at_topic(conv, "orders").topic == "orders"


@pytest.mark.parametrize("base", [SOURCE, SINK])
@pytest.mark.parametrize("side", ["key", "value"])
def test_a_missing_registry_url_is_refused_naming_the_prefixed_key(base, side):
    errors = validate_connector_config({**base, f"{side}.converter": PROTOBUF}).errors
    key = f"{side}.converter.schema.registry.url"
    assert list(errors) == [key] and f"ProtobufConverter needs {key}" in errors[key][0]
    assert validate_connector_config({**base, f"{side}.converter": PROTOBUF, key: f"{URL},{URL}"}).errors == {}


def test_its_own_settings_are_checked_and_protobuf_datas_others_refused_by_name():
    p = "value.converter."
    errors = validate_connector_config({
        **SOURCE, "value.converter": PROTOBUF, p + "schema.registry.url": URL, p + "optional.for.nullables": "yes",
        p + "schemas.cache.size": "-1", p + "enhanced.protobuf.schema.support": "true",
        p + "wrapper.for.raw.primitives": "true", p + "int.for.enums": "maybe", p + "no.such.key": "1"}).errors
    assert "optional.for.nullables must be true or false" in errors[p + "optional.for.nullables"][0]
    assert "int.for.enums must be true or false" in errors[p + "int.for.enums"][0]
    assert "schemas.cache.size must be a whole number" in errors[p + "schemas.cache.size"][0]
    for key in ("enhanced.protobuf.schema.support", "wrapper.for.raw.primitives"):
        assert f"ProtobufConverter setting '{p}{key}' is not supported yet" in errors[p + key][0]
    assert "is not implemented by sparkcat" in errors[p + "no.such.key"][0]
    assert validate_connector_config({
        **SOURCE, "value.converter": PROTOBUF, p + "schema.registry.url": URL, p + "optional.for.nullables": "true",
        p + "schemas.cache.size": "10", p + "auto.register.schemas": "false", p + "use.latest.version": "true",
        p + "value.subject.name.strategy": "io.confluent.kafka.serializers.subject.RecordNameStrategy",
        **{p + key: "true" for key in ("wrapper.for.nullables", "scrub.invalid.names", "int.for.enums",
                                       "generate.struct.for.nulls", "flatten.unions")},
        p + "generate.index.for.unions": "false"}).errors == {}


def test_the_worker_config_takes_protobuf_and_checks_its_settings(tmp_path):
    path = tmp_path / "worker.yaml"
    path.write_text(f"value.converter: protobuf\nvalue.converter.schema.registry.url: {URL}\n")
    assert load_worker_config(path).converters["value.converter"] == PROTOBUF
    path.write_text(f"value.converter: {PROTOBUF}\nvalue.converter.schema.registry.url: {URL}\n"
                    "value.converter.int.for.enums: true\nvalue.converter.optional.for.proto2: true\n")
    with pytest.raises(ConfigError, match="not supported yet") as e:
        load_worker_config(path)
    assert list(e.value.errors) == ["value.converter.optional.for.proto2"]


def test_without_the_protobuf_package_validation_and_configure_say_to_install_the_extra(monkeypatch):
    monkeypatch.setattr(protobuf_module, "protobuf_missing", lambda: ["protobuf"])
    errors = validate_connector_config({**SOURCE, "value.converter": PROTOBUF,
                                        "value.converter.schema.registry.url": URL}).errors
    assert "pip install 'sparkcat[protobuf]'" in errors["value.converter"][0]
    with pytest.raises(ConfigError, match=r"sparkcat\[protobuf\]"):
        ProtobufConverter().configure({"schema.registry.url": URL}, is_key=False)


def _with_fake_registry(conv):
    asked, schemas = [], {}

    def id_for(subject, text):
        asked.append((subject, text))
        schemas[42] = text
        return 42, text
    conv._client.id_for, conv._client.schema = id_for, schemas.__getitem__
    return asked


def test_a_struct_is_registered_under_the_topic_subject_and_framed_with_message_indexes():
    conv = at_topic(converter_for({"value.converter": "protobuf", "value.converter.schema.registry.url": URL},
                                  False), "orders")
    asked = _with_fake_registry(conv)
    data = conv.to_bytes(Row(id=7, name="seven"), ROW)
    conv.to_bytes(Row(id=8, name=None), ROW)
    assert [subject for subject, _ in asked] == ["orders-value"]  # once per Spark type, not per record
    assert message_name(asked[0][1]) == "ConnectDefault1"
    assert data[:6] == b"\x00\x00\x00\x00\x2a\x00"
    assert ProtoSchema(42, asked[0][1]).message_class().FromString(data[6:]).name == "seven"
    assert conv.from_bytes(data) == {"id": 7, "name": "seven"}


def test_record_name_strategy_names_the_subject_by_the_message():
    named = T.StructType(ROW.fields)
    named.connect_name = "com.example.Order"
    conv = at_topic(converter_for({
        "key.converter": "protobuf", "key.converter.schema.registry.url": URL,
        "key.converter.key.subject.name.strategy": "io.confluent.kafka.serializers.subject.TopicRecordNameStrategy"},
        True), "orders")
    asked = _with_fake_registry(conv)
    conv.to_bytes(Row(id=1, name="a"), named)
    assert asked[0][0] == "orders-com.example.Order"


def test_values_without_a_struct_schema_fail_naming_the_topic():
    conv = at_topic(converter_for({"key.converter": "protobuf", "key.converter.schema.registry.url": URL}, True),
                    "orders")
    with pytest.raises(ProtobufError, match="a key without a schema \\(topic 'orders'\\)"):
        conv.to_bytes("k1", None)
    with pytest.raises(ProtobufError, match="topic 'orders' is not in Confluent's wire format"):
        conv.from_bytes(b"\x01")


def test_references_are_fetched_each_once_a_file_after_those_it_references():
    """Files order.proto -> money.proto -> currency.proto (and order.proto -> currency.proto again)."""
    from confluent_kafka.schema_registry import RegisteredSchema, Schema, SchemaReference

    from sparkcat.converters.schema_registry import RegistryClient, RegistrySettings

    def schema(text, *refs):
        return Schema(text, "PROTOBUF", [SchemaReference(name, name, 1) for name in refs])
    files = {"money.proto": schema("M", "currency.proto"), "currency.proto": schema("C")}
    fetched = []

    class Registry:
        def get_schema(self, schema_id, fmt=None):
            assert fmt == "serialized"
            return schema("O", "money.proto", "currency.proto")

        def get_version(self, subject, version, fmt=None):
            fetched.append(subject)
            return RegisteredSchema(subject=subject, version=version, schema_id=1, guid=None, schema=files[subject])

    client = RegistryClient(RegistrySettings((URL,)), "PROTOBUF")
    client._clients[URL] = Registry()
    assert client.schema(5) == ("O", (("currency.proto", "C"), ("money.proto", "M")))
    assert fetched == ["money.proto", "currency.proto"]
