"""Connect's SetSchemaMetadata: ``schema.name`` / ``schema.version`` on a source connector's struct value.

A record's schema here is its Spark type, which has no name; the name and version go on the
``value`` column's metadata (``frame.SCHEMA_NAME``/``SCHEMA_VERSION``) and the source writer hands
them to the value converter, so JsonConverter with ``schemas.enable`` writes them in the
envelope's schema as Connect does (``"name"``, ``"version"`` after ``"optional"``). Where no
converter would see them it is refused rather than ignored: ``SetSchemaMetadata$Key`` (a source
key is written without a schema), sink connectors (their tasks get plain values), a value that
is not a struct, and a predicate (one batch has one value schema).
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column
from pyspark.sql import types as T

from sparkcat.api.config import ConfigDef, Type
from sparkcat.errors import ConfigError
from sparkcat.transforms.fields import PKG
from sparkcat.transforms.frame import SCHEMA_NAME, SCHEMA_VERSION, DataError, Records
from sparkcat.transforms.registry import bool_value, invalid, register_transform

__all__ = ["SetSchemaMetadata", "SET_SCHEMA_METADATA"]

SET_SCHEMA_METADATA = PKG + "SetSchemaMetadata"


@dataclass
class SetSchemaMetadata:
    """Sets the value schema's name and/or version (None: keep what it had)."""

    name: str | None
    version: int | None

    def apply(self, records: Records, alias: str, where: Column | None) -> Records:
        type_key = f"transforms.{alias}.type"
        if records.kind != "source":
            message = (f"{SET_SCHEMA_METADATA}$Value on a sink connector: its task gets plain values without a "
                       "Connect schema, so a schema name or version would reach nothing")
            raise DataError(message, {type_key: [message]})
        if where is not None:
            message = f"transforms.{alias}: SetSchemaMetadata takes no predicate here (a batch has one value schema)"
            raise DataError(message, {f"transforms.{alias}.predicate": [message]})
        if not isinstance(records.data_type("value"), T.StructType):
            message = (f"transforms.{alias}: sparkcat carries a schema name and version only for struct values "
                       f"(this value is {records.data_type('value').simpleString()})")
            raise DataError(message, {type_key: [message]})
        updated = dict(records.value_schema)
        if self.name is not None:
            updated[SCHEMA_NAME] = self.name
        if self.version is not None:
            updated[SCHEMA_VERSION] = self.version
        return records.with_value_schema(updated)


def _set_schema_metadata(settings: dict[str, str], prefix: str) -> SetSchemaMetadata:
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
    bool_value(prefix + _REPLACE_NULL, settings.get(_REPLACE_NULL), True)
    if name is None and version is None:
        raise ConfigError("Neither schema name nor version configured",
                          {prefix + "type": ["Neither schema name nor version configured"]})
    return SetSchemaMetadata(name, version)


def _refuse_key(settings: dict[str, str], prefix: str) -> SetSchemaMetadata:
    message = (f"{SET_SCHEMA_METADATA}$Key is not supported by sparkcat: a source connector's key is written "
               "without a schema and a sink task gets plain keys, so a key schema name or version would reach "
               "nothing; remove the transformation")
    raise ConfigError(message, {prefix + "type": [message]})


_REPLACE_NULL = "replace.null.with.default"
_KEYS = (ConfigDef().define("schema.name", Type.STRING, None, documentation="Schema name to set.")
         .define("schema.version", Type.INT, None, documentation="Schema version to set.")
         .define(_REPLACE_NULL, Type.BOOLEAN, True,
                 documentation="Whether to replace fields that have a default value and that are null to the default "
                               "value. When set to true, the default value is used, otherwise null is used (the "
                               "struct types sparkcat names have no field defaults, so both keep nulls)."))
register_transform([SET_SCHEMA_METADATA + "$Value", "SetSchemaMetadata$Value"], _set_schema_metadata, _KEYS)
register_transform([SET_SCHEMA_METADATA + "$Key", "SetSchemaMetadata$Key"], _refuse_key, _KEYS)
