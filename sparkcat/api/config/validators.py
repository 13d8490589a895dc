"""Validators of one parsed config value, with Connect's error wording and doc descriptions."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sparkcat.api.config.types import config_error

__all__ = [
    "Custom",
    "NonEmptyString",
    "NonEmptyStringWithoutControlChars",
    "Range",
    "ValidList",
    "ValidString",
    "Validator",
]

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
            raise config_error(name, None, "Value must be non-null")
        if self.min is not None and value < self.min:
            raise config_error(name, value, f"Value must be at least {self.min}")
        if self.max is not None and value > self.max:
            raise config_error(name, value, f"Value must be no more than {self.max}")

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
                raise config_error(name, value, "String must be one of (case insensitive): " + ", ".join(self.valid))
        elif value not in self.valid:
            raise config_error(name, value, "String must be one of: " + ", ".join(self.valid))

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
            raise config_error(name, value, "String must be non-empty")

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
            raise config_error(name, value, "String may not be empty")
        bad = [str(ord(c)) for c in value if ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F]
        if bad:
            raise config_error(
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
            raise config_error(name, value, message)

    def __str__(self) -> str:
        return self.description
