"""What every built-in connector and task tells users of itself: sparkcat's version, its module's keys and checks."""

from __future__ import annotations

import importlib

import pytest

from sparkcat import __version__
from sparkcat.plugins import BUILTINS, load_class

CONNECTORS = [load_class(info.class_path) for info in BUILTINS]


@pytest.mark.parametrize("cls", CONNECTORS, ids=lambda c: c.__name__)
def test_connector_and_task_report_sparkcat_version(cls):
    assert cls().version() == __version__
    assert cls().task_class()().version() == __version__


@pytest.mark.parametrize("cls", CONNECTORS, ids=lambda c: c.__name__)
def test_config_def_is_the_module_one(cls):
    assert cls().config_def() is importlib.import_module(cls.__module__).CONFIG_DEF


@pytest.mark.parametrize("module, config", [
    ("sparkcat.connectors.jdbc_source", {"mode": "incrementing", "query": "SELECT 1", "table.whitelist": "t"}),
    ("sparkcat.connectors.jdbc_sink", {"insert.mode": "upsert", "pk.mode": "none"}),
    ("sparkcat.connectors.delta_sink", {"table.path": "/t", "table.name": "db.t"}),
])
def test_validate_reports_the_module_checks(module, config):
    mod = importlib.import_module(module)
    cls = next(c for c in CONNECTORS if c.__module__ == module)
    problems = mod.config_problems(config)
    assert problems
    assert [(v.name, v.errors) for v in cls().validate(config)] == list(problems.items())


@pytest.mark.parametrize("cls", [c for c in CONNECTORS if c.__module__.split(".")[-1] in
                                 ("increment", "file_source", "file_sink", "kafka_sink")], ids=lambda c: c.__name__)
def test_validate_of_a_connector_without_checks_is_empty(cls):
    assert cls().validate({"anything": "x"}) == []
