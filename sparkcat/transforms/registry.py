"""Where the SMT modules register their transformations and predicates, and the key helpers they share.

Dependencies flow one way: ``registry`` <- each SMT module (``fields``, ``conversions``,
``routing``, ``sql``, ``keys``) <- ``catalog`` (imports them all, so every one is registered)
<- ``config`` (parses a connector's chain from the filled registry).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from sparkcat.api.config import ConfigDef
from sparkcat.errors import ConfigError

__all__ = ["missing", "invalid", "settings_of", "list_value", "register_transform", "register_predicate",
           "TRANSFORMS", "PREDICATES", "VALUE_SMTS", "TRANSFORM_KEYS", "PREDICATE_KEYS", "PluginKeys",
           "PLUGIN_VERSION", "bool_value", "Factory"]

Factory = Callable[[dict[str, str], str], Any]

#: Java class name (and short aliases) -> factory(settings, prefix) of an SMT, filled by the SMT modules.
TRANSFORMS: dict[str, Factory] = {}
#: The same for predicates.
PREDICATES: dict[str, Factory] = {}
#: SMTs with ``$Value`` and ``$Key`` variants: short name -> factory of the ``$Value`` one (``keys`` adds ``$Key``).
VALUE_SMTS: dict[str, Factory] = {}


@dataclass(frozen=True)
class PluginKeys:
    """The keys one transformation or predicate takes under its alias, as its module declares them.

    ``definition`` holds the keys sparkcat implements, with Connect 4.1's types, defaults and docs (what
    ``GET /connector-plugins/CLASS/config`` shows); ``unsupported`` the keys Connect's class defines that
    sparkcat does not implement, each with why. Any other key under the alias is refused by validation:
    declared, never inferred from what a factory happens to read.
    """

    class_name: str
    definition: ConfigDef
    unsupported: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))


#: KIP-891's key under every plugin's prefix (Connect 4.1): which of several installed versions to run. A
#: transformation takes it besides its own keys; ``config/plugin_versions.py`` checks it.
PLUGIN_VERSION = "plugin.version"

#: Every name of a transformation (Java class name and aliases) -> the keys it takes.
TRANSFORM_KEYS: dict[str, PluginKeys] = {}
#: The same for predicates.
PREDICATE_KEYS: dict[str, PluginKeys] = {}


def register_transform(names: list[str], factory: Factory, definition: ConfigDef,
                       unsupported: Mapping[str, str] = MappingProxyType({})) -> None:
    """``factory`` under every name (the first is Connect's class name), taking the keys ``definition`` holds."""
    keys = PluginKeys(names[0], definition.freeze(), unsupported)
    for name in names:
        TRANSFORMS[name] = factory
        TRANSFORM_KEYS[name] = keys


def register_predicate(names: list[str], factory: Factory, definition: ConfigDef) -> None:
    """As ``register_transform``, for a predicate."""
    keys = PluginKeys(names[0], definition.freeze())
    for name in names:
        PREDICATES[name] = factory
        PREDICATE_KEYS[name] = keys


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
