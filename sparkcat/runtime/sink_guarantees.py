"""``exactly.once.support=required`` for sink connectors: a sparkcat extension of Connect's preflight check.

Connect defines ``exactly.once.support`` for source connectors only; sparkcat accepts it on sink
connectors too. ``requested`` (the default) keeps the sink's usual guarantee; ``required`` asks the
connector class (``Connector.exactly_once_support``) whether it can write each record exactly once
with this config, and refuses the config when it cannot say so, with Connect's messages.
"""

from __future__ import annotations

from collections.abc import Mapping

from sparkcat.api.config import ConfigValue
from sparkcat.api.connector import Connector, ExactlyOnceSupport

__all__ = ["EXACTLY_ONCE_SUPPORT_CONFIG", "exactly_once_required", "sink_exactly_once_errors"]

EXACTLY_ONCE_SUPPORT_CONFIG = "exactly.once.support"

#: Connect's message when the connector's check returns null ("source" left out: this is for sinks).
NO_PREFLIGHT = (
    "The connector does not implement the API required for preflight validation of exactly-once support. Please "
    "consult the documentation for the connector to determine whether it supports exactly-once semantics, and then "
    "consider reconfiguring the connector to use the value \"requested\" for this property (which will disable this "
    "preflight check and allow the connector to be created).")
#: Connect's message when the connector says UNSUPPORTED.
UNSUPPORTED = "The connector does not support exactly-once semantics with the provided configuration."


def exactly_once_required(config: Mapping[str, object]) -> bool:
    """Whether ``exactly.once.support`` is ``required`` (case-insensitive, as Connect reads it)."""
    return str(config.get(EXACTLY_ONCE_SUPPORT_CONFIG) or "requested").strip().lower() == "required"


def sink_exactly_once_errors(cls: type[Connector], config: Mapping[str, str]) -> list[ConfigValue]:
    """The error on ``exactly.once.support`` when it is ``required`` and ``cls`` cannot promise it, else none."""
    if not exactly_once_required(config):
        return []
    try:
        support = cls().exactly_once_support(config)
    except Exception as e:  # Connect reports a failing check on the key, as a validation error
        message = f"An unexpected error occurred during validation: {e}"
    else:
        if support is ExactlyOnceSupport.SUPPORTED or support == ExactlyOnceSupport.SUPPORTED.value:
            return []
        message = NO_PREFLIGHT if support is None else UNSUPPORTED
        message = f"{message} (connector class {cls.__name__})"
    return [ConfigValue(EXACTLY_ONCE_SUPPORT_CONFIG, config.get(EXACTLY_ONCE_SUPPORT_CONFIG), errors=[message])]
