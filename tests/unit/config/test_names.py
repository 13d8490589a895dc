"""Connector names: which are refused, and how each maps to one safe, distinct directory name."""

from __future__ import annotations

import pytest

from sparkcat.errors import ConfigError
from sparkcat.config.names import check_connector_name, dir_name

HOSTILE = ["..", ".", "a/../../x", "/etc", "_sparkcat-config-log", "%2E%2E", "caf\u00e9", "\U0001F680",
           "a b", "a%2Fb", "a/b", "\\", "~", "x" * 400, "x" * 401, ".hidden", "-rf"]


@pytest.mark.parametrize("name", HOSTILE)
def test_every_name_maps_to_one_plain_component(name):
    d = dir_name(name)
    assert d not in ("", ".", "..") and "/" not in d and "\\" not in d and "\0" not in d
    assert not d.startswith((".", "_")), "reserved for sparkcat's own directories and hidden files"
    assert len(d.encode()) <= 200


def test_distinct_names_get_distinct_directories():
    names = HOSTILE + ["%", "%25", "a%2E", "a.", "A", "x" * 399 + "y", "x" * 399 + "z"]
    assert len({dir_name(n) for n in names}) == len(set(names))


def test_ordinary_names_keep_their_directory():
    assert dir_name("increment-demo") == "increment-demo"
    assert dir_name("orders_v2.copy") == "orders_v2.copy"


@pytest.mark.parametrize("name, rule", [
    ("", "empty"), ("  ", "blank"), (" a", "whitespace"), ("a\u3000", "whitespace"), ("a\tb", "U+0009"),
    ("a\u009fb", "U+009F"), ("a\ud800", "surrogate"), ("x" * 1001, "at most 1000"),
    ("sparkcat-config-log", "reserved"), ("sparkcat-standby-warm-up", "reserved"),
    ("sparkcat-shared-sources-exactly-once-1000ms", "shared queries"),
])
def test_unrepresentable_names_are_refused_naming_the_rule(name, rule):
    with pytest.raises(ConfigError) as e:
        check_connector_name(name)
    assert rule in e.value.message and e.value.errors["name"]


def test_names_connect_accepts_are_accepted():
    for name in ["..", "a/../../x", "\u65e5\u672c-\U0001F680", "x" * 1000, "_sparkcat-config-log"]:
        assert check_connector_name(name) == name
