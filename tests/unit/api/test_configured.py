"""The declared-config mixins: what a connector gets from its class attributes, and the parse order of parse_checked."""

from __future__ import annotations

import pytest

from sparkcat.api import (
    ConfigDef, ConfiguredConnector, CopiesConfigToTasks, SinkConnector, SinkTask, Type, Versioned, parse_checked,
)
from sparkcat.errors import ConfigError

DEFINITION = ConfigDef().define("mode", Type.STRING, "bulk").define("column", Type.STRING, None).freeze()


def _needs_column(config):
    return {} if config.get("column") or config.get("mode", "bulk") == "bulk" else {"column": ["mode needs a column"]}


class _Sink(ConfiguredConnector, CopiesConfigToTasks, SinkConnector):
    definition = DEFINITION
    config_problems = staticmethod(_needs_column)

    def task_class(self) -> type[SinkTask]:
        return SinkTask


class _Plain(ConfiguredConnector, CopiesConfigToTasks, SinkConnector):
    plugin_version = "2.0"
    definition = DEFINITION

    def task_class(self) -> type[SinkTask]:
        return SinkTask


def test_the_class_attributes_answer_version_config_def_and_validate():
    sink = _Sink()
    assert sink.version() == "unknown"  # as Connector's default, until the class names one
    assert sink.config_def() is DEFINITION
    [value] = sink.validate({"mode": "incrementing"})
    assert (value.name, value.value, value.errors) == ("column", None, ["mode needs a column"])
    assert sink.validate({"mode": "incrementing", "column": "id"}) == []


def test_without_checks_validate_has_nothing_to_say_and_start_parses_the_definition():
    plain = _Plain()
    assert plain.version() == "2.0"
    assert plain.validate({"mode": "anything"}) == []
    plain.start({"mode": "bulk"})
    assert plain.task_configs(1) == [{"mode": "bulk", "task.id": "0"}]


def test_config_problems_may_be_a_method():
    class Checked(_Plain):
        def config_problems(self, config):
            return {"mode": [f"{self.version()} refuses {config['mode']}"]}

    assert [v.errors for v in Checked().validate({"mode": "x"})] == [["2.0 refuses x"]]


def test_a_task_takes_only_the_version():
    class Task(Versioned, SinkTask):
        plugin_version = "1.0"

        def start(self, config): ...

        def put(self, records): ...

    assert Task().version() == "1.0"
    assert not hasattr(Task(), "config_def")


def test_parse_checked_raises_per_key_errors_before_running_the_checks():
    ran = []
    strict = ConfigDef().define("n", Type.INT).freeze()
    with pytest.raises(ConfigError) as e:
        parse_checked(strict, {"n": "x"}, lambda c: ran.append(c) or {}, "Demo")
    assert list(e.value.errors) == ["n"] and ran == []


def test_parse_checked_names_every_faulted_key():
    checks = lambda c: {"a": ["one", "two"], "b": ["three"]}  # noqa: E731
    with pytest.raises(ConfigError) as e:
        parse_checked(DEFINITION, {}, checks, "Demo sink")
    assert str(e.value) == "Invalid Demo sink configuration: a: one two; b: three"
    assert e.value.errors == {"a": ["one", "two"], "b": ["three"]}
