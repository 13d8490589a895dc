"""What ``sparkcat apply`` would do: specs compared with the running configs (pure, no I/O).

>>> plan = plan_apply({"a": {"x": "1"}}, {"a": {"x": "2", "y": "3"}, "b": {}})
>>> [(s.name, s.outcome, [c.line() for c in s.changes]) for s in plan]
[('a', 'changed', ['- y: 3', '~ x: 2 -> 1'])]
>>> plan_prune(["a"], ["a", "b"])
['b']
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

CREATED, UNCHANGED, CHANGED = "created", "unchanged", "changed"
HIDDEN = "[hidden]"


@dataclass(frozen=True)
class KeyChange:
    """One key's difference: ``old`` None when added, ``new`` None when removed."""

    key: str
    old: str | None
    new: str | None

    @property
    def sign(self) -> str:
        return "+" if self.old is None else "-" if self.new is None else "~"

    def line(self, hidden: bool = False) -> str:
        """``+ key: new``, ``- key: old`` or ``~ key: old -> new``; values ``[hidden]`` for a password."""
        old, new = (HIDDEN, HIDDEN) if hidden else (self.old, self.new)
        if self.sign == "~":
            return f"~ {self.key}: {old} -> {new}"
        return f"{self.sign} {self.key}: {new if self.old is None else old}"


@dataclass(frozen=True)
class SpecPlan:
    """One spec's outcome against the running config, with its key-level changes."""

    name: str
    outcome: str
    changes: tuple[KeyChange, ...]


def config_diff(running: Mapping[str, str] | None, wanted: Mapping[str, str]) -> tuple[KeyChange, ...]:
    """Removed keys, then changed, then added, each sorted by key; ``running`` None means all added."""
    old = running or {}
    removed = [KeyChange(k, old[k], None) for k in sorted(set(old) - set(wanted))]
    changed = [KeyChange(k, old[k], wanted[k]) for k in sorted(set(old) & set(wanted)) if old[k] != wanted[k]]
    added = [KeyChange(k, None, wanted[k]) for k in sorted(set(wanted) - set(old))]
    return tuple(removed + changed + added)


def plan_apply(wanted: Mapping[str, Mapping[str, str]],
               running: Mapping[str, Mapping[str, str]]) -> list[SpecPlan]:
    """Per wanted connector (in the given order): created, unchanged or changed, with its diff."""
    plans = []
    for name, config in wanted.items():
        current = running.get(name)
        changes = config_diff(current, config)
        outcome = CREATED if current is None else CHANGED if changes else UNCHANGED
        plans.append(SpecPlan(name, outcome, changes))
    return plans


def plan_prune(wanted: Iterable[str], running: Iterable[str]) -> list[str]:
    """Running connectors no spec names, sorted: what ``--prune`` deletes."""
    return sorted(set(running) - set(wanted))
