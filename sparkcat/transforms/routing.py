"""Connect's routing, header and filter SMTs and its three predicates, as Spark column expressions.

RegexRouter and TimestampRouter rewrite the topic column; InsertHeader, DropHeaders and
HeaderFrom the headers column (header values as SimpleHeaderConverter writes them: UTF-8 text);
Filter marks records dropped. Predicates return a boolean column: TopicNameMatches,
HasHeaderKey, RecordIsTombstone. Regexes are Java's, both in Connect and in Spark's ``rlike``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkcat.api.config import NO_DEFAULT, ConfigDef, Type
from sparkcat.errors import ConfigError
from sparkcat.transforms.registry import (
    invalid, list_value, missing, register_predicate, register_transform,
)
from sparkcat.transforms.conversions import utc_text
from sparkcat.transforms.fields import PKG, register_value_smt, struct_fields
from sparkcat.transforms.frame import DataError, Records
from sparkcat.transforms.null_defaults import copied_fields, define_replace_null, field_value, replace_null

__all__ = ["java_regex_problem"]

PREDICATES_PKG = PKG + "predicates."


def java_regex_problem(pattern: str) -> str | None:
    """Why ``pattern`` is not a usable regex (checked with Python's ``re``, close to Java's for common syntax)."""
    try:
        re.compile(pattern.replace("\\p{", "\\w{") if "\\p{" in pattern else pattern)
    except re.error as e:
        return str(e)
    return None


def _regex(settings: dict[str, str], prefix: str, key: str, label: str = "Invalid regex: ") -> str:
    pattern = settings.get(key)
    if pattern is None or pattern == "":
        raise ConfigError(missing(prefix + key), {prefix + key: [missing(prefix + key)]})
    problem = java_regex_problem(pattern)
    if problem is not None:
        message = invalid(prefix + key, pattern, label + problem)
        raise ConfigError(message, {prefix + key: [message]})
    return pattern


def _matches(column: Column, pattern: str) -> Column:
    """Java's ``Matcher.matches()``: the whole text matches."""
    return column.rlike(f"^(?:{pattern})$")


# ------------------------------------------------------------------ routers


@dataclass
class RegexRouter:
    """A topic the regex matches whole is replaced by ``replacement`` (``$1`` names groups), as Connect."""

    regex: str
    replacement: str

    def apply(self, records: Records, alias: str, where: Column | None) -> Records:
        new = F.regexp_replace(F.col("topic"), F.lit(f"^(?:{self.regex})$"), F.lit(self.replacement))
        return records.set(alias, "topic", new, where)


def _regex_router(settings: dict[str, str], prefix: str) -> RegexRouter:
    replacement = settings.get("replacement")
    regex = _regex(settings, prefix, "regex")
    if replacement is None:
        raise ConfigError(missing(prefix + "replacement"), {prefix + "replacement": [missing(prefix + "replacement")]})
    return RegexRouter(regex, replacement)


@dataclass
class TimestampRouter:
    """The topic becomes ``topic.format`` with ``${topic}`` and ``${timestamp}`` (the record's, in UTC)."""

    topic_format: str
    timestamp_format: str

    def apply(self, records: Records, alias: str, where: Column | None) -> Records:
        stamp = utc_text(F.timestamp_millis(F.col(records.timestamp)), self.timestamp_format)
        pieces: list[Column] = []
        for i, part in enumerate(self.topic_format.split("${topic}")):
            if i:
                pieces.append(F.col("topic"))
            for j, text in enumerate(part.split("${timestamp}")):
                if j:
                    pieces.append(stamp)
                pieces.append(F.lit(text))
        return records.set(alias, "topic", F.concat(*pieces), where)


def _timestamp_router(settings: dict[str, str], prefix: str) -> TimestampRouter:
    return TimestampRouter(settings.get("topic.format") or "${topic}-${timestamp}",
                           settings.get("timestamp.format") or "yyyyMMdd")


# ------------------------------------------------------------------ headers


def _header(name: str, value: Column) -> Column:
    return F.struct(F.lit(name).alias("key"), value.cast("binary").alias("value"))


def _headers() -> Column:
    return F.coalesce(F.col("headers"), F.array().cast("array<struct<key:string,value:binary>>"))


@dataclass
class InsertHeader:
    """Adds header ``header`` with the literal value ``value.literal`` to every record."""

    header: str
    literal: str

    def apply(self, records: Records, alias: str, where: Column | None) -> Records:
        new = F.concat(_headers(), F.array(_header(self.header, F.lit(self.literal))))
        return records.set(alias, "headers", new, where)


def _insert_header(settings: dict[str, str], prefix: str) -> InsertHeader:
    for key in ("header", "value.literal"):
        if settings.get(key) is None:
            raise ConfigError(missing(prefix + key), {prefix + key: [missing(prefix + key)]})
    return InsertHeader(settings["header"], settings["value.literal"])


@dataclass
class DropHeaders:
    """Removes every header whose key is in ``headers``."""

    names: list[str]

    def apply(self, records: Records, alias: str, where: Column | None) -> Records:
        new = F.filter(_headers(), lambda h: ~h["key"].isin(*self.names))
        return records.set(alias, "headers", new, where)


def _drop_headers(settings: dict[str, str], prefix: str) -> DropHeaders:
    names = list_value(settings.get("headers"))
    if not names:
        message = invalid(prefix + "headers", settings.get("headers", ""), "Empty list")
        raise ConfigError(message, {prefix + "headers": [message]})
    return DropHeaders(names)


@dataclass
class HeaderFrom:
    """Copies (or moves) value ``fields`` into ``headers``, values as SimpleHeaderConverter's text."""

    fields: list[str]
    headers: list[str]
    move: bool
    replace_null: bool = True      # replace.null.with.default: a header's (and a kept field's) null -> its default

    def apply(self, records: Records, alias: str, where: Column | None) -> Records:
        names = struct_fields(records, "header " + ("move" if self.move else "copy"))
        value_type = records.data_type("value")
        added = []
        for field, header in zip(self.fields, self.headers):
            if field not in names:
                raise DataError(f"{field} is not a valid field name")
            if isinstance(value_type[field].dataType, (T.StructType, T.ArrayType, T.MapType)):
                raise DataError(f"transforms.{alias}: HeaderFrom of the non-primitive field {field} is not "
                                "supported by sparkcat yet")
            added.append(_header(header, field_value(F.col("value"), value_type[field], self.replace_null)
                                 .cast("string")))
        out = records.set(alias, "headers", F.concat(_headers(), F.array(*added)), where)
        if self.move:
            kept = copied_fields(F.col("value"), value_type, self.replace_null,
                                 [n for n in names if n not in self.fields])
            out = out.set(alias, "value", F.when(F.col("value").isNotNull(), F.struct(*kept)), where)
        return out


def _header_from(settings: dict[str, str], prefix: str) -> HeaderFrom:
    fields, headers = list_value(settings.get("fields")), list_value(settings.get("headers"))
    for key, items in (("fields", fields), ("headers", headers)):
        if not items:
            message = invalid(prefix + key, settings.get(key, ""), "Empty list")
            raise ConfigError(message, {prefix + key: [message]})
    if len(fields) != len(headers):
        message = "'fields' config must have the same number of elements as 'headers' config."
        raise ConfigError(message, {prefix + "fields": [message]})
    operation = (settings.get("operation") or "").strip()
    if not operation:
        raise ConfigError(missing(prefix + "operation"), {prefix + "operation": [missing(prefix + "operation")]})
    if operation not in ("copy", "move"):
        message = invalid(prefix + "operation", operation, "String must be one of: move, copy")
        raise ConfigError(message, {prefix + "operation": [message]})
    return HeaderFrom(fields, headers, operation == "move", replace_null(settings, prefix))


# ------------------------------------------------------------------ Filter and predicates


@dataclass
class Filter:
    """Drops every record (the ones its predicate selects, when it has one)."""

    def apply(self, records: Records, alias: str, where: Column | None) -> Records:
        return records.drop_where(where)


@dataclass
class TopicNameMatches:
    """True for records whose topic matches ``pattern`` whole."""

    pattern: str

    def condition(self, records: Records) -> Column:
        return F.coalesce(_matches(F.col("topic"), self.pattern), F.lit(False))


@dataclass
class HasHeaderKey:
    """True for records with at least one header named ``name``."""

    name: str

    def condition(self, records: Records) -> Column:
        return F.exists(_headers(), lambda h: h["key"] == F.lit(self.name))


@dataclass
class RecordIsTombstone:
    """True for records whose value is null."""

    def condition(self, records: Records) -> Column:
        return F.col("value").isNull()


def _topic_name_matches(settings: dict[str, str], prefix: str) -> TopicNameMatches:
    return TopicNameMatches(_regex(settings, prefix, "pattern", "entry must be a Java-compatible regular expression: "))


def _has_header_key(settings: dict[str, str], prefix: str) -> HasHeaderKey:
    name = settings.get("name")
    if not name:
        message = invalid(prefix + "name", name or "", "String must be non-empty")
        raise ConfigError(message, {prefix + "name": [message]})
    return HasHeaderKey(name)


def _keys(*keys: tuple[str, Type, object, str]) -> ConfigDef:
    """A ConfigDef of (name, type, default, documentation) keys."""
    definition = ConfigDef()
    for name, kind, default, doc in keys:
        definition.define(name, kind, default, documentation=doc)
    return definition


register_transform([PKG + "RegexRouter", "RegexRouter"], _regex_router, _keys(
    ("regex", Type.STRING, NO_DEFAULT, "Regular expression to use for matching."),
    ("replacement", Type.STRING, NO_DEFAULT, "Replacement string.")))
register_transform([PKG + "TimestampRouter", "TimestampRouter"], _timestamp_router, _keys(
    ("topic.format", Type.STRING, "${topic}-${timestamp}", "Format string with ${topic} and ${timestamp}."),
    ("timestamp.format", Type.STRING, "yyyyMMdd", "Format string for the timestamp (SimpleDateFormat).")))
register_transform([PKG + "InsertHeader", "InsertHeader"], _insert_header, _keys(
    ("header", Type.STRING, NO_DEFAULT, "The name of the header."),
    ("value.literal", Type.STRING, NO_DEFAULT, "The literal value of the header.")))
register_transform([PKG + "DropHeaders", "DropHeaders"], _drop_headers, _keys(
    ("headers", Type.LIST, NO_DEFAULT, "The names of the headers to remove.")))
register_value_smt("HeaderFrom", _header_from, define_replace_null(_keys(
    ("fields", Type.LIST, NO_DEFAULT, "Field names in the record whose values are to be copied or moved."),
    ("headers", Type.LIST, NO_DEFAULT, "Header names, in the same order as the field names."),
    ("operation", Type.STRING, NO_DEFAULT, "move or copy."))))
register_transform([PKG + "Filter", "Filter"], lambda settings, prefix: Filter(), _keys())
register_predicate([PREDICATES_PKG + "TopicNameMatches", "TopicNameMatches"], _topic_name_matches, _keys(
    ("pattern", Type.STRING, NO_DEFAULT, "A Java regular expression for matching against the record's topic.")))
register_predicate([PREDICATES_PKG + "HasHeaderKey", "HasHeaderKey"], _has_header_key, _keys(
    ("name", Type.STRING, NO_DEFAULT, "The header name.")))
register_predicate([PREDICATES_PKG + "RecordIsTombstone", "RecordIsTombstone"],
                   lambda settings, prefix: RecordIsTombstone(), _keys())
