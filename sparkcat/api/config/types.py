"""Config value types and their text forms: ``Type``, ``Password``, ``parse_type`` and Connect's strings.

``connect_string`` is the one place a Python value becomes the text Connect would hold
(booleans ``true``/``false``, lists joined with ``,``); REST bodies, specs and the config
log all render through it.
"""

from __future__ import annotations

import re
from enum import Enum
from typing import Any

from sparkcat.errors import ConfigError

__all__ = [
    "NO_DEFAULT",
    "Importance",
    "Password",
    "Type",
    "Width",
    "config_error",
    "connect_string",
    "convert_to_string",
    "invalid_value",
    "parse_type",
    "scalar_string",
]


class _ConnectName(str, Enum):
    """An enum whose ``str()`` is its value: Connect's name, as REST responses send it."""

    def __str__(self) -> str:
        return self.value


class Type(_ConnectName):
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


class Importance(_ConnectName):
    """How likely a user is to need to change a key (shown in docs and REST)."""

    HIGH = "HIGH"
    MEDIUM = "MEDIUM"
    LOW = "LOW"


class Width(_ConnectName):
    """A UI hint for the width of a key's input field."""

    NONE = "NONE"
    SHORT = "SHORT"
    MEDIUM = "MEDIUM"
    LONG = "LONG"


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


SCALARS = (str, bool, int, float)
"""The JSON/YAML value types Connect's REST layer accepts for a config value."""


def connect_string(value: Any) -> str | None:
    """The text Connect holds for ``value``: booleans ``true``/``false``, lists joined with ``,``.

    ``None`` stays ``None`` (each caller decides what a missing value reads as);
    a ``Password`` shows as ``[hidden]``.

    >>> connect_string(True), connect_string(3), connect_string(["a", 1, False]), connect_string(None)
    ('true', '3', 'a,1,false', None)
    """
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(connect_string(v) or "" for v in value)
    return str(value)


def scalar_string(value: Any) -> str | None:
    """``connect_string`` of a JSON/YAML scalar (str, bool, int, float); None for anything else.

    >>> scalar_string(False), scalar_string(1.5), scalar_string({"a": 1})
    ('false', '1.5', None)
    """
    return connect_string(value) if isinstance(value, SCALARS) else None


def _java_str(value: Any) -> str:
    """Render a value the way Java's string concatenation would (for error messages)."""
    if value is None:
        return "null"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_java_str(v) for v in value) + "]"
    return connect_string(value) or ""


def invalid_value(name: str, value: Any, message: str | None = None) -> str:
    """Connect's ``ConfigException`` wording: ``Invalid value V for configuration NAME: MESSAGE``."""
    text = f"Invalid value {_java_str(value)} for configuration {name}"
    return text + (f": {message}" if message is not None else "")


def config_error(name: str, value: Any, message: str) -> ConfigError:
    """A ``ConfigError`` for one key, worded as ``invalid_value`` and listed under that key."""
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
        raise config_error(name, value, "Expected value to be either true or false")
    if type_ in (Type.STRING, Type.PASSWORD):
        if isinstance(value, Password):
            if type_ is Type.PASSWORD:
                return value
            raise config_error(name, value, "Expected value to be a string, but it was a Password")
        text = scalar_string(value)
        if text is None:
            raise config_error(name, value, f"Expected value to be a string, but it was a {type(value).__name__}")
        return Password(text.strip()) if type_ is Type.PASSWORD else text.strip()
    if type_ in _BITS:
        if isinstance(value, int) and not isinstance(value, bool):
            number = value
        elif trimmed is not None:
            if not _INT_RE.fullmatch(trimmed):
                raise config_error(name, value, f"Not a number of type {type_.value}")
            number = int(trimmed)
        else:
            raise config_error(
                name, value, f"Expected value to be {_INT_EXPECTED[type_]}, but it was a {type(value).__name__}"
            )
        bits = _BITS[type_]
        if not -(2 ** (bits - 1)) <= number < 2 ** (bits - 1):
            raise config_error(name, value, f"Not a number of type {type_.value}")
        return number
    if type_ is Type.DOUBLE:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if trimmed is not None and _DOUBLE_RE.fullmatch(trimmed):
            return float(trimmed.rstrip("fFdD").replace("Infinity", "inf"))
        if trimmed is not None:
            raise config_error(name, value, f"Not a number of type {type_.value}")
        raise config_error(name, value, f"Expected value to be a double, but it was a {type(value).__name__}")
    if type_ is Type.LIST:
        if isinstance(value, (list, tuple)):
            items = [scalar_string(v) for v in value]
            if any(item is None for item in items):
                raise config_error(name, value, "Expected a comma separated list.")
            return items
        if trimmed is not None:
            return [] if not trimmed else [item.strip() for item in trimmed.split(",")]
        raise config_error(name, value, "Expected a comma separated list.")
    if type_ is Type.CLASS:
        if isinstance(value, type):
            return f"{value.__module__}.{value.__qualname__}"
        if trimmed is not None:
            return trimmed
        raise config_error(name, value, "Expected a Class instance or class name.")
    raise ValueError(f"Unknown type {type_!r}")


def convert_to_string(value: Any, type_: Type | None = None) -> str | None:
    """The string form Connect shows for a parsed value (REST ``value``/``default_value``).

    Lists are joined with ``,``; booleans are ``true``/``false``; passwords are ``[hidden]``.

    >>> convert_to_string(["a", "b"], Type.LIST), convert_to_string("x", Type.PASSWORD)
    ('a,b', '[hidden]')
    """
    if type_ is Type.PASSWORD and value is not None:
        return Password.HIDDEN
    return connect_string(value)
