"""JSON read back through its JSON Schema, as Confluent's ``JsonSchemaData.toConnectData`` reads it (sink side).

A sink record's value is JSON written under a registered JSON Schema, by sparkcat, a Connect worker's
JsonSchemaConverter or any other producer. The schema says what the JSON stands for, as JsonSchemaData's
``toConnectSchema`` reads it: an ``object`` with ``properties`` is a struct (a dict, its fields in
``connect.index`` order, a missing one null), an ``object`` with ``connect.type: map`` a map, an ``array``
with ``connect.type: map`` a map of ``key``/``value`` entries, a ``string`` with ``connect.type: bytes``
bytes (base64), the titles of Connect's logical types a ``decimal.Decimal`` (from base64 bytes with the
``scale`` parameter, or from a number), a ``datetime.date``, a ``datetime.time`` or a UTC
``datetime.datetime``; ``integer`` an int, ``number`` a float (``connect.type`` bytes: a Decimal). A ``oneOf``
/ ``anyOf`` of null and one schema is that schema, optional; any other is Connect's union struct, a dict
with the one field ``io.confluent.connect.json.OneOf.field.N`` of the branch the value matches. A
schema without a type (everit's empty schema, Connect's variant) gives the JSON as it is, and local
``$ref`` pointers (``#/definitions/...``, ``#/$defs/...``) are followed.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
from typing import Any

from sparkcat.converters.json_schema_data import DATE, DECIMAL, TIME, TIMESTAMP
from sparkcat.errors import SparkcatError

ONE_OF_FIELD = "io.confluent.connect.json.OneOf.field."
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "null": (type(None),), "boolean": (bool,), "string": (str,), "array": (list,), "object": (dict,),
    "integer": (int, decimal.Decimal), "number": (int, float, decimal.Decimal)}


class JsonSchemaError(SparkcatError):
    """A record that cannot be written or read with its JSON Schema (names the topic)."""


def loads(payload: bytes) -> Any:
    """JSON text with its non-integral numbers as Decimals (a NUMERIC Decimal keeps every digit)."""
    return json.loads(payload, parse_float=decimal.Decimal)


def read_value(schema: Any, value: Any) -> Any:
    """``value`` (from ``loads``) as the Python value its JSON Schema ``schema`` stands for."""
    return _Reader(schema if isinstance(schema, dict) else {}).read(schema, value)


class _Reader:
    """Reads values against one root schema (for its ``$ref`` pointers)."""

    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root

    def read(self, schema: Any, value: Any) -> Any:
        if value is None:
            return None
        if schema is True or not isinstance(schema, dict):
            return _plain(value)
        if "$ref" in schema:
            return self.read(self._resolve(schema["$ref"]), value)
        for key in ("oneOf", "anyOf"):
            if key in schema:
                return self._union(schema[key], value)
        if "allOf" in schema:
            return self.read(_merged(schema["allOf"]), value)
        kind = schema.get("type")
        if isinstance(kind, list):
            kinds = [k for k in kind if k != "null"]
            return self._union([{**schema, "type": k} for k in kinds], value)
        if "enum" in schema or "const" in schema:
            return value
        return self._typed(schema, kind, value)

    def _typed(self, schema: dict[str, Any], kind: Any, value: Any) -> Any:
        connect_type, title = schema.get("connect.type"), schema.get("title")
        if kind == "object":
            return self._object(schema, connect_type, value)
        if kind == "array":
            if connect_type == "map":
                entry = self._deref(schema.get("items") or {}).get("properties", {})
                return {self.read(entry.get("key"), e.get("key")): self.read(entry.get("value"), e.get("value"))
                        for e in value}
            return [self.read(schema.get("items"), v) for v in value]
        if title == DECIMAL:
            return _decimal(schema, value)
        if kind == "string":
            return base64.b64decode(value) if connect_type == "bytes" else value
        if kind in ("integer", "number"):
            return _number(kind, connect_type, title, value)
        return _plain(value)

    def _object(self, schema: dict[str, Any], connect_type: Any, value: Any) -> Any:
        if not isinstance(value, dict):
            raise ValueError(f"a JSON object was expected, not {_kind(value)}")
        if connect_type == "map":
            values = schema.get("additionalProperties")
            return {k: self.read(values, v) for k, v in value.items()}
        properties = schema.get("properties") or {}
        order = sorted(enumerate(properties.items()),
                       key=lambda p: (self._deref(p[1][1]).get("connect.index", p[0]), p[0]))
        return {name: self.read(sub, value.get(name)) for _, (name, sub) in order}

    def _union(self, branches: list[Any], value: Any) -> Any:
        typed = [b for b in branches if self._deref(b).get("type") != "null"]
        if len(typed) == 1 and len(branches) <= 2:
            return self.read(typed[0], value)
        for index, branch in enumerate(typed):
            if self._matches(branch, value):
                return {f"{ONE_OF_FIELD}{index}": self.read(branch, value)}
        raise ValueError(f"no branch of the oneOf matches {_kind(value)}")

    def _matches(self, branch: Any, value: Any) -> bool:
        kind = self._deref(branch).get("type")
        kinds = _JSON_TYPES.get(kind) if isinstance(kind, str) else None
        if kinds is None:
            return True
        return isinstance(value, kinds) and not (isinstance(value, bool) and kind in ("integer", "number"))

    def _deref(self, schema: Any) -> dict[str, Any]:
        while isinstance(schema, dict) and "$ref" in schema:
            schema = self._resolve(schema["$ref"])
        return schema if isinstance(schema, dict) else {}

    def _resolve(self, ref: str) -> Any:
        if not ref.startswith("#"):
            raise ValueError(f"the schema refers to {ref!r}: schema references are not supported by sparkcat")
        node: Any = self.root
        for part in filter(None, ref[1:].split("/")):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, dict) or part not in node:
                raise ValueError(f"the schema's $ref {ref!r} points nowhere")
            node = node[part]
        return node


def _merged(parts: list[Any]) -> dict[str, Any]:
    """An ``allOf`` as JsonSchemaData reads it: the properties of all its object parts, else its first part."""
    properties = {k: v for p in parts if isinstance(p, dict) for k, v in (p.get("properties") or {}).items()}
    if properties:
        return {"type": "object", "properties": properties}
    return next((p for p in parts if isinstance(p, dict)), {})


def _decimal(schema: dict[str, Any], value: Any) -> decimal.Decimal:
    if isinstance(value, (int, decimal.Decimal)) and not isinstance(value, bool):
        return decimal.Decimal(value)
    scale = int((schema.get("connect.parameters") or {}).get("scale", "0"))
    unscaled = int.from_bytes(base64.b64decode(value), "big", signed=True)
    return decimal.Decimal(unscaled).scaleb(-scale)


def _number(kind: str, connect_type: Any, title: Any, value: Any) -> Any:
    if isinstance(value, str):  # Jackson writes NaN and the infinities as strings
        return float(value)
    if connect_type == "bytes":  # a Decimal without its title
        return decimal.Decimal(value)
    if title == DATE:
        return dt.date(1970, 1, 1) + dt.timedelta(days=int(value))
    if title == TIME:
        return (dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=int(value))).time()
    if title == TIMESTAMP:
        return _EPOCH + dt.timedelta(milliseconds=int(value))
    if connect_type in ("int8", "int16", "int32", "int64") or (kind == "integer" and connect_type is None):
        return int(value)
    return float(value)


def _plain(value: Any) -> Any:
    """JSON without a schema: its numbers as Python's json reads them."""
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _kind(value: Any) -> str:
    return type(value).__name__
