"""Where the SMT modules register their transformations and predicates, and the key helpers they share.

Dependencies flow one way: ``registry`` <- each SMT module (``fields``, ``conversions``,
``routing``, ``sql``, ``keys``) <- ``catalog`` (imports them all, so every one is registered)
<- ``config`` (parses a connector's chain from the filled registry).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from sparkcat.errors import ConfigError

__all__ = ["missing", "invalid", "settings_of", "list_value", "register_transform", "register_predicate",
           "TRANSFORMS", "PREDICATES", "VALUE_SMTS", "bool_value", "Factory"]

Factory = Callable[[dict[str, str], str], Any]

#: Java class name (and short aliases) -> factory(settings, prefix) of an SMT, filled by the SMT modules.
TRANSFORMS: dict[str, Factory] = {}
#: The same for predicates.
PREDICATES: dict[str, Factory] = {}
#: SMTs with ``$Value`` and ``$Key`` variants: short name -> factory of the ``$Value`` one (``keys`` adds ``$Key``).
VALUE_SMTS: dict[str, Factory] = {}


def register_transform(names: list[str], factory: Factory) -> None:
    for name in names:
        TRANSFORMS[name] = factory


def register_predicate(names: list[str], factory: Factory) -> None:
    for name in names:
        PREDICATES[name] = factory


def missing(key: str) -> str:
    """ConfigDef's message for a required key without a value."""
    return f'Missing required configuration "{key}" which has no default value.'


def invalid(key: str, value: Any, message: str) -> str:
    """ConfigException(name, value, message)'s text."""
    return f"Invalid value {value} for configuration {key}: {message}"


def list_value(text: Any) -> list[str]:
    """A Connect LIST value: comma-separated, items trimmed, empty items dropped."""
    if text is None:
        return []
    return [item.strip() for item in str(text).split(",") if item.strip()]


def bool_value(key: str, text: Any, default: bool) -> bool:
    """A Connect BOOLEAN value ("true"/"false", any case); anything else is refused as Connect does."""
    if text is None or str(text).strip() == "":
        return default
    lowered = str(text).strip().lower()
    if lowered not in ("true", "false"):
        raise ConfigError(invalid(key, text, "Expected value to be either true or false"), {key: [
            invalid(key, text, "Expected value to be either true or false")]})
    return lowered == "true"


def settings_of(config: Mapping[str, Any], prefix: str) -> dict[str, str]:
    """The keys under ``prefix`` (``transforms.NAME.``) with the prefix removed."""
    return {k[len(prefix):]: str(v) for k, v in config.items() if k.startswith(prefix) and v is not None}
