"""Connect's SetSchemaMetadata: ``schema.name`` / ``schema.version`` on a source connector's struct value or key.

A record's schema here is its Spark type, which has no name; the name and version go on the
``value`` column's metadata (``frame.SCHEMA_NAME``/``SCHEMA_VERSION``) and the source writer hands
them to the value converter, so JsonConverter with ``schemas.enable`` writes them in the
envelope's schema as Connect does (``"name"``, ``"version"`` after ``"optional"``).
``SetSchemaMetadata$Key`` does the same for a key ``ValueToKey`` built (a source key that has a
schema; its type rides on the key column's metadata with them, ``keys.key_as_json``). Where no
converter would see them it is refused rather than ignored: sink connectors (their tasks get
plain keys and values), a source task's own key (JSON text without a schema), a part that is not
a struct, and a predicate (one batch has one schema).
"""
from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column
from pyspark.sql import types as T

from sparkcat.api.config import ConfigDef, Type
from sparkcat.errors import ConfigError
from sparkcat.transforms.fields import PKG
from sparkcat.transforms.frame import SCHEMA_NAME, SCHEMA_VERSION, DataError, Records, json_faithful
from sparkcat.transforms.null_defaults import define_replace_null, replace_null
from sparkcat.transforms.registry import invalid, register_transform

__all__ = ["SetSchemaMetadata", "SET_SCHEMA_METADATA"]

SET_SCHEMA_METADATA = PKG + "SetSchemaMetadata"


@dataclass
class SetSchemaMetadata:
    """Sets the value's (or the key's: ``part``) schema name and/or version (None: keep what it had)."""

    name: str | None
    version: int | None
    part: str = "value"

    def apply(self, records: Records, alias: str, where: Column | None) -> Records:
        type_key = f"transforms.{alias}.type"
        variant = f"{SET_SCHEMA_METADATA}${self.part.capitalize()}"
        if records.kind != "source":
            message = (f"{variant} on a sink connector: its task gets plain {self.part}s without a Connect schema, so "
                       "a schema name or version would reach nothing")
            raise DataError(message, {type_key: [message]})
        if where is not None:
            message = (f"transforms.{alias}: SetSchemaMetadata takes no predicate here (a batch has one "
                       f"{self.part} schema)")
            raise DataError(message, {f"transforms.{alias}.predicate": [message]})
        if self.part == "key":
            _check_key(records, alias, variant)
        if not isinstance(records.data_type(self.part), T.StructType):
            message = (f"transforms.{alias}: sparkcat carries a schema name and version only for struct "
                       f"{self.part}s (this {self.part} is {records.data_type(self.part).simpleString()})")
            raise DataError(message, {type_key: [message]})
        current = records.key_schema if self.part == "key" else records.value_schema
        updated = dict(current)
        if self.name is not None:
            updated[SCHEMA_NAME] = self.name
        if self.version is not None:
            updated[SCHEMA_VERSION] = self.version
        return records.with_key_schema(updated) if self.part == "key" else records.with_value_schema(updated)


def _check_key(records: Records, alias: str, variant: str) -> None:
    """A source key has a schema only once ``ValueToKey`` built it, and is written with it if JSON keeps it."""
    type_key = f"transforms.{alias}.type"
    if records.key_json:
        message = (f"transforms.{alias}: {variant} needs a key with a schema, and this connector's key is JSON "
                   "text without one (a source task's key); build the key with ValueToKey first")
        raise DataError(message, {type_key: [message]})
    if not json_faithful(records.data_type("key")):
        message = (f"transforms.{alias}: sparkcat writes a source key's schema only for keys of numbers, booleans, "
                   f"strings, structs, arrays and string-keyed maps (this key is "
                   f"{records.data_type('key').simpleString()})")
        raise DataError(message, {type_key: [message]})


def _set_schema_metadata(settings: dict[str, str], prefix: str, part: str = "value") -> SetSchemaMetadata:
    name = settings.get("schema.name")
    version_text = settings.get("schema.version")
    version = None
    if version_text is not None and version_text.strip():
        try:
            version = int(version_text.strip())
        except ValueError:
            message = invalid(prefix + "schema.version", version_text, "Not a number of type INT")
            raise ConfigError(message, {prefix + "schema.version": [message]}) from None
    # Connect copies a struct's null fields with their schema defaults (true) or without (false); the struct
    # types sparkcat names (a source task's value schema) have no field defaults, so both give the same record
    replace_null(settings, prefix)
    if name is None and version is None:
        raise ConfigError("Neither schema name nor version configured",
                          {prefix + "type": ["Neither schema name nor version configured"]})
    return SetSchemaMetadata(name, version, part)


def _set_key_schema_metadata(settings: dict[str, str], prefix: str) -> SetSchemaMetadata:
    return _set_schema_metadata(settings, prefix, "key")


_KEYS = define_replace_null(ConfigDef().define("schema.name", Type.STRING, None, documentation="Schema name to set.")
                            .define("schema.version", Type.INT, None, documentation="Schema version to set."))
register_transform([SET_SCHEMA_METADATA + "$Value", "SetSchemaMetadata$Value"], _set_schema_metadata, _KEYS)
register_transform([SET_SCHEMA_METADATA + "$Key", "SetSchemaMetadata$Key"], _set_key_schema_metadata, _KEYS)
