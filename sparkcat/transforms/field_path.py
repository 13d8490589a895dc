"""KIP-821's field paths (``field.syntax.version``), as Kafka Connect 4.1's ``SingleFieldPath`` reads them.

``V1`` (the default) names a field at the root of the struct, dots and all. ``V2`` names a nested field
with dots between the steps (``after.id``); a step holding dots is wrapped in backticks
(```` `a.b`.c ````), and a backtick followed by a dot inside such a step is escaped with a backslash.
In Connect 4.1 only ExtractField takes ``field.syntax.version``; every other SMT refuses the key here
(``config.undeclared_key_errors``) rather than read its field names the way Connect would not.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column
from pyspark.sql import types as T

from sparkcat.api.config import ConfigDef, Type
from sparkcat.errors import ConfigError
from sparkcat.transforms.null_defaults import field_value
from sparkcat.transforms.registry import invalid

__all__ = ["FIELD_SYNTAX_VERSION", "FieldPath", "define_syntax_version", "syntax_version"]

FIELD_SYNTAX_VERSION = "field.syntax.version"
_VERSIONS = ("V1", "V2")
_DOC = ("Defines the version of the syntax to access fields. If set to `V1`, then the field paths are limited to "
        "access the elements at the root level of the struct or map. If set to `V2`, the syntax will support "
        "accessing nested elements. To access nested elements, dotted notation is used. If dots are already "
        "included in the field name, then backtick pairs can be used to wrap field names containing dots. E.g. to "
        "access the subfield `baz` from a field named \"foo.bar\" in a struct/map the following format can be used "
        "to access its elements: \"`foo.bar`.baz\".")


def define_syntax_version(definition: ConfigDef) -> ConfigDef:
    """``definition`` with Connect's ``field.syntax.version`` key (FieldSyntaxVersion.appendConfigTo)."""
    return definition.define(FIELD_SYNTAX_VERSION, Type.STRING, "V1", documentation=_DOC)


def syntax_version(settings: dict[str, str], prefix: str) -> str:
    """The configured version, upper-cased as Connect accepts it (any case); Connect's message otherwise."""
    version = (settings.get(FIELD_SYNTAX_VERSION) or "V1").strip().upper()
    if version not in _VERSIONS:
        key = prefix + FIELD_SYNTAX_VERSION
        message = invalid(key, settings.get(FIELD_SYNTAX_VERSION),
                          "String must be one of (case insensitive): " + ", ".join(_VERSIONS))
        raise ConfigError(message, {key: [message]})
    return version


def _incomplete(path: str, at: int, key: str) -> ConfigError:
    message = (f"Incomplete backtick pair in path: [{path}], consider adding a backslash before backtick at "
               f"position {at} to escape it")
    return ConfigError(message, {key: [message]})


def _backticked(path: str, idx: int, key: str) -> tuple[str, int]:
    """The step wrapped in backticks from ``path[idx]`` (a backtick), and where the next step starts."""
    backtick_at, idx = idx, idx + 1
    start, field = idx, ""
    while True:
        idx = path.find("`", idx)
        if idx == -1:
            raise _incomplete(path, backtick_at, key)
        escaped = path[idx - 1] == "\\"
        if idx >= len(path) - 1:  # the closing backtick ends the path
            if escaped:
                raise _incomplete(path, backtick_at, key)
            return field + path[start:idx], idx + 1
        if path[idx + 1] != ".":  # a backtick inside the step
            idx += 1
            continue
        if escaped:  # \`. is a backtick and a dot inside the step
            field += path[start:idx - 1] + "`"
            idx += 1
            start = idx
            continue
        return field + path[start:idx], idx + 2


def _steps_v2(path: str, key: str) -> list[str]:
    """SingleFieldPath.buildFieldPathV2: the steps of a dotted path with backtick-wrapped steps."""
    steps, idx = [], 0
    while 0 <= idx < len(path):
        if path[idx] != "`":
            end = path.find(".", idx)
            steps.append(path[idx:] if end < 0 else path[idx:end])
            idx = end if end < 0 else end + 1
        else:
            step, idx = _backticked(path, idx, key)
            steps.append(step)
    if path.endswith("."):
        steps.append("")
    return steps


@dataclass(frozen=True)
class FieldPath:
    """A field's path from the root of a struct (or string-keyed map): one step under V1, any number under V2."""

    text: str
    steps: tuple[str, ...]

    @classmethod
    def parse(cls, text: str, version: str, key: str) -> FieldPath:
        """``text`` read by ``version`` ("V1"/"V2"); ConfigError naming ``key`` for an unclosed backtick."""
        return cls(text, (text,) if version == "V1" else tuple(_steps_v2(text, key)))

    def resolve(self, base: Column, base_type: T.DataType,
                last_default: bool = False) -> tuple[Column, T.DataType] | None:
        """The column at the path under ``base`` and its type; None where a step does not exist.

        A null struct (or map) on the way gives null, as Connect's ``valueFrom`` does; a struct on the
        way that is null and has a default is its default (``Struct.get``), and so is the last field
        with ``last_default`` (``valueFrom(struct, replaceNullWithDefault)``).
        """
        column, current = base, base_type
        for index, step in enumerate(self.steps):
            if isinstance(current, T.StructType) and step in current.fieldNames():
                last = index == len(self.steps) - 1
                column = field_value(column, current[step], last_default or not last)
                current = current[step].dataType
            elif isinstance(current, T.MapType) and isinstance(current.keyType, T.StringType):
                column, current = column[step], current.valueType
            else:
                return None
        return column, current
