"""Transform and predicate configs: Connect's validation messages, through the chain parser and validate."""

from __future__ import annotations

import pytest

from sparkcat.errors import ConfigError
from sparkcat.config.validation import validate_connector_config
from sparkcat.transforms import chain_errors, parse_chain

T = "org.apache.kafka.connect.transforms."
INCREMENT = {"name": "inc", "connector.class": "increment", "increments": "1", "topic.prefix": "seq_"}


def test_chain_keeps_transforms_order_with_aliases_and_java_names():
    chain = parse_chain({"transforms": "b, a", "transforms.a.type": "RegexRouter", "transforms.a.regex": "x",
                         "transforms.a.replacement": "y", "transforms.b.type": T + "InsertHeader",
                         "transforms.b.header": "h", "transforms.b.value.literal": "v"})
    assert [(s.alias, s.type_name) for s in chain.stages] == [("b", T + "InsertHeader"), ("a", "RegexRouter")]


def test_missing_type_and_unknown_class_use_connects_messages():
    errors = chain_errors({"transforms": "a, b", "transforms.b.type": "com.example.Nope"})
    assert errors == {
        "transforms.a.type": ['Missing required configuration "transforms.a.type" which has no default value.'],
        "transforms.b.type": ["Invalid value com.example.Nope for configuration transforms.b.type: "
                              "Class com.example.Nope could not be found."]}


def test_negate_without_predicate_and_unlisted_predicate():
    errors = chain_errors({"transforms": "f", "transforms.f.type": T + "Filter", "transforms.f.negate": "true"})
    assert errors == {"transforms.f.negate": [
        "Config 'transforms.f.negate' was provided but there is no config 'transforms.f.predicate' defining a "
        "predicate to be negated."]}
    errors = chain_errors({"transforms": "f", "transforms.f.type": T + "Filter", "transforms.f.predicate": "p"})
    assert list(errors) == ["transforms.f.predicate"] and "p is not listed in 'predicates'" in errors[
        "transforms.f.predicate"][0]


def test_bad_regexes_are_refused_naming_the_key():
    errors = chain_errors({"transforms": "r", "transforms.r.type": T + "RegexRouter", "transforms.r.regex": "(a",
                           "transforms.r.replacement": "b", "predicates": "p",
                           "predicates.p.type": T + "predicates.TopicNameMatches", "predicates.p.pattern": "[x"})
    assert errors["transforms.r.regex"][0].startswith("Invalid value (a for configuration transforms.r.regex: "
                                                      "Invalid regex: ")
    assert errors["predicates.p.pattern"][0].startswith(
        "Invalid value [x for configuration predicates.p.pattern: entry must be a Java-compatible regular expression")


def test_smt_specific_messages():
    cases = {
        "transforms.c.spec": ({"transforms.c.type": T + "Cast$Value", "transforms.c.spec": "a:int99"},
                              "Invalid type found in casting spec: int99"),
        "transforms.c.type": ({"transforms.c.type": T + "InsertField$Value"}, "No field insertion configured"),
        "transforms.c.renames": ({"transforms.c.type": T + "ReplaceField$Value", "transforms.c.renames": "a-b"},
                                 "Invalid rename mapping: a-b"),
        "transforms.c.fields": ({"transforms.c.type": T + "MaskField$Value"},
                                'Missing required configuration "transforms.c.fields"'),
        "transforms.c.format": ({"transforms.c.type": T + "TimestampConverter$Value",
                                 "transforms.c.target.type": "string"},
                                "TimestampConverter requires format option to be specified when using string"),
    }
    for key, (config, message) in cases.items():
        errors = chain_errors({"transforms": "c", **config})
        assert list(errors) == [key] and message in errors[key][0], (key, errors)


def test_set_schema_metadata_key_takes_the_value_variants_keys_and_messages():
    base = {"transforms": "x", "transforms.x.type": T + "SetSchemaMetadata$Key"}
    assert parse_chain({**base, "transforms.x.schema.name": "n"}).stages[0].transform.part == "key"
    assert chain_errors(base) == {"transforms.x.type": ["Neither schema name nor version configured"]}


def test_set_schema_metadata_keys_and_connects_messages():
    base = {"transforms": "x", "transforms.x.type": T + "SetSchemaMetadata$Value"}
    assert chain_errors({**base, "transforms.x.schema.name": "com.example.Order"}) == {}
    assert chain_errors({**base, "transforms.x.schema.version": "2"}) == {}
    assert chain_errors(base) == {"transforms.x.type": ["Neither schema name nor version configured"]}
    assert chain_errors({**base, "transforms.x.schema.version": "two"}) == {"transforms.x.schema.version": [
        "Invalid value two for configuration transforms.x.schema.version: Not a number of type INT"]}


@pytest.mark.parametrize("variant", ["$Value", "$Key"])
def test_set_schema_metadata_is_refused_where_no_converter_would_write_it(variant):
    smt = {"transforms": "s", "transforms.s.type": T + "SetSchemaMetadata" + variant, "transforms.s.schema.name": "n"}
    sink = {"name": "s", "connector.class": "file-sink", "file": "out.txt", "topics": "t", **smt}
    message = validate_connector_config(sink).errors["transforms.s.type"][0]
    assert message.startswith(T + "SetSchemaMetadata" + variant + " would have no effect here: a sink task gets "
                              "plain keys and values")
    embedded = {**INCREMENT, **smt, "sink.connector.class": "file-sink", "sink.file": "out.txt"}
    assert "sink.* sink" in validate_connector_config(embedded).errors["transforms.s.type"][0]
    assert "transforms.s.type" not in validate_connector_config({**INCREMENT, **smt}).errors


@pytest.mark.parametrize("name", ["InsertField", "ReplaceField", "MaskField", "ExtractField", "HoistField",
                                  "Flatten", "Cast", "TimestampConverter", "HeaderFrom"])
def test_key_variants_exist_for_every_value_smt_with_the_same_keys(name):
    value = chain_errors({"transforms": "x", "transforms.x.type": T + name + "$Value"})
    key = chain_errors({"transforms": "x", "transforms.x.type": T + name + "$Key"})
    assert key == value and "could not be found" not in str(key) and "not supported" not in str(key)
    assert chain_errors({"transforms": "x", "transforms.x.type": name + "$Key"}) == value


def test_parse_chain_raises_naming_every_bad_key():
    with pytest.raises(ConfigError) as info:
        parse_chain({"transforms": "a", "transforms.a.type": T + "RegexRouter"})
    assert set(info.value.errors) == {"transforms.a.regex"}


def test_validate_accepts_a_chain_and_reports_transform_keys():
    good = {**INCREMENT, "transforms": "route", "transforms.route.type": T + "RegexRouter",
            "transforms.route.regex": "seq_(.*)", "transforms.route.replacement": "n_$1",
            "header.converter": "org.apache.kafka.connect.storage.SimpleHeaderConverter"}
    assert validate_connector_config(good).errors == {}
    bad = {**good, "transforms.route.negate": "maybe", "header.converter": "org.example.Other"}
    errors = validate_connector_config(bad).errors
    assert set(errors) == {"transforms.route.negate", "header.converter"}


def test_sink_connectors_driven_through_put_accept_transforms():
    sink = {"name": "s", "connector.class": "file-sink", "file": "out.txt", "topics": "t",
            "transforms": "r,x,off", "transforms.r.type": T + "RegexRouter", "transforms.r.regex": "(.*)",
            "transforms.r.replacement": "$1-copy", "transforms.x.type": T + "ExtractField$Value",
            "transforms.x.field": "id", "transforms.off.type": T + "InsertField$Value",
            "transforms.off.offset.field": "kafka_offset"}
    assert not [k for k in validate_connector_config(sink).errors if k.startswith(("transforms", "predicates"))]
    bad = {**sink, "transforms.x.field": ""}
    assert {k: v for k, v in validate_connector_config(bad).errors.items() if k.startswith("transforms")} == {
        "transforms.x.field": ['Missing required configuration "transforms.x.field" which has no default value.']}


@pytest.mark.parametrize("config", [
    {"connector.class": "kafka", "topics": "t", "target.topic": "u"},
    {"connector.class": "delta", "topics": "t", "table.path": "/tmp/sparkcat-delta-t"}])
def test_sinks_that_write_whole_batches_refuse_transforms_naming_the_key(config):
    sink = {"name": "s", **config, "transforms": "r", "transforms.r.type": T + "RegexRouter",
            "transforms.r.regex": "(.*)", "transforms.r.replacement": "$1"}
    errors = validate_connector_config(sink).errors
    assert "writes whole micro-batches with Spark" in errors["transforms"][0]
    assert "remove 'transforms'" in errors["transforms"][0]


def test_avro_converter_is_built_in_and_needs_its_registry_url():
    avro = {**INCREMENT, "value.converter": "io.confluent.connect.avro.AvroConverter"}
    assert validate_connector_config({**avro, "value.converter.schema.registry.url": "http://localhost:8081"}
                                     ).errors == {}
    errors = validate_connector_config(avro).errors
    assert list(errors) == ["value.converter.schema.registry.url"]
    assert "needs value.converter.schema.registry.url" in errors["value.converter.schema.registry.url"][0]
