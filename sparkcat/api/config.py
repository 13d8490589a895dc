"""Typed, validated configuration definitions, modelled on Kafka Connect's ``ConfigDef``.

Connectors and the runtime declare their keys once; parsing, validation, the REST
``config/validate`` response and the generated docs all come from those definitions.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable

from sparkcat.errors import ConfigError

__all__ = [
    "COMMON_CONNECTOR_CONFIG",
    "NO_DEFAULT",
    "SINK_CONNECTOR_CONFIG",
    "SOURCE_CONNECTOR_CONFIG",
    "ConfigDef",
    "ConfigKey",
    "ConfigValue",
    "Custom",
    "Importance",
    "NonEmptyString",
    "NonEmptyStringWithoutControlChars",
    "Password",
    "Range",
    "Recommender",
    "Type",
    "ValidList",
    "ValidString",
    "Validator",
    "Width",
    "convert_to_string",
    "invalid_value",
    "parse_type",
]


class Type(str, Enum):
    """The type of a config value; values are Connect's names, as sent in REST responses."""

    BOOLEAN = "BOOLEAN"
    STRING = "STRING"
    INT = "INT"
    SHORT = "SHORT"
    LONG = "LONG"
    DOUBLE = "DOUBLE"
    LIST = "LIST"
    CLASS = "CLASS"
    PASSWORD = "PASSWORD"

    def __str__(self) -> str:
        return self.value


class Importance(str, Enum):
    """How likely a user is to need to change a key (shown in docs and REST)."""

    HIGH = "HIGH"
    MEDIUM = "MEDIUM"
    LOW = "LOW"

    def __str__(self) -> str:
        return self.value


class Width(str, Enum):
    """A UI hint for the width of a key's input field."""

    NONE = "NONE"
    SHORT = "SHORT"
    MEDIUM = "MEDIUM"
    LONG = "LONG"

    def __str__(self) -> str:
        return self.value


class _NoDefault:
    """Type of the ``NO_DEFAULT`` sentinel."""

    _instance: _NoDefault | None = None

    def __new__(cls) -> _NoDefault:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NO_DEFAULT"

    def __reduce__(self) -> str:
        return "NO_DEFAULT"


NO_DEFAULT: Any = _NoDefault()
"""Default of a key that has none: the key is required."""


class Password:
    """A secret config value that never shows in logs, reprs or REST responses.

    >>> p = Password("s3cret")
    >>> str(p), p.value
    ('[hidden]', 's3cret')
    """

    HIDDEN = "[hidden]"
    __slots__ = ("value",)

    def __init__(self, value: str):
        self.value = value

    def __str__(self) -> str:
        return self.HIDDEN

    def __repr__(self) -> str:
        return self.HIDDEN

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Password) and other.value == self.value

    def __hash__(self) -> int:
        return hash(self.value)


# --------------------------------------------------------------------------- values


def _java_str(value: Any) -> str:
    """Render a value the way Java's string concatenation would (for error messages)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_java_str(v) for v in value) + "]"
    return str(value)


def invalid_value(name: str, value: Any, message: str | None = None) -> str:
    """Connect's ``ConfigException`` wording: ``Invalid value V for configuration NAME: MESSAGE``."""
    text = f"Invalid value {_java_str(value)} for configuration {name}"
    return text + (f": {message}" if message is not None else "")


def _error(name: str, value: Any, message: str) -> ConfigError:
    return ConfigError(invalid_value(name, value, message), {name: [invalid_value(name, value, message)]})


_INT_RE = re.compile(r"[+-]?[0-9]+")
_DOUBLE_RE = re.compile(
    r"[+-]?(?:NaN|Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFdD]?)"
)
_BITS = {Type.SHORT: 16, Type.INT: 32, Type.LONG: 64}
_INT_EXPECTED = {
    Type.SHORT: "a 16-bit integer (short)",
    Type.INT: "a 32-bit integer",
    Type.LONG: "a 64-bit integer (long)",
}


def _scalar_to_str(value: Any) -> str | None:
    """Coerce a JSON/YAML scalar to the string Connect's REST layer would have received."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return None


def parse_type(name: str, value: Any, type_: Type) -> Any:
    """Parse one raw value (a string, or a native JSON/YAML value) into ``type_``.

    Follows Connect's ``ConfigDef.parseType``: strings are trimmed; ``None`` stays ``None``.
    Raises ``ConfigError`` with Connect's wording when the value does not fit.
    """
    if value is None:
        return None
    trimmed = value.strip() if isinstance(value, str) else None
    if type_ is Type.BOOLEAN:
        if isinstance(value, bool):
            return value
        if trimmed is not None and trimmed.lower() in ("true", "false"):
            return trimmed.lower() == "true"
        raise _error(name, value, "Expected value to be either true or false")
    if type_ in (Type.STRING, Type.PASSWORD):
        if isinstance(value, Password):
            if type_ is Type.PASSWORD:
                return value
            raise _error(name, value, "Expected value to be a string, but it was a Password")
        text = _scalar_to_str(value)
        if text is None:
            raise _error(name, value, f"Expected value to be a string, but it was a {type(value).__name__}")
        return Password(text.strip()) if type_ is Type.PASSWORD else text.strip()
    if type_ in _BITS:
        if isinstance(value, int) and not isinstance(value, bool):
            number = value
        elif trimmed is not None:
            if not _INT_RE.fullmatch(trimmed):
                raise _error(name, value, f"Not a number of type {type_.value}")
            number = int(trimmed)
        else:
            raise _error(
                name, value, f"Expected value to be {_INT_EXPECTED[type_]}, but it was a {type(value).__name__}"
            )
        bits = _BITS[type_]
        if not -(2 ** (bits - 1)) <= number < 2 ** (bits - 1):
            raise _error(name, value, f"Not a number of type {type_.value}")
        return number
    if type_ is Type.DOUBLE:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if trimmed is not None and _DOUBLE_RE.fullmatch(trimmed):
            return float(trimmed.rstrip("fFdD").replace("Infinity", "inf"))
        if trimmed is not None:
            raise _error(name, value, f"Not a number of type {type_.value}")
        raise _error(name, value, f"Expected value to be a double, but it was a {type(value).__name__}")
    if type_ is Type.LIST:
        if isinstance(value, (list, tuple)):
            items = [_scalar_to_str(v) for v in value]
            if any(item is None for item in items):
                raise _error(name, value, "Expected a comma separated list.")
            return items
        if trimmed is not None:
            return [] if not trimmed else [item.strip() for item in trimmed.split(",")]
        raise _error(name, value, "Expected a comma separated list.")
    if type_ is Type.CLASS:
        if isinstance(value, type):
            return f"{value.__module__}.{value.__qualname__}"
        if trimmed is not None:
            return trimmed
        raise _error(name, value, "Expected a Class instance or class name.")
    raise ValueError(f"Unknown type {type_!r}")


def convert_to_string(value: Any, type_: Type | None = None) -> str | None:
    """The string form Connect shows for a parsed value (REST ``value``/``default_value``, docs).

    Lists are joined with ``,``; booleans are ``true``/``false``; passwords are ``[hidden]``.
    """
    if value is None:
        return None
    if type_ is Type.PASSWORD or isinstance(value, Password):
        return Password.HIDDEN
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(convert_to_string(v) or "" for v in value)
    return str(value)


# --------------------------------------------------------------------------- validators


class Validator:
    """Checks one parsed value; ``str()`` describes the allowed values for the docs."""

    def ensure_valid(self, name: str, value: Any) -> None:
        """Raise ``ConfigError`` (Connect's wording) when ``value`` is not allowed."""
        raise NotImplementedError

    def __call__(self, name: str, value: Any) -> None:
        self.ensure_valid(name, value)


class Range(Validator):
    """A numeric range with inclusive bounds.

    >>> str(Range.at_least(1)), str(Range.between(0, 10))
    ('[1,...]', '[0,...,10]')
    """

    def __init__(self, min_: float | None = None, max_: float | None = None):
        self.min = min_
        self.max = max_

    @classmethod
    def at_least(cls, min_: float) -> Range:
        """Values ``>= min_``."""
        return cls(min_, None)

    @classmethod
    def between(cls, min_: float, max_: float) -> Range:
        """Values in ``[min_, max_]``."""
        return cls(min_, max_)

    def ensure_valid(self, name: str, value: Any) -> None:
        if value is None:
            raise _error(name, None, "Value must be non-null")
        if self.min is not None and value < self.min:
            raise _error(name, value, f"Value must be at least {self.min}")
        if self.max is not None and value > self.max:
            raise _error(name, value, f"Value must be no more than {self.max}")

    def __str__(self) -> str:
        if self.min is None and self.max is None:
            return "[...]"
        if self.min is None:
            return f"[...,{self.max}]"
        if self.max is None:
            return f"[{self.min},...]"
        return f"[{self.min},...,{self.max}]"

    def __repr__(self) -> str:
        return f"Range({self.min!r}, {self.max!r})"


class ValidString(Validator):
    """The value must be one of the given strings (case-sensitive unless ``in_ignore_case``).

    >>> str(ValidString.in_("none", "all"))
    '[none, all]'
    """

    def __init__(self, valid: Sequence[str], ignore_case: bool = False):
        self.ignore_case = ignore_case
        self.valid = [v.upper() for v in valid] if ignore_case else list(valid)

    @classmethod
    def in_(cls, *valid: str) -> ValidString:
        """Exactly one of ``valid``."""
        return cls(valid)

    @classmethod
    def in_ignore_case(cls, *valid: str) -> ValidString:
        """One of ``valid``, ignoring case (Connect's ``CaseInsensitiveValidString``)."""
        return cls(valid, ignore_case=True)

    def ensure_valid(self, name: str, value: Any) -> None:
        if self.ignore_case:
            if not isinstance(value, str) or value.upper() not in self.valid:
                raise _error(name, value, "String must be one of (case insensitive): " + ", ".join(self.valid))
        elif value not in self.valid:
            raise _error(name, value, "String must be one of: " + ", ".join(self.valid))

    def __str__(self) -> str:
        listed = "[" + ", ".join(self.valid) + "]"
        return f"(case insensitive) {listed}" if self.ignore_case else listed

    def __repr__(self) -> str:
        return f"ValidString({self.valid!r}, ignore_case={self.ignore_case})"


class ValidList(Validator):
    """Each item of a LIST value must be one of the given strings.

    >>> str(ValidList.in_("a", "b"))
    '[a, b]'
    """

    def __init__(self, valid: Sequence[str]):
        self.valid_string = ValidString(valid)

    @classmethod
    def in_(cls, *valid: str) -> ValidList:
        """Every item one of ``valid``."""
        return cls(valid)

    def ensure_valid(self, name: str, value: Any) -> None:
        for item in value or ():
            self.valid_string.ensure_valid(name, item)

    def __str__(self) -> str:
        return str(self.valid_string)


class NonEmptyString(Validator):
    """A string that is not empty (``None`` passes: required-ness is checked separately).

    >>> str(NonEmptyString())
    'non-empty string'
    """

    def ensure_valid(self, name: str, value: Any) -> None:
        if value is not None and value == "":
            raise _error(name, value, "String must be non-empty")

    def __str__(self) -> str:
        return "non-empty string"


class NonEmptyStringWithoutControlChars(Validator):
    """A non-empty string without ISO control characters (Connect's rule for connector names).

    >>> str(NonEmptyStringWithoutControlChars())
    'non-empty string without ISO control characters'
    """

    def ensure_valid(self, name: str, value: Any) -> None:
        if value is None:
            return
        if value == "":
            raise _error(name, value, "String may not be empty")
        bad = [str(ord(c)) for c in value if ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F]
        if bad:
            raise _error(
                name,
                value,
                "String may not contain control sequences but had the following ASCII chars: " + ", ".join(bad),
            )

    def __str__(self) -> str:
        return "non-empty string without ISO control characters"


class Custom(Validator):
    """A validator from a function ``fn(name, value)`` that raises ``ConfigError`` or returns an error string.

    >>> even = Custom(lambda n, v: None if v % 2 == 0 else "must be even", "even numbers")
    >>> str(even)
    'even numbers'
    """

    def __init__(self, fn: Callable[[str, Any], str | None], description: str):
        self.fn = fn
        self.description = description

    def ensure_valid(self, name: str, value: Any) -> None:
        message = self.fn(name, value)
        if message:
            raise _error(name, value, message)

    def __str__(self) -> str:
        return self.description


@runtime_checkable
class Recommender(Protocol):
    """Suggests valid values and visibility of a key from the other parsed values (UI hints)."""

    def valid_values(self, name: str, parsed: Mapping[str, Any]) -> list[Any]: ...

    def visible(self, name: str, parsed: Mapping[str, Any]) -> bool: ...


# --------------------------------------------------------------------------- definitions


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


def _missing(name: str) -> str:
    return f'Missing required configuration "{name}" which has no default value.'


def _message_of(error: ConfigError, name: str, value: Any) -> str:
    """The message of a validator error, naming the key when the validator did not."""
    text = error.message
    return text if name in text else invalid_value(name, value, text)


class ConfigDef:
    """An ordered set of config key definitions, like Connect's ``ConfigDef``.

    >>> d = (ConfigDef()
    ...      .define("tasks.max", Type.INT, 1, Range.at_least(1), Importance.HIGH, "Max tasks.")
    ...      .define("topic", Type.STRING, documentation="Topic to write."))
    >>> d.parse({"tasks.max": "3", "topic": "orders"})
    {'tasks.max': 3, 'topic': 'orders'}
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

    def validate_response(
        self,
        connector_class_name: str,
        config: Mapping[str, Any],
        extra_values: Iterable[ConfigValue] = (),
    ) -> dict[str, Any]:
        """The JSON body of Connect's ``PUT /connector-plugins/{plugin}/config/validate``.

        ``extra_values`` (e.g. a connector's multi-key checks) replace the value of the same
        name, as in Connect; names not defined here get a ``null`` definition. ``error_count``
        counts error messages, as Connect does. Passwords show as ``[hidden]``.
        """
        values: dict[str, ConfigValue] = {v.name: v for v in self.validate(config)}
        for extra in extra_values:
            values[extra.name] = replace(extra, errors=list(extra.errors))
        for name, raw in config.items():
            if raw is None:
                target = values.setdefault(name, ConfigValue(name))
                target.errors.append("Null value can not be supplied as the configuration value.")
        configs: list[dict[str, Any]] = []
        error_count = 0
        for name, value in values.items():
            if name not in self._keys:
                configs.append({"definition": None, "value": _value_info(value, None)})
                error_count += len(value.errors)
        for name, key in self._keys.items():
            value_info = None
            if name in values:
                value_info = _value_info(values[name], key.type)
                error_count += len(values[name].errors)
            configs.append({"definition": _key_info(key), "value": value_info})
        return {
            "name": connector_class_name,
            "error_count": error_count,
            "groups": self.groups(),
            "configs": configs,
        }

    def key_infos(self) -> list[dict[str, Any]]:
        """The definitions as Connect's ``GET /connector-plugins/{plugin}/config`` lists them."""
        return [_key_info(k) for k in self._keys.values()]

    # ---- docs

    def _sorted_keys(self) -> list[ConfigKey]:
        """Connect's doc order: by group, order in group, required first, importance, name."""
        group_ord = {g: i for i, g in enumerate(self._groups)}
        importance_ord = {Importance.HIGH: 0, Importance.MEDIUM: 1, Importance.LOW: 2}
        return sorted(
            (k for k in self._keys.values() if not k.internal),
            key=lambda k: (
                -1 if k.group is None else group_ord[k.group],
                k.order_in_group,
                0 if k.required else 1,
                importance_ord[k.importance],
                k.name,
            ),
        )

    def to_markdown(self) -> str:
        """A Markdown table of the keys (name, doc, type, default, valid values, importance)."""
        lines = [
            "| Name | Description | Type | Default | Valid Values | Importance |",
            "|---|---|---|---|---|---|",
        ]
        for key in self._sorted_keys():
            cells = [f"`{key.name}`", key.documentation, *_doc_fields(key)]
            lines.append("| " + " | ".join(_md_cell(c) for c in cells) + " |")
        return "\n".join(lines) + "\n"

    def to_rst(self) -> str:
        """The keys in reStructuredText, as Connect's ``toRst`` lays them out."""
        out: list[str] = []
        for key in self._sorted_keys():
            out.append(f"``{key.name}``\n")
            lines = [line for line in (key.documentation or "").split("\n") if line]
            if lines:
                out.extend(f"  {line}\n\n" for line in lines)
            else:
                out.append("\n")
            type_, default, valid, importance = _doc_fields(key)
            out.append(f"  * Type: {type_}\n")
            if key.has_default:
                out.append(f"  * Default: {default}\n")
            if key.validator is not None:
                out.append(f"  * Valid Values: {valid}\n")
            out.append(f"  * Importance: {importance}\n\n")
        return "".join(out)


def _key_info(key: ConfigKey) -> dict[str, Any]:
    return {
        "name": key.name,
        "type": key.type.value,
        "required": key.required,
        "default_value": None if key.required else convert_to_string(key.default, key.type),
        "importance": key.importance.value,
        "documentation": key.documentation,
        "group": key.group,
        "width": key.width.value,
        "display_name": key.display_name,
        "dependents": list(key.dependents),
        "order": key.order_in_group,
    }


def _value_info(value: ConfigValue, type_: Type | None) -> dict[str, Any]:
    recommended_type = Type.STRING if type_ is Type.LIST else type_
    return {
        "name": value.name,
        "value": convert_to_string(value.value, type_),
        "recommended_values": [convert_to_string(v, recommended_type) for v in value.recommended_values],
        "errors": list(value.errors),
        "visible": value.visible,
    }


def _nice_time(millis: int) -> str:
    value, i = millis, 0
    for divisor in (1000, 60, 60, 24):
        if value == 0 or value % divisor:
            break
        value //= divisor
        i += 1
    units = ("second", "minute", "hour", "day")
    return f" ({value} {units[i - 1]}{'s' if value > 1 else ''})" if i else ""


def _nice_bytes(size: int) -> str:
    value, i = size, 0
    while value != 0 and i < 4 and value % 1024 == 0:
        value //= 1024
        i += 1
    units = ("kibibyte", "mebibyte", "gibibyte", "tebibyte")
    return f" ({value} {units[i - 1]}{'' if value == 1 else 's'})" if i else ""


def _doc_fields(key: ConfigKey) -> tuple[str, str, str, str]:
    """(type, default, valid values, importance) as Connect's generated docs show them."""
    default = ""
    if key.has_default:
        text = convert_to_string(key.default, key.type)
        if text is None:
            default = "null"
        elif text == "":
            default = '""'
        else:
            default = text
            if isinstance(key.default, int) and not isinstance(key.default, bool):
                if key.name.endswith(".bytes"):
                    default += _nice_bytes(key.default)
                elif key.name.endswith(".ms"):
                    default += _nice_time(key.default)
    valid = str(key.validator) if key.validator is not None else ""
    return key.type.value.lower(), default, valid, key.importance.value.lower()


def _md_cell(text: str) -> str:
    return text.replace("\n", " ").replace("|", "\\|")


# --------------------------------------------------------------------------- Connect's connector keys

COMMON_GROUP = "Common"
TRANSFORMS_GROUP = "Transforms"
PREDICATES_GROUP = "Predicates"
ERROR_GROUP = "Error Handling"
SPARK_GROUP = "Spark"
TOPIC_CREATION_GROUP = "Topic Creation"
EXACTLY_ONCE_SUPPORT_GROUP = "Exactly Once Support"
OFFSETS_TOPIC_GROUP = "offsets.topic"


class _UniqueAliases(Validator):
    """Connect's alias validator: a non-null list without duplicates (a class, so it pickles)."""

    def __init__(self, kind: str):
        self.kind = kind

    def ensure_valid(self, name: str, value: Any) -> None:
        if value is None:
            raise _error(name, "null", "entry must be non null")
        if len(value) > len(set(value)):
            raise _error(name, value, "Duplicate alias provided.")

    def __str__(self) -> str:
        return f"non-null string, unique {self.kind} aliases"


def _valid_regex(name: str, value: Any) -> str | None:
    try:
        re.compile(value or "")
    except re.error as e:
        return f"Invalid regex: {e}"
    return None


_CONVERTER_DOC = (
    "Converter class used to convert between Kafka Connect format and the serialized form that is written"
    " to Kafka. This controls the format of the {part} in messages written to or read from Kafka, and since"
    " this is independent of connectors it allows any connector to work with any serialization format."
    " Examples of common formats include JSON and Avro."
)


def _common_connector_config() -> ConfigDef:
    return (
        ConfigDef()
        .define("name", Type.STRING, NO_DEFAULT, NonEmptyStringWithoutControlChars(), Importance.HIGH,
                "Globally unique name to use for this connector.", COMMON_GROUP, 1, Width.MEDIUM, "Connector name")
        .define("connector.class", Type.STRING, NO_DEFAULT, None, Importance.HIGH,
                "Name or alias of the class for this connector.", COMMON_GROUP, 2, Width.LONG, "Connector class")
        .define("tasks.max", Type.INT, 1, Range.at_least(1), Importance.HIGH,
                "Maximum number of tasks to use for this connector.", COMMON_GROUP, 3, Width.SHORT, "Tasks max")
        .define("key.converter", Type.CLASS, None, None, Importance.LOW,
                _CONVERTER_DOC.format(part="keys"), COMMON_GROUP, 5, Width.SHORT, "Key converter class")
        .define("value.converter", Type.CLASS, None, None, Importance.LOW,
                _CONVERTER_DOC.format(part="values"), COMMON_GROUP, 6, Width.SHORT, "Value converter class")
        .define("header.converter", Type.CLASS, None, None, Importance.LOW,
                "HeaderConverter class used to convert between Kafka Connect format and the serialized form that is"
                " written to Kafka. Unset means the worker's setting is used.",
                COMMON_GROUP, 7, Width.SHORT, "Header converter class")
        .define("transforms", Type.LIST, "", _UniqueAliases("transformation"), Importance.LOW,
                "Aliases for the transformations to be applied to records.",
                TRANSFORMS_GROUP, 8, Width.LONG, "Transforms")
        .define("predicates", Type.LIST, "", _UniqueAliases("predicate"), Importance.LOW,
                "Aliases for the predicates used by transformations.", PREDICATES_GROUP, 9, Width.LONG, "Predicates")
        .define("config.action.reload", Type.STRING, "restart", ValidString.in_("none", "restart"), Importance.LOW,
                "The action to take on the connector when external configuration providers change its"
                " configuration: 'none' does nothing, 'restart' restarts it with the updated configuration.",
                COMMON_GROUP, 10, Width.MEDIUM, "Reload Action")
        .define("errors.retry.timeout", Type.LONG, 0, None, Importance.MEDIUM,
                "The maximum duration in milliseconds that a failed operation will be reattempted. The default is 0,"
                " which means no retries will be attempted. Use -1 for infinite retries.",
                ERROR_GROUP, 1, Width.MEDIUM, "Retry Timeout for Errors")
        .define("errors.retry.delay.max.ms", Type.LONG, 60000, None, Importance.MEDIUM,
                "The maximum duration in milliseconds between consecutive retry attempts.",
                ERROR_GROUP, 2, Width.MEDIUM, "Maximum Delay Between Retries for Errors")
        .define("errors.tolerance", Type.STRING, "none", ValidString.in_("none", "all"), Importance.MEDIUM,
                "Behavior for tolerating errors during connector operation. 'none' is the default value and signals"
                " that any error will result in an immediate connector task failure; 'all' changes the behavior to"
                " skip over problematic records.", ERROR_GROUP, 3, Width.SHORT, "Error Tolerance")
        .define("errors.log.enable", Type.BOOLEAN, False, None, Importance.MEDIUM,
                "If true, write each error and the details of the failed operation and problematic record to the"
                " application log.", ERROR_GROUP, 4, Width.SHORT, "Log Errors")
        .define("errors.log.include.messages", Type.BOOLEAN, False, None, Importance.MEDIUM,
                "Whether to include in the log the record that resulted in a failure. False by default, so record"
                " keys, values and headers are not written to log files.", ERROR_GROUP, 5, Width.SHORT,
                "Log Error Details")
        .define("batch.max.records", Type.LONG, 100000, Range.at_least(1), Importance.MEDIUM,
                "Maximum number of records each task contributes to one Spark micro-batch (Spark admission"
                " control), bounding batch size and latency.", SPARK_GROUP, 1, Width.SHORT, "Max records per batch")
        .define("trigger.interval.ms", Type.LONG, 1000, Range.at_least(0), Importance.MEDIUM,
                "Interval in milliseconds between Spark micro-batch triggers; 0 starts the next batch as soon as the"
                " previous one finishes.", SPARK_GROUP, 2, Width.SHORT, "Trigger interval (ms)")
    )


def _source_keys() -> ConfigDef:
    return (
        ConfigDef()
        .define("topic.creation.groups", Type.LIST, "", _UniqueAliases("topic creation group"), Importance.LOW,
                "Groups of configurations for topics created by source connectors",
                TOPIC_CREATION_GROUP, 1, Width.LONG, "Topic Creation Groups")
        .define("exactly.once.support", Type.STRING, "requested", ValidString.in_ignore_case("requested", "required"),
                Importance.MEDIUM,
                "Permitted values are requested, required. If set to \"required\", forces a preflight check that"
                " the connector can provide exactly-once semantics with the given configuration.",
                EXACTLY_ONCE_SUPPORT_GROUP, 2, Width.SHORT, "Exactly once support")
        .define("transaction.boundary", Type.STRING, "poll",
                ValidString.in_ignore_case("poll", "interval", "connector"), Importance.MEDIUM,
                "Permitted values are: poll, interval, connector. 'poll' commits a transaction for every batch of"
                " records a task provides; 'connector' relies on connector-defined boundaries; 'interval' commits"
                " after a user-defined time interval.", EXACTLY_ONCE_SUPPORT_GROUP, 3, Width.SHORT,
                "Transaction Boundary")
        .define("offsets.storage.topic", Type.STRING, None, NonEmptyString(), Importance.LOW,
                "The name of a separate offsets topic to use for this connector. If empty or not specified, the"
                " worker's global offsets topic name will be used.", OFFSETS_TOPIC_GROUP, 1, Width.LONG,
                "Offsets topic")
    )


def _sink_keys() -> ConfigDef:
    return (
        ConfigDef()
        .define("topics", Type.LIST, "", None, Importance.HIGH,
                "List of topics to consume, separated by commas", COMMON_GROUP, 4, Width.LONG, "Topics")
        .define("topics.regex", Type.STRING, "", Custom(_valid_regex, "valid regex"), Importance.HIGH,
                "Regular expression giving topics to consume. Only one of topics or topics.regex should be"
                " specified.", COMMON_GROUP, 4, Width.LONG, "Topics regex")
        .define("errors.deadletterqueue.topic.name", Type.STRING, "", None, Importance.MEDIUM,
                "The name of the topic to be used as the dead letter queue (DLQ) for messages that result in an"
                " error when processed by this sink connector, or its transformations or converters. Blank by"
                " default, which means that no messages are to be recorded in the DLQ.",
                ERROR_GROUP, 6, Width.MEDIUM, "Dead Letter Queue Topic Name")
        .define("errors.deadletterqueue.topic.replication.factor", Type.SHORT, 3, None, Importance.MEDIUM,
                "Replication factor used to create the dead letter queue topic when it doesn't already exist.",
                ERROR_GROUP, 7, Width.MEDIUM, "Dead Letter Queue Topic Replication Factor")
        .define("errors.deadletterqueue.context.headers.enable", Type.BOOLEAN, False, None, Importance.MEDIUM,
                "If true, add headers containing error context to the messages written to the dead letter queue."
                " All error context header keys start with __connect.errors.",
                ERROR_GROUP, 8, Width.MEDIUM, "Enable Error Context Headers")
    )


COMMON_CONNECTOR_CONFIG: ConfigDef = _common_connector_config().freeze()
"""Keys every connector accepts (Connect's ``ConnectorConfig``) plus sparkcat's "Spark" group."""

SOURCE_CONNECTOR_CONFIG: ConfigDef = COMMON_CONNECTOR_CONFIG.merge(_source_keys()).freeze()
"""Keys of a source connector (Connect's ``SourceConnectorConfig``)."""

SINK_CONNECTOR_CONFIG: ConfigDef = COMMON_CONNECTOR_CONFIG.merge(_sink_keys()).freeze()
"""Keys of a sink connector (Connect's ``SinkConnectorConfig``)."""
