"""YAML connector specs: Kafka Connect connector definitions (``name`` + ``config``) written in YAML.

Nested mappings flatten to dotted keys and lists join with commas, so
``transforms: {route: {type: X}}`` is ``transforms.route.type: X``. A file may
hold several documents, one connector each (or a list of them).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from sparkcat.errors import ConfigError

INITIAL_STATES = ("RUNNING", "PAUSED", "STOPPED")


@dataclass(frozen=True)
class ConnectorSpec:
    """One connector definition and where it came from (for error messages)."""

    name: str
    config: dict[str, str]
    source: str
    initial_state: str | None = None


def flatten(value: Any, prefix: str = "") -> dict[str, str]:
    """Nested mappings to dotted string keys; lists to comma-joined strings; booleans as true/false."""
    if isinstance(value, dict):
        out: dict[str, str] = {}
        for key, inner in value.items():
            out.update(flatten(inner, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: _scalar(value)}


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return ",".join(_scalar(v) for v in value)
    return str(value)


def _spec_from(doc: Any, source: str) -> ConnectorSpec:
    if not isinstance(doc, dict):
        raise ConfigError(f"{source}: a spec must be a mapping with 'name' and 'config', got {type(doc).__name__}")
    unknown = set(doc) - {"name", "config", "initial_state"}
    if unknown:
        raise ConfigError(f"{source}: unknown top-level field(s) {sorted(unknown)}; a spec has name, config "
                          f"and optionally initial_state", {k: ["unknown top-level field"] for k in unknown})
    name = doc.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"{source}: 'name' is missing or empty", {"name": ["required"]})
    config = doc.get("config")
    if not isinstance(config, dict):
        raise ConfigError(f"{source}: connector {name}: 'config' must be a mapping", {"config": ["required"]})
    flat = flatten(config)
    if flat.get("name", name) != name:
        raise ConfigError(f"{source}: connector {name}: config.name {flat['name']!r} differs from name",
                          {"name": ["differs from the spec's name"]})
    flat["name"] = name
    state = doc.get("initial_state")
    if state is not None and str(state).upper() not in INITIAL_STATES:
        raise ConfigError(f"{source}: connector {name}: initial_state must be one of {', '.join(INITIAL_STATES)}",
                          {"initial_state": ["invalid"]})
    return ConnectorSpec(name, flat, source, None if state is None else str(state).upper())


def load_file(path: str | Path) -> list[ConnectorSpec]:
    """Every spec in one YAML file; a syntax error names the file and line."""
    path = Path(path)
    try:
        docs = list(yaml.safe_load_all(path.read_text()))
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: not valid YAML: {e}") from e
    except OSError as e:
        raise ConfigError(f"{path}: cannot read: {e.strerror}") from e
    specs = []
    for index, doc in enumerate(d for d in docs if d is not None):
        items = doc if isinstance(doc, list) else [doc]
        for item in items:
            specs.append(_spec_from(item, f"{path} (document {index + 1})" if len(docs) > 1 else str(path)))
    return specs


def spec_files(paths: list[str | Path]) -> list[Path]:
    """Expand directories to their ``*.yaml``/``*.yml`` files, sorted."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out += sorted(f for f in p.iterdir() if f.suffix in (".yaml", ".yml") and f.is_file())
        else:
            out.append(p)
    return out


def load_specs(paths: list[str | Path]) -> list[ConnectorSpec]:
    """All specs from files and directories; duplicate connector names are an error naming both files."""
    specs: list[ConnectorSpec] = []
    seen: dict[str, str] = {}
    for f in spec_files(paths):
        for spec in load_file(f):
            if spec.name in seen:
                raise ConfigError(f"connector {spec.name} is defined twice: in {seen[spec.name]} and {spec.source}")
            seen[spec.name] = spec.source
            specs.append(spec)
    return specs
