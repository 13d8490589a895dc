"""Connect's field defaults on Spark struct fields, and KIP-1040's ``replace.null.with.default`` of the field SMTs.

A Connect struct field may have a default value (``SchemaBuilder.defaultValue``); Connect's
``Struct.get(field)`` returns it where the field's value is null, ``getWithoutDefault`` the null.
Here a field's default rides on its ``StructField``'s metadata under ``FIELD_DEFAULT``, as the JSON
text Connect's JsonConverter writes in an envelope schema's ``"default"`` (bytes as base64): sink
decoding puts it there from the envelope (``spark.executor.sink_decode.spark_type``), and Spark
keeps it through ``withField``, ``struct`` and ``from_json``, so a later SMT still sees it, as a
Connect field's schema keeps its default through the chain.

The SMTs that define ``replace.null.with.default`` (Cast, ExtractField, HeaderFrom, InsertField,
MaskField, ReplaceField, TimestampConverter, ValueToKey; default true) read the fields they copy
with ``get`` when it is true and ``getWithoutDefault`` when false: ``field_value`` is that read.
"""

from __future__ import annotations

import json

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkcat.api.config import ConfigDef, Type
from sparkcat.transforms.registry import bool_value

__all__ = ["FIELD_DEFAULT", "REPLACE_NULL", "define_replace_null", "replace_null", "default_column", "field_value",
           "copied_fields", "has_defaults", "with_field_defaults"]

#: StructField metadata key: the field's Connect default value as JSON text (JsonConverter's envelope form).
FIELD_DEFAULT = "connect.default"
REPLACE_NULL = "replace.null.with.default"
_DOC = ("Whether to replace fields that have a default value and that are null to the default value. When set to "
        "true, the default value is used, otherwise null is used.")


def define_replace_null(definition: ConfigDef) -> ConfigDef:
    """``definition`` with KIP-1040's key, as Connect 4.1's SMTs define it (BOOLEAN, default true)."""
    return definition.define(REPLACE_NULL, Type.BOOLEAN, True, documentation=_DOC)


def replace_null(settings: dict[str, str], prefix: str) -> bool:
    """The configured ``replace.null.with.default`` (true when absent); a non-boolean refused as Connect does."""
    return bool_value(prefix + REPLACE_NULL, settings.get(REPLACE_NULL), True)


def default_column(field: T.StructField) -> Column | None:
    """The field's Connect default as a literal of the field's type, None when it has none."""
    text = (field.metadata or {}).get(FIELD_DEFAULT)
    if text is None:
        return None
    spark_type = field.dataType
    if isinstance(spark_type, (T.StructType, T.ArrayType, T.MapType)):
        return F.from_json(F.lit(text), spark_type)
    value = json.loads(text)
    if value is None:
        return None
    if isinstance(spark_type, T.BinaryType):
        return F.unbase64(F.lit(value))
    return F.lit(value).cast(spark_type)


def field_value(parent: Column, field: T.StructField, replace: bool) -> Column:
    """``parent``'s ``field``: Connect's ``get`` (null -> the default) when ``replace``, else ``getWithoutDefault``."""
    column = parent[field.name]
    default = default_column(field) if replace else None
    return column if default is None else F.coalesce(column, default)


def has_defaults(struct: T.DataType) -> bool:
    """Whether any field of ``struct`` (a struct type; anything else has no fields) has a default."""
    return isinstance(struct, T.StructType) and any(FIELD_DEFAULT in (f.metadata or {}) for f in struct.fields)


def copied_fields(parent: Column, struct: T.StructType, replace: bool, names: list[str] | None = None,
                  renames: dict[str, str] | None = None) -> list[Column]:
    """The ``names`` fields of ``parent`` (all when None) read as Connect's SMTs copy them into a new Struct,
    each keeping its schema (metadata, so its default) under its new name (``renames``)."""
    renames = renames or {}
    return [field_value(parent, struct[n], replace).alias(renames.get(n, n), metadata=struct[n].metadata)
            for n in (struct.fieldNames() if names is None else names)]


def _any_default(spark_type: T.DataType) -> bool:
    if isinstance(spark_type, T.StructType):
        return any(FIELD_DEFAULT in (f.metadata or {}) or _any_default(f.dataType) for f in spark_type.fields)
    return False


def with_field_defaults(column: Column, struct: T.DataType) -> Column:
    """``column`` (of type ``struct``) with every null field that has a default, nested structs' too, replaced by
    the default: what Connect's JsonConverter reads (``convertToConnect``, its ``replace.null.with.default``)."""
    if not _any_default(struct):
        return column
    fields = []
    for f in struct.fields:
        inner = with_field_defaults(column[f.name], f.dataType)
        default = default_column(f)
        fields.append((inner if default is None else F.coalesce(inner, default)).alias(f.name, metadata=f.metadata))
    return F.when(column.isNotNull(), F.struct(*fields))
