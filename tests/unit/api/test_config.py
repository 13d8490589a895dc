"""ConfigDef: types, parsing and validation of keys."""

from __future__ import annotations

from typing import Any

import pytest

from sparkcat.api.config import (
    NO_DEFAULT,
    ConfigDef,
    ConfigValue,
    Custom,
    NonEmptyString,
    Password,
    Range,
    Type,
    ValidList,
    ValidString,
)
from sparkcat.errors import ConfigError
from tests.unit.api.config_defs import small_def

MISSING_NAME = 'Missing required configuration "name" which has no default value.'


def errors_of(values: list[ConfigValue]) -> dict[str, list[str]]:
    return {v.name: v.errors for v in values if v.errors}


# ---------------------------------------------------------------- parsing types


@pytest.mark.parametrize(
    ("type_", "raw", "expected"),
    [
        (Type.BOOLEAN, "TRUE", True),
        (Type.BOOLEAN, " false ", False),
        (Type.BOOLEAN, True, True),
        (Type.STRING, "  padded ", "padded"),
        (Type.STRING, 5432, "5432"),
        (Type.INT, "42", 42),
        (Type.INT, "-2147483648", -2147483648),
        (Type.INT, 7, 7),
        (Type.SHORT, "3", 3),
        (Type.LONG, "9223372036854775807", 9223372036854775807),
        (Type.DOUBLE, "1.5", 1.5),
        (Type.DOUBLE, 2, 2.0),
        (Type.LIST, "a, b ,c", ["a", "b", "c"]),
        (Type.LIST, "", []),
        (Type.LIST, "  ", []),
        (Type.LIST, ["x", "y"], ["x", "y"]),
        (Type.CLASS, "org.apache.kafka.connect.json.JsonConverter", "org.apache.kafka.connect.json.JsonConverter"),
    ],
)
def test_values_parse_to_their_type(type_: Type, raw: Any, expected: Any) -> None:
    assert ConfigDef().define("k", type_).parse({"k": raw}) == {"k": expected}


@pytest.mark.parametrize(
    ("type_", "raw", "message"),
    [
        (Type.INT, "abc", "Invalid value abc for configuration k: Not a number of type INT"),
        (Type.INT, "2147483648", "Invalid value 2147483648 for configuration k: Not a number of type INT"),
        (Type.INT, "1.0", "Invalid value 1.0 for configuration k: Not a number of type INT"),
        (Type.INT, "1_000", "Invalid value 1_000 for configuration k: Not a number of type INT"),
        (Type.SHORT, "40000", "Invalid value 40000 for configuration k: Not a number of type SHORT"),
        (Type.LONG, "9223372036854775808", "Invalid value 9223372036854775808 for configuration k: Not a number of type LONG"),
        (Type.DOUBLE, "x1", "Invalid value x1 for configuration k: Not a number of type DOUBLE"),
        (Type.BOOLEAN, "yes", "Invalid value yes for configuration k: Expected value to be either true or false"),
        (Type.INT, True, "Invalid value true for configuration k: Expected value to be a 32-bit integer, but it was a bool"),
        (Type.LIST, 3, "Invalid value 3 for configuration k: Expected a comma separated list."),
    ],
)
def test_type_errors_use_connect_wording(type_: Type, raw: Any, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        ConfigDef().define("k", type_).parse({"k": raw})
    assert info.value.errors == {"k": [message]}


def test_password_is_hidden_but_keeps_its_value() -> None:
    parsed = ConfigDef().define("pw", Type.PASSWORD).parse({"pw": " s3cret "})
    secret = parsed["pw"]
    assert isinstance(secret, Password)
    assert secret.value == "s3cret"
    assert str(secret) == repr(secret) == "[hidden]"
    assert "s3cret" not in repr(parsed)


# ---------------------------------------------------------------- parse


def test_parse_applies_defaults_and_ignores_unknown_keys() -> None:
    parsed = small_def().parse({"name": "jdbc", "unknown.key": "whatever"})
    assert parsed == {
        "name": "jdbc",
        "tasks.max": 1,
        "mode": "bulk",
        "secret": None,
        "enabled": True,
        "tables": [],
    }
    assert list(parsed) == small_def().names()


def test_parse_reports_every_bad_key_at_once() -> None:
    with pytest.raises(ConfigError) as info:
        small_def().parse({"tasks.max": "0", "mode": "timestamp", "enabled": "maybe"})
    err = info.value
    assert err.errors == {
        "name": [MISSING_NAME],
        "tasks.max": ["Invalid value 0 for configuration tasks.max: Value must be at least 1"],
        "mode": ["Invalid value timestamp for configuration mode: String must be one of: bulk, incrementing"],
        "enabled": ["Invalid value maybe for configuration enabled: Expected value to be either true or false"],
    }
    for key in ("name", "tasks.max", "mode", "enabled"):
        assert key in str(err)


def test_a_required_key_set_to_none_is_missing() -> None:
    with pytest.raises(ConfigError) as info:
        small_def().parse({"name": None})
    assert info.value.errors == {"name": [MISSING_NAME]}


# ---------------------------------------------------------------- define


def test_define_rejects_duplicates() -> None:
    d = ConfigDef().define("a", Type.INT, 1)
    with pytest.raises(ValueError, match="Configuration a is defined twice."):
        d.define("a", Type.STRING, "x")


def test_define_rejects_a_default_its_validator_refuses() -> None:
    with pytest.raises(ValueError, match="Value must be at least 1"):
        ConfigDef().define("a", Type.INT, 0, Range.at_least(1))
    with pytest.raises(ValueError, match="Not a number of type INT"):
        ConfigDef().define("b", Type.INT, "ten")


def test_key_without_default_is_required() -> None:
    d = ConfigDef().define("a", Type.STRING).define("b", Type.STRING, None)
    assert d.keys["a"].default is NO_DEFAULT and d.keys["a"].required
    assert not d.keys["b"].required
    assert d.keys["a"].display_name == "a"


def test_groups_keep_first_seen_order() -> None:
    assert small_def().groups() == ["Common", "Mode", "Connection"]


def test_merge_returns_a_new_def_with_both() -> None:
    a = ConfigDef().define("x", Type.INT, 1, group="G1")
    b = ConfigDef().define("y", Type.INT, 2, group="G2")
    merged = a.merge(b)
    assert merged.names() == ["x", "y"]
    assert merged.groups() == ["G1", "G2"]
    assert a.names() == ["x"] and b.names() == ["y"]
    assert a.with_(b).names() == ["x", "y"]
    with pytest.raises(ValueError):
        a.merge(ConfigDef().define("x", Type.INT, 3))


# ---------------------------------------------------------------- validators


def test_range_validator() -> None:
    between = Range.between(1, 10)
    assert str(between) == "[1,...,10]"
    assert str(Range.at_least(0)) == "[0,...]"
    d = ConfigDef().define("n", Type.INT, 5, between)
    assert errors_of(d.validate({"n": "11"})) == {
        "n": ["Invalid value 11 for configuration n: Value must be no more than 10"]
    }
    assert errors_of(d.validate({"n": "10"})) == {}


def test_valid_string_is_case_sensitive_unless_asked() -> None:
    strict = ConfigDef().define("m", Type.STRING, "a", ValidString.in_("a", "b"))
    loose = ConfigDef().define("m", Type.STRING, "a", ValidString.in_ignore_case("a", "b"))
    assert errors_of(strict.validate({"m": "A"})) == {
        "m": ["Invalid value A for configuration m: String must be one of: a, b"]
    }
    assert errors_of(loose.validate({"m": "A"})) == {}
    assert str(ValidString.in_("a", "b")) == "[a, b]"
    assert str(ValidString.in_ignore_case("a", "b")) == "(case insensitive) [A, B]"


def test_non_empty_string() -> None:
    d = ConfigDef().define("s", Type.STRING, None, NonEmptyString())
    assert errors_of(d.validate({"s": ""})) == {"s": ["Invalid value  for configuration s: String must be non-empty"]}
    assert errors_of(d.validate({})) == {}
    assert str(NonEmptyString()) == "non-empty string"


def test_valid_list_checks_each_item() -> None:
    d = ConfigDef().define("l", Type.LIST, "", ValidList.in_("x", "y"))
    assert d.parse({"l": "x,y"}) == {"l": ["x", "y"]}
    assert errors_of(d.validate({"l": "x,z"})) == {
        "l": ["Invalid value z for configuration l: String must be one of: x, y"]
    }


def test_custom_validator_may_return_or_raise() -> None:
    def even(name: str, value: Any) -> str | None:
        return None if value % 2 == 0 else "must be even"

    def positive(name: str, value: Any) -> None:
        if value <= 0:
            raise ConfigError(f"{name} must be positive")

    d = (
        ConfigDef()
        .define("e", Type.INT, 2, Custom(even, "even numbers"))
        .define("p", Type.INT, 1, Custom(positive, "positive numbers"))
    )
    assert str(d.keys["e"].validator) == "even numbers"
    assert errors_of(d.validate({"e": "3", "p": "-1"})) == {
        "e": ["Invalid value 3 for configuration e: must be even"],
        "p": ["p must be positive"],
    }


# ---------------------------------------------------------------- validate


def test_validate_lists_every_key_with_value_and_errors() -> None:
    values = small_def().validate({"tasks.max": "abc", "mode": "incrementing"})
    assert [v.name for v in values] == small_def().names()
    by_name = {v.name: v for v in values}
    assert by_name["name"].errors == [MISSING_NAME]
    assert by_name["tasks.max"].errors == ["Invalid value abc for configuration tasks.max: Not a number of type INT"]
    assert by_name["mode"].value == "incrementing" and by_name["mode"].errors == []
    assert by_name["enabled"].value is True
    assert all(v.visible for v in values)


def test_recommender_sets_recommended_values_and_visibility() -> None:
    class ModeRecommender:
        def valid_values(self, name: str, parsed: Any) -> list[Any]:
            return ["id", "updated_at"]

        def visible(self, name: str, parsed: Any) -> bool:
            return parsed.get("mode") == "incrementing"

    d = (
        ConfigDef()
        .define("mode", Type.STRING, "bulk", dependents=["column"])
        .define("column", Type.STRING, "", recommender=ModeRecommender())
    )
    column = {v.name: v for v in d.validate({"mode": "bulk"})}["column"]
    assert column.recommended_values == ["id", "updated_at"]
    assert column.visible is False
