"""Every key under a transformation's or predicate's alias is one it declares, or an error naming the key."""

from __future__ import annotations

import pytest

from sparkcat.config.validation import validate_connector_config
from sparkcat.errors import ConfigError
from sparkcat.transforms import chain_errors, parse_chain
from sparkcat.transforms.catalog import PREDICATES, TRANSFORMS
from sparkcat.transforms.registry import PREDICATE_KEYS, TRANSFORM_KEYS

T = "org.apache.kafka.connect.transforms."
INCREMENT = {"name": "inc", "connector.class": "increment", "increments": "1", "topic.prefix": "seq_"}
ROUTER = {"transforms": "r", "transforms.r.type": T + "RegexRouter", "transforms.r.regex": "(.*)",
          "transforms.r.replacement": "copy-$1"}


def test_a_typo_under_a_transform_alias_is_refused_naming_the_key_and_the_class():
    errors = chain_errors({**ROUTER, "transforms.r.replacment": "x"})
    assert list(errors) == ["transforms.r.replacment"]
    message = errors["transforms.r.replacment"][0]
    assert "'transforms.r.replacment'" in message and T + "RegexRouter" in message
    assert "regex, replacement" in message  # what it takes instead


def test_a_typo_under_a_predicate_alias_is_refused():
    errors = chain_errors({**ROUTER, "transforms.r.predicate": "p", "predicates": "p",
                           "predicates.p.type": "TopicNameMatches", "predicates.p.pattern": "a.*",
                           "predicates.p.patern": "b.*"})
    assert list(errors) == ["predicates.p.patern"]
    assert T + "predicates.TopicNameMatches" in errors["predicates.p.patern"][0]


def test_a_key_of_a_transform_without_keys_is_refused():
    errors = chain_errors({"transforms": "f", "transforms.f.type": "Filter", "transforms.f.fields": "a"})
    assert "its keys: none" in errors["transforms.f.fields"][0]


_REQUIRED = {"Cast": {"spec": "a:string"}, "MaskField": {"fields": "a"}, "InsertField": {"topic.field": "t"},
             "ReplaceField": {}, "ExtractField": {"field": "a"}, "ValueToKey": {"fields": "a"},
             "TimestampConverter": {"target.type": "unix"},
             "HeaderFrom": {"fields": "a", "headers": "h", "operation": "copy"}}


@pytest.mark.parametrize("smt", ["Cast$Value", "Cast$Key", "MaskField$Value", "InsertField$Key", "ReplaceField$Value",
                                 "ExtractField$Value", "TimestampConverter$Value", "HeaderFrom$Value", "ValueToKey"])
def test_replace_null_with_default_is_taken_as_a_connect_boolean(smt):
    # Connect 4.1 defines it (KIP-1040) on these SMTs, BOOLEAN with default true
    key = "transforms.t.replace.null.with.default"
    required = _REQUIRED[smt.split("$")[0]]
    base = {"transforms": "t", "transforms.t.type": T + smt, **{f"transforms.t.{k}": v for k, v in required.items()}}
    assert chain_errors({**base, key: "false"}) == {} and chain_errors({**base, key: "TRUE"}) == {}
    assert chain_errors({**base, key: "maybe"})[key] == [
        f"Invalid value maybe for configuration {key}: Expected value to be either true or false"]


@pytest.mark.parametrize("smt", ["Flatten$Value", "HoistField$Value"])
def test_replace_null_with_default_is_refused_where_connect_has_no_such_key(smt):
    key = "transforms.t.replace.null.with.default"
    required = {"transforms.t.field": "f"} if smt.startswith("Hoist") else {}
    errors = chain_errors({"transforms": "t", "transforms.t.type": T + smt, **required, key: "true"})
    assert list(errors) == [key]


def test_set_schema_metadata_takes_replace_null_with_default_as_a_connect_boolean():
    # Connect 4.1's SetSchemaMetadata defines it (default true); the structs it names here have no field defaults,
    # so true and false give the same record and the key is taken, a non-boolean refused as Connect refuses it
    base = {"transforms": "t", "transforms.t.type": T + "SetSchemaMetadata$Value", "transforms.t.schema.name": "n"}
    key = "transforms.t.replace.null.with.default"
    assert chain_errors({**base, key: "false"}) == {} and chain_errors({**base, key: "TRUE"}) == {}
    assert chain_errors({**base, key: "maybe"}) == {key: [
        f"Invalid value maybe for configuration {key}: Expected value to be either true or false"]}


def test_replace_fields_removed_whitelist_is_refused_not_used():
    errors = chain_errors({"transforms": "t", "transforms.t.type": "ReplaceField$Value", "transforms.t.whitelist": "a"})
    assert "Unknown configuration key 'transforms.t.whitelist'" in errors["transforms.t.whitelist"][0]
    assert "exclude, include, renames" in errors["transforms.t.whitelist"][0]


def test_every_declared_key_is_accepted():
    """Connect's optional keys, read by the factories only in some cases, are not refused."""
    config = {"transforms": "t,s,x", "transforms.t.type": "TimestampConverter$Value", "transforms.t.field": "ts",
              "transforms.t.target.type": "string", "transforms.t.format": "yyyy", "transforms.t.unix.precision":
              "seconds", "transforms.s.type": "InsertField$Value", "transforms.s.topic.field": "t",
              "transforms.s.partition.field": "p", "transforms.s.offset.field": "o", "transforms.s.timestamp.field":
              "ts", "transforms.s.static.field": "s", "transforms.s.static.value": "v",
              "transforms.x.type": "ExtractField$Key", "transforms.x.field": "id",
              "transforms.x.field.syntax.version": "V1"}
    assert chain_errors(config) == {}
    assert len(parse_chain(config).stages) == 3


def test_every_registered_plugin_declares_its_keys():
    assert set(TRANSFORM_KEYS) == set(TRANSFORMS) and set(PREDICATE_KEYS) == set(PREDICATES)
    assert TRANSFORM_KEYS["Cast$Key"].class_name == T + "Cast$Key"
    assert TRANSFORM_KEYS["sql"].definition.names() == ["query"]


def test_validate_and_parse_refuse_the_key():
    result = validate_connector_config({**INCREMENT, **ROUTER, "transforms.r.regexx": "a"})
    assert list(result.errors) == ["transforms.r.regexx"]
    with pytest.raises(ConfigError, match="transforms.r.regexx"):
        parse_chain({**ROUTER, "transforms.r.regexx": "a"})


def test_kip_891_plugin_version_is_a_key_every_transformation_takes():
    assert chain_errors({**ROUTER, "transforms.r.plugin.version": "latest"}) == {}  # judged by config/plugin_versions
