"""KIP-821's field paths, read as Kafka Connect 4.1's SingleFieldPath does (cases of its FieldPathNotationTest),
and ``field.syntax.version`` refused by every SMT that Connect 4.1 does not give it."""

from __future__ import annotations

import pytest

from sparkcat.errors import ConfigError
from sparkcat.transforms import chain_errors, parse_chain
from sparkcat.transforms.field_path import FieldPath

T = "org.apache.kafka.connect.transforms."


def steps(path: str, version: str = "V2") -> tuple[str, ...]:
    return FieldPath.parse(path, version, "transforms.x.field").steps


@pytest.mark.parametrize("path", ["foo.bar.baz", "foo`bar`", "foo.`bar.baz`"])
def test_v1_is_one_step_whatever_the_dots_and_backticks(path):
    assert steps(path, "V1") == (path,)


@pytest.mark.parametrize("path, expected", [
    ("..", ("", "", "")), ("foo..", ("foo", "", "")), (".bar.", ("", "bar", "")), ("..baz", ("", "", "baz")),
    ("", ()), ("foobarbaz", ("foobarbaz",)), ("foo.bar.baz", ("foo", "bar", "baz")),
    ("foo`bar`baz", ("foo`bar`baz",)),
    ("`foo.bar.baz`", ("foo.bar.baz",)), ("foo.`bar.baz`", ("foo", "bar.baz")), ("`foo.bar`.baz", ("foo.bar", "baz")),
    ("foo.`bar`.baz", ("foo", "bar", "baz")),
    ("foo.``bar.baz`", ("foo", "`bar.baz")), ("foo.`bar.baz``", ("foo", "bar.baz`")),
    ("foo.`ba`r.baz`", ("foo", "ba`r.baz")), ("foo.ba`r.baz", ("foo", "ba`r", "baz")),
    ("foo.``bar``.baz", ("foo", "`bar`", "baz")), ("``foo.bar.baz``", ("`foo.bar.baz`",)),
    ("foo.`bar\\`.baz`", ("foo", "bar`.baz")), ("foo.`bar.`baz`", ("foo", "bar.`baz")),
    ("foo.`bar\\`.`baz`", ("foo", "bar`.`baz")), ("foo.`bar\\\\`.\\`baz`", ("foo", "bar\\`.\\`baz")),
])
def test_v2_steps_as_connects_field_path_notation_test(path, expected):
    assert steps(path) == expected


@pytest.mark.parametrize("path, position", [("`foo.bar.baz", 0), ("foo.`bar.baz", 4), ("foo.bar.`baz", 8),
                                            ("foo.bar.`baz\\`", 8)])
def test_v2_incomplete_backticks_fail_with_connects_message_on_the_field_key(path, position):
    errors = chain_errors({"transforms": "x", "transforms.x.type": T + "ExtractField$Value",
                           "transforms.x.field": path, "transforms.x.field.syntax.version": "V2"})
    assert errors == {"transforms.x.field": [
        f"Incomplete backtick pair in path: [{path}], consider adding a backslash before backtick at position "
        f"{position} to escape it"]}


def test_extract_field_takes_v1_and_v2_in_any_case_and_refuses_other_versions():
    base = {"transforms": "x", "transforms.x.type": T + "ExtractField$Key", "transforms.x.field": "a.b"}
    assert parse_chain({**base, "transforms.x.field.syntax.version": "v2"}).stages[0].transform.inner.path.steps \
        == ("a", "b")
    assert parse_chain(base).stages[0].transform.inner.path.steps == ("a.b",)
    assert chain_errors({**base, "transforms.x.field.syntax.version": "V3"}) == {
        "transforms.x.field.syntax.version": ["Invalid value V3 for configuration transforms.x.field.syntax.version: "
                                              "String must be one of (case insensitive): V1, V2"]}


@pytest.mark.parametrize("smt, keys", [
    ("Cast$Value", {"spec": "a.b:string"}), ("HeaderFrom$Value", {"fields": "a.b", "headers": "h",
                                                                  "operation": "copy"}),
    ("InsertField$Value", {"topic.field": "a.t"}), ("MaskField$Key", {"fields": "a.b"}),
    ("ReplaceField$Value", {"exclude": "a.b"}), ("TimestampConverter$Value", {"field": "a.b", "target.type": "unix"}),
    ("ValueToKey", {"fields": "a.b"}),
])
def test_smts_connect_41_gives_no_field_syntax_version_refuse_it_naming_the_key(smt, keys):
    # KIP-821 lists these; Kafka Connect 4.1.1's transforms define field.syntax.version in ExtractField only
    config = {"transforms": "x", "transforms.x.type": T + smt, "transforms.x.field.syntax.version": "V2",
              **{f"transforms.x.{k}": v for k, v in keys.items()}}
    errors = chain_errors(config)
    assert list(errors) == ["transforms.x.field.syntax.version"]
    assert errors["transforms.x.field.syntax.version"][0].startswith(
        f"'transforms.x.field.syntax.version' (KIP-821's nested field paths) is not defined by Kafka Connect 4.1's "
        f"{T}{smt}")
    with pytest.raises(ConfigError, match="only ExtractField takes field.syntax.version"):
        parse_chain(config)
