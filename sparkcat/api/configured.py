"""Declare a connector's version, keys and cross-key checks once, as class attributes, instead of one method each.

Opt-in mixins for ``Connector`` and ``Task`` classes (the built-in connectors use them), and the parse that
raises one ``ConfigError`` for per-key and cross-key problems alike, for settings parsed on executors too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from sparkcat.api.config import ConfigDef, ConfigValue
from sparkcat.errors import ConfigError

__all__ = ["ConfiguredConnector", "Versioned", "parse_checked"]

Checks = Callable[[Mapping[str, Any]], Mapping[str, list[str]]]
"""Checks across keys: ``config -> {key: messages}``, empty when the config can run."""


class Versioned:
    """Mixin for a connector or task class: ``version()`` is its ``plugin_version`` (REST's plugin version).

    >>> from sparkcat.api.connector import SinkTask
    >>> class Task1(Versioned, SinkTask):
    ...     plugin_version = "1.2.0"
    ...     def start(self, config): ...
    ...     def put(self, records): ...
    >>> Task1().version()
    '1.2.0'
    """

    plugin_version: ClassVar[str] = "unknown"

    def version(self) -> str:
        return self.plugin_version


class ConfiguredConnector(Versioned):
    """Mixin for a ``Connector`` whose keys are one ``ConfigDef`` (``definition``) and whose checks across
    keys are one function (``config_problems``), so ``config_def`` and ``validate`` need not be written out.

    ``config_problems`` may be a method or ``staticmethod(a_module_function)``; by default there are none.

    >>> from sparkcat.api.config import Type
    >>> from sparkcat.api.connector import CopiesConfigToTasks, SinkConnector, SinkTask
    >>> def one_table(config):
    ...     both = config.get("table.path") and config.get("table.name")
    ...     return {"table.name": ["set table.path or table.name, not both"]} if both else {}
    >>> class TableSink(ConfiguredConnector, CopiesConfigToTasks, SinkConnector):
    ...     plugin_version = "0.3"
    ...     definition = ConfigDef().define("table.path", Type.STRING, None).define("table.name", Type.STRING, None)
    ...     config_problems = staticmethod(one_table)
    ...     def task_class(self): return SinkTask
    >>> sink = TableSink()
    >>> sink.version(), list(sink.config_def().keys)
    ('0.3', ['table.path', 'table.name'])
    >>> [(v.name, v.errors) for v in sink.validate({"table.path": "/t", "table.name": "db.t"})]
    [('table.name', ['set table.path or table.name, not both'])]
    """

    definition: ClassVar[ConfigDef]

    def config_def(self) -> ConfigDef:
        return self.definition

    def config_problems(self, config: Mapping[str, Any]) -> Mapping[str, list[str]]:
        return {}

    def validate(self, config: Mapping[str, Any]) -> list[ConfigValue]:
        return ConfigValue.for_problems(config, self.config_problems(config))


def parse_checked(definition: ConfigDef, config: Mapping[str, Any], checks: Checks, what: str) -> dict[str, Any]:
    """``definition.parse(config)``, then ``checks``: one ``ConfigError`` naming every key they fault.

    For a settings class that tasks parse too, where no connector's ``validate`` ran.

    >>> from sparkcat.api.config import Type
    >>> d = ConfigDef().define("mode", Type.STRING, "bulk").define("column", Type.STRING, None)
    >>> needs_column = lambda c: {} if c.get("column") or c.get("mode") == "bulk" else {"column": ["mode needs it"]}
    >>> parse_checked(d, {"mode": "bulk"}, needs_column, "Demo source")
    {'mode': 'bulk', 'column': None}
    >>> parse_checked(d, {"mode": "incrementing"}, needs_column, "Demo source")
    Traceback (most recent call last):
    ...
    sparkcat.errors.ConfigError: Invalid Demo source configuration: column: mode needs it
    """
    parsed = definition.parse(config)
    problems = checks(config)
    if problems:
        details = "; ".join(f"{k}: {' '.join(m)}" for k, m in problems.items())
        raise ConfigError(f"Invalid {what} configuration: {details}", dict(problems))
    return parsed
