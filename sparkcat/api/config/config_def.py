"""``ConfigDef``: an ordered set of typed, validated key definitions, like Connect's ``ConfigDef``.

Connectors and the runtime declare their keys once; parsing and validation come from
those definitions (the REST ``config/validate`` body is rendered in
``sparkcat.config.infos``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable

from sparkcat.api.config.types import NO_DEFAULT, Importance, Type, Width, invalid_value, parse_type
from sparkcat.api.config.validators import Validator
from sparkcat.errors import ConfigError

__all__ = ["ConfigDef", "ConfigKey", "ConfigValue", "Recommender"]


@runtime_checkable
class Recommender(Protocol):
    """Suggests valid values and visibility of a key from the other parsed values (UI hints)."""

    def valid_values(self, name: str, parsed: Mapping[str, Any]) -> list[Any]: ...

    def visible(self, name: str, parsed: Mapping[str, Any]) -> bool: ...


@dataclass
class ConfigKey:
    """One defined config key: its type, default, validator and documentation."""

    name: str
    type: Type
    default: Any
    validator: Validator | None
    importance: Importance
    documentation: str
    group: str | None
    order_in_group: int
    width: Width
    display_name: str
    dependents: tuple[str, ...]
    recommender: Recommender | None = None
    internal: bool = False

    @property
    def required(self) -> bool:
        """True when the key has no default, so a config must set it."""
        return self.default is NO_DEFAULT

    @property
    def has_default(self) -> bool:
        """True when the key has a default (possibly ``None``)."""
        return self.default is not NO_DEFAULT


@dataclass
class ConfigValue:
    """The outcome of validating one key: its value, suggestions, errors and visibility."""

    name: str
    value: Any = None
    recommended_values: list[Any] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    visible: bool = True

    @classmethod
    def for_problems(cls, config: Mapping[str, Any], problems: Mapping[str, list[str]]) -> list[ConfigValue]:
        """Cross-key problems ({key: messages}) as ``Connector.validate`` gives them: one per offending key."""
        return [cls(k, config.get(k), errors=list(m)) for k, m in problems.items()]


def _missing(name: str) -> str:
    return f'Missing required configuration "{name}" which has no default value.'


def _message_of(error: ConfigError, name: str, value: Any) -> str:
    """The message of a validator error, naming the key when the validator did not."""
    text = error.message
    return text if name in text else invalid_value(name, value, text)


class ConfigDef:
    """An ordered set of config key definitions, like Connect's ``ConfigDef``.

    Keys are declared once with ``define``; ``parse`` turns a config of strings (or
    JSON/YAML scalars) into typed values and raises on any bad key, ``validate`` reports
    every key's value and errors without raising.

    >>> from sparkcat.api.config import Range, ValidString
    >>> d = (ConfigDef()
    ...      .define("tasks.max", Type.INT, 1, Range.at_least(1), Importance.HIGH, "Max tasks.")
    ...      .define("topic", Type.STRING, documentation="Topic to write.")
    ...      .define("mode", Type.STRING, "append", ValidString.in_("append", "merge")))
    >>> d.parse({"tasks.max": "3", "topic": "orders"})
    {'tasks.max': 3, 'topic': 'orders', 'mode': 'append'}
    >>> try:
    ...     d.parse({"tasks.max": "0"})
    ... except ConfigError as e:
    ...     print(e.errors["tasks.max"])
    ['Invalid value 0 for configuration tasks.max: Value must be at least 1']
    >>> [(v.name, v.errors) for v in d.validate({"topic": "orders", "mode": "upsert"}) if v.errors]
    [('mode', ['Invalid value upsert for configuration mode: String must be one of: append, merge'])]
    """

    def __init__(self) -> None:
        self._keys: dict[str, ConfigKey] = {}
        self._groups: list[str] = []
        self._frozen = False

    # ---- building

    def define(
        self,
        name: str,
        type: Type,
        default: Any = NO_DEFAULT,
        validator: Validator | None = None,
        importance: Importance = Importance.MEDIUM,
        documentation: str = "",
        group: str | None = None,
        order_in_group: int = -1,
        width: Width = Width.NONE,
        display_name: str | None = None,
        dependents: Sequence[str] = (),
        recommender: Recommender | None = None,
        internal: bool = False,
    ) -> ConfigDef:
        """Add a key; returns self for chaining.

        Raises ``ValueError`` on a duplicate name or a default that does not parse or validate.
        """
        if default is not NO_DEFAULT:
            try:
                default = parse_type(name, default, Type(type))
                if validator is not None:
                    validator.ensure_valid(name, default)
            except ConfigError as e:
                raise ValueError(f"Invalid default for configuration {name}: {e.message}") from e
        return self.define_key(
            ConfigKey(
                name=name,
                type=Type(type),
                default=default,
                validator=validator,
                importance=Importance(importance),
                documentation=documentation,
                group=group,
                order_in_group=order_in_group,
                width=Width(width),
                display_name=display_name if display_name is not None else name,
                dependents=tuple(dependents),
                recommender=recommender,
                internal=internal,
            )
        )

    def define_key(self, key: ConfigKey) -> ConfigDef:
        """Add an already built ``ConfigKey`` (its default is taken as parsed); returns self."""
        if self._frozen:
            raise TypeError("This ConfigDef is shared and frozen; build a new one with merge() or with_()")
        if key.name in self._keys:
            raise ValueError(f"Configuration {key.name} is defined twice.")
        if key.group is not None and key.group not in self._groups:
            self._groups.append(key.group)
        self._keys[key.name] = key
        return self

    def merge(self, other: ConfigDef) -> ConfigDef:
        """A new ConfigDef with this one's keys, then ``other``'s (duplicates raise ``ValueError``)."""
        merged = ConfigDef()
        for key in (*self._keys.values(), *other._keys.values()):
            merged.define_key(key)
        return merged

    def with_(self, other: ConfigDef) -> ConfigDef:
        """Alias of ``merge``."""
        return self.merge(other)

    def freeze(self) -> ConfigDef:
        """Forbid further ``define`` calls (for module-level shared definitions); returns self."""
        self._frozen = True
        return self

    # ---- inspection

    @property
    def keys(self) -> Mapping[str, ConfigKey]:
        """The defined keys by name, in definition order (read-only)."""
        return MappingProxyType(self._keys)

    def names(self) -> list[str]:
        """Defined key names in definition order."""
        return list(self._keys)

    def groups(self) -> list[str]:
        """Group names in the order they were first used."""
        return list(self._groups)

    def default_values(self) -> dict[str, Any]:
        """Defaults of the keys that have one."""
        return {k.name: k.default for k in self._keys.values() if k.has_default}

    def __contains__(self, name: object) -> bool:
        return name in self._keys

    def __len__(self) -> int:
        return len(self._keys)

    def __repr__(self) -> str:
        return f"ConfigDef({self.names()!r})"

    # ---- parsing and validation

    def _undefined_dependents(self) -> list[str]:
        seen: dict[str, None] = {}
        for key in self._keys.values():
            for dep in key.dependents:
                if dep not in self._keys:
                    seen[dep] = None
        return list(seen)

    def _check(self, key: ConfigKey, config: Mapping[str, Any]) -> tuple[Any, list[str], bool]:
        """Parse and validate one key: (value, errors, parsed_ok); a required key set to None is missing."""
        if key.name in config and not (key.required and config[key.name] is None):
            raw = config[key.name]
            try:
                value = parse_type(key.name, raw, key.type)
            except ConfigError as e:
                return raw, [e.message], False
        elif key.required:
            return None, [_missing(key.name)], False
        else:
            value = key.default
        if key.validator is not None:
            try:
                key.validator.ensure_valid(key.name, value)
            except ConfigError as e:
                return value, [_message_of(e, key.name, value)], True
        return value, [], True

    def parse(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """Typed values for every defined key, defaults applied; unknown keys are ignored.

        Raises ``ConfigError`` whose ``errors`` maps every bad key to its messages.
        """
        errors: dict[str, list[str]] = {}
        for dep in self._undefined_dependents():
            errors[dep] = [f"{dep} is referred in the dependents, but not defined."]
        values: dict[str, Any] = {}
        for key in self._keys.values():
            value, key_errors, _ = self._check(key, config)
            if key_errors:
                errors[key.name] = key_errors
            else:
                values[key.name] = value
        if errors:
            messages = [m for msgs in errors.values() for m in msgs]
            raise ConfigError(f"Invalid configuration for {', '.join(errors)}: " + "; ".join(messages), errors)
        return values

    def validate(self, config: Mapping[str, Any]) -> list[ConfigValue]:
        """A ``ConfigValue`` for every defined key, with all its errors (never raises for bad values).

        ``value`` is the parsed value, the default, or the raw value when it could not be parsed.
        """
        results: dict[str, ConfigValue] = {}
        parsed: dict[str, Any] = {}
        for dep in self._undefined_dependents():
            results[dep] = ConfigValue(dep, errors=[f"{dep} is referred in the dependents, but not defined."], visible=False)
        for key in self._keys.values():
            value, key_errors, ok = self._check(key, config)
            results[key.name] = ConfigValue(key.name, value, [], key_errors)
            if ok:
                parsed[key.name] = value
        for key in self._keys.values():
            if key.recommender is None:
                continue
            result = results[key.name]
            try:
                result.recommended_values = list(key.recommender.valid_values(key.name, parsed))
                result.visible = bool(key.recommender.visible(key.name, parsed))
            except ConfigError as e:
                result.errors.append(e.message)
        return list(results.values())
