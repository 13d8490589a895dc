"""Maven's version ordering and version ranges, as Kafka Connect 4.1 reads a ``*.plugin.version`` (KIP-891).

Connect parses a plugin version spec with Maven's ``VersionRange.createFromVersionSpec`` and compares versions
with ``ComparableVersion`` (maven-artifact 3.9.6, the one connect-runtime 4.1.1 ships). This module is a port of
both, so that sparkcat accepts and refuses the same specs with the same messages:

>>> ComparableVersion("1.0-alpha-1") < ComparableVersion("1.0-beta") < ComparableVersion("1.0")
True
>>> ComparableVersion("3.6.1.Final") == ComparableVersion("3.6.1")
True
>>> VersionRange.parse("[1.0,2.0)").contains("1.5")
True
>>> str(VersionRange.parse("[4.1.1]"))
'[4.1.1,4.1.1]'
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

__all__ = ["ComparableVersion", "InvalidVersionSpec", "Restriction", "VersionRange"]

#: Maven's well-known qualifiers, lowest first ("" is a release).
QUALIFIERS = ("alpha", "beta", "milestone", "rc", "snapshot", "", "sp")
ALIASES = {"ga": "", "final": "", "release": "", "cr": "rc"}
RELEASE_INDEX = str(QUALIFIERS.index(""))


class InvalidVersionSpec(ValueError):
    """A version spec Maven refuses; the message is Maven's (``Unbounded range: [1.0``)."""


@dataclass(frozen=True)
class _Int:
    value: int

    def is_null(self) -> bool:
        return self.value == 0

    def compare(self, other) -> int:
        if other is None:
            return 0 if self.value == 0 else 1
        if isinstance(other, _Int):
            return (self.value > other.value) - (self.value < other.value)
        return 1  # 1.1 > 1-sp and 1.1 > 1-1


@dataclass(frozen=True)
class _Str:
    value: str

    @staticmethod
    def of(text: str, followed_by_digit: bool) -> _Str:
        if followed_by_digit and len(text) == 1:
            text = {"a": "alpha", "b": "beta", "m": "milestone"}.get(text, text)
        return _Str(ALIASES.get(text, text))

    def is_null(self) -> bool:
        return self.value == ""

    @staticmethod
    def _rank(qualifier: str) -> str:
        """Maven compares qualifiers by these strings: a known one's index, an unknown one after all of them."""
        return str(QUALIFIERS.index(qualifier)) if qualifier in QUALIFIERS else f"{len(QUALIFIERS)}-{qualifier}"

    def compare(self, other) -> int:
        if other is None:
            mine, theirs = self._rank(self.value), RELEASE_INDEX
        elif isinstance(other, _Str):
            mine, theirs = self._rank(self.value), self._rank(other.value)
        else:
            return -1  # 1.any < 1.1 and 1-sp < 1-1
        return (mine > theirs) - (mine < theirs)


@dataclass
class _List:
    items: list = field(default_factory=list)

    def is_null(self) -> bool:
        return not self.items

    def normalize(self) -> None:
        """Drop null trailing items (0, "", empty lists) up to the last non-list item, as Maven does."""
        for i in range(len(self.items) - 1, -1, -1):
            if self.items[i].is_null():
                del self.items[i]
            elif not isinstance(self.items[i], _List):
                break

    def compare(self, other) -> int:
        if other is None:
            return next((r for r in (i.compare(None) for i in self.items) if r), 0)
        if isinstance(other, _Int):
            return -1  # 1-1 < 1.0.x
        if isinstance(other, _Str):
            return 1  # 1-1 > 1-sp
        for i in range(max(len(self.items), len(other.items))):
            left = self.items[i] if i < len(self.items) else None
            right = other.items[i] if i < len(other.items) else None
            result = (0 if right is None else -right.compare(left)) if left is None else left.compare(right)
            if result:
                return result
        return 0


def _item(is_digit: bool, text: str):
    return _Int(int(text)) if is_digit else _Str.of(text, False)


def _parse(version: str) -> _List:
    """Maven's ``ComparableVersion.parseVersion``: items split at '.', '-' and digit/letter changes."""
    version = version.lower()
    root = current = _List()
    stack = [root]

    def push_list() -> _List:
        new = _List()
        current.items.append(new)
        stack.append(new)
        return new

    is_digit, start = False, 0
    for i, c in enumerate(version):
        if c in ".-":
            current.items.append(_Int(0) if i == start else _item(is_digit, version[start:i]))
            start = i + 1
            if c == "-":
                current = push_list()
        elif c.isdecimal():
            if not is_digit and i > start:  # 1.0.0.X1 < 1.0.0-X2: treat .X as -X
                if current.items:
                    current = push_list()
                current.items.append(_Str.of(version[start:i], True))
                start = i
                current = push_list()
            is_digit = True
        else:
            if is_digit and i > start:
                current.items.append(_item(True, version[start:i]))
                start = i
                current = push_list()
            is_digit = False
    if len(version) > start:
        if not is_digit and current.items:
            current = push_list()
        current.items.append(_item(is_digit, version[start:]))
    while stack:
        stack.pop().normalize()
    return root


@functools.total_ordering
class ComparableVersion:
    """A version string ordered as Maven orders it (``ComparableVersion``); ``str()`` gives it back as written."""

    def __init__(self, text: str):
        self.text = text
        self._items = _parse(text)

    def compare(self, other: ComparableVersion | str) -> int:
        other = other if isinstance(other, ComparableVersion) else ComparableVersion(other)
        return self._items.compare(other._items)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, (ComparableVersion, str)) and self.compare(other) == 0

    def __lt__(self, other: ComparableVersion | str) -> bool:
        return self.compare(other) < 0

    def __hash__(self) -> int:
        return hash(repr(self._items))

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"ComparableVersion({self.text!r})"


@dataclass(frozen=True)
class Restriction:
    """One interval of a range; a missing bound is unbounded (Maven's ``Restriction``)."""

    lower: ComparableVersion | None
    lower_inclusive: bool
    upper: ComparableVersion | None
    upper_inclusive: bool

    def contains(self, version: ComparableVersion) -> bool:
        if self.lower is not None:
            c = self.lower.compare(version)
            if c > 0 or (c == 0 and not self.lower_inclusive):
                return False
        if self.upper is not None:
            c = self.upper.compare(version)
            if c < 0 or (c == 0 and not self.upper_inclusive):
                return False
        return True

    def __str__(self) -> str:
        return "".join(("[" if self.lower_inclusive else "(", str(self.lower or ""), ",", str(self.upper or ""),
                        "]" if self.upper_inclusive else ")"))


EVERYTHING = Restriction(None, False, None, False)


def _restriction(spec: str) -> Restriction:
    """Maven's ``VersionRange.parseRestriction`` of one ``[a,b)``-style interval."""
    lower_inclusive, upper_inclusive = spec.startswith("["), spec.endswith("]")
    inner = spec[1:-1].strip()
    if "," not in inner:
        if not lower_inclusive or not upper_inclusive:
            raise InvalidVersionSpec(f"Single version must be surrounded by []: {spec}")
        version = ComparableVersion(inner)
        return Restriction(version, True, version, True)
    low_text, high_text = (part.strip() for part in inner.split(",", 1))
    low = ComparableVersion(low_text) if low_text else None
    high = ComparableVersion(high_text) if high_text else None
    if low is not None and high is not None:
        c = high.compare(low)
        if c < 0 or (c == 0 and not (lower_inclusive and upper_inclusive)):
            raise InvalidVersionSpec(f"Range defies version ordering: {spec}")
    return Restriction(low, lower_inclusive, high, upper_inclusive)


@dataclass(frozen=True)
class VersionRange:
    """A parsed spec: a soft ``recommended`` version (a bare ``1.0``) or ``restrictions`` (``[1.0,2.0),[3.0,)``)."""

    recommended: ComparableVersion | None
    restrictions: tuple[Restriction, ...]

    @classmethod
    def parse(cls, spec: str) -> VersionRange:
        """Maven's ``VersionRange.createFromVersionSpec``, its messages included."""
        restrictions: list[Restriction] = []
        rest, upper = spec, None
        while rest.startswith(("[", "(")):
            closes = [i for i in (rest.find(")"), rest.find("]")) if i >= 0]
            if not closes:
                raise InvalidVersionSpec(f"Unbounded range: {spec}")
            end = min(closes)
            restriction = _restriction(rest[:end + 1])
            if upper is not None and (restriction.lower is None or restriction.lower.compare(upper) < 0):
                raise InvalidVersionSpec(f"Ranges overlap: {spec}")
            restrictions.append(restriction)
            upper = restriction.upper
            rest = rest[end + 1:].strip()
            if rest.startswith(","):
                rest = rest[1:].strip()
        if rest and restrictions:
            raise InvalidVersionSpec(f"Only fully-qualified sets allowed in multiple set scenario: {spec}")
        if rest:
            return cls(ComparableVersion(rest), (EVERYTHING,))
        return cls(None, tuple(restrictions))

    @property
    def has_restrictions(self) -> bool:
        """Whether the spec is a range (Maven: restrictions and no recommended version)."""
        return bool(self.restrictions) and self.recommended is None

    def contains(self, version: ComparableVersion | str) -> bool:
        version = version if isinstance(version, ComparableVersion) else ComparableVersion(version)
        return any(r.contains(version) for r in self.restrictions)

    def __str__(self) -> str:
        if self.recommended is not None:
            return str(self.recommended)
        return ",".join(str(r) for r in self.restrictions)
