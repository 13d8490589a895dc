"""``exactly.once.support=required`` for sink connectors: a sparkcat extension of Connect's preflight check.

Connect defines ``exactly.once.support`` for source connectors only; sparkcat accepts it on sink
connectors too. ``requested`` (the default) keeps the sink's usual guarantee; ``required`` asks the
connector class (``Connector.exactly_once_support``) whether it can write each record exactly once
with this config, and refuses the config when it cannot say so, with Connect's messages.
"""

from __future__ import annotations

from collections.abc import Mapping

from sparkcat.api.config import ConfigValue
from sparkcat.api.connector import Connector
from sparkcat.config.exactly_once import NOT_DECLARED, UNEXPECTED, UNSUPPORTED, declared_support

__all__ = ["EXACTLY_ONCE_SUPPORT_CONFIG", "NO_PREFLIGHT", "UNSUPPORTED", "exactly_once_required", "sink_exactly_once_errors"]

EXACTLY_ONCE_SUPPORT_CONFIG = "exactly.once.support"

#: Connect's message when the connector's check returns null ("source" left out: this is for sinks).
NO_PREFLIGHT = NOT_DECLARED.replace("exactly-once source support", "exactly-once support")


def exactly_once_required(config: Mapping[str, object]) -> bool:
    """Whether ``exactly.once.support`` is ``required`` (case-insensitive, as Connect reads it)."""
    return str(config.get(EXACTLY_ONCE_SUPPORT_CONFIG) or "requested").strip().lower() == "required"


def sink_exactly_once_errors(cls: type[Connector], config: Mapping[str, str]) -> list[ConfigValue]:
    """The error on ``exactly.once.support`` when it is ``required`` and ``cls`` cannot promise it, else none."""
    if not exactly_once_required(config):
        return []
    messages = [m if m.startswith(UNEXPECTED) else f"{m} (connector class {cls.__name__})"
                for m in declared_support(cls, config, NO_PREFLIGHT)]
    return [ConfigValue(EXACTLY_ONCE_SUPPORT_CONFIG, config.get(EXACTLY_ONCE_SUPPORT_CONFIG), errors=messages)] \
        if messages else []
