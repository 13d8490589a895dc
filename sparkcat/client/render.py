"""Output of the CLI's read commands: ``table`` (for people), ``json`` and ``yaml`` (for scripts).

>>> print(table(["NAME", "STATE"], [["seq", "RUNNING"], ["copy", "PAUSED"]]))
NAME  STATE
seq   RUNNING
copy  PAUSED
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import yaml

FORMATS = ("table", "json", "yaml")


def render(data: Any, fmt: str, as_table: Callable[[Any], str]) -> str:
    """``data`` as JSON or YAML, or through ``as_table`` for ``table``."""
    if fmt == "json":
        return json.dumps(data, indent=2)
    if fmt == "yaml":
        return yaml.safe_dump(data, sort_keys=False, default_flow_style=False).rstrip("\n")
    return as_table(data)


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Left-aligned columns two spaces apart; trailing blanks trimmed."""
    cells = [list(map(str, headers))] + [[_cell(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    return "\n".join("  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in cells)


def compact(value: Any) -> str:
    """One-line JSON, for partitions and offsets in tables."""
    return json.dumps(value, separators=(",", ":"))


def last_line(trace: str | None) -> str:
    """A trace's last non-empty line (the exception), or '' when there is none."""
    lines = (trace or "").strip().splitlines()
    return lines[-1] if lines else ""


def _cell(value: Any) -> str:
    return "-" if value is None or value == "" else str(value)
