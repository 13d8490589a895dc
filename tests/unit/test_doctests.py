"""Runs the doctests of every sparkcat module, so the examples in docstrings stay true.

Modules are found by their source holding ``>>>`` (no import at collection time); each is
one test that fails when any of its examples does.
"""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

import sparkcat

PACKAGE_DIR = Path(sparkcat.__file__).parent


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = sorted(_module_name(p) for p in PACKAGE_DIR.rglob("*.py") if ">>>" in p.read_text(encoding="utf-8"))


def test_modules_with_examples_are_found() -> None:
    assert "sparkcat.api.config.config_def" in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, verbose=False)
    assert result.attempted > 0, f"{name} has '>>>' but no doctest was collected"
    assert result.failed == 0, f"{result.failed} of {result.attempted} doctests failed in {name} (see output above)"
