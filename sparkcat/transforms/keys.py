"""The ``$Key`` variants of Connect's field SMTs: the ``$Value`` transformation applied to the record key.

Connect's ``$Key`` and ``$Value`` classes differ only in which part of the record they operate
on (``operatingSchema``/``operatingValue``). Here ``OnKey`` swaps the ``key`` and ``value``
columns, applies the ``$Value`` transformation, and swaps them back, so every field SMT
(InsertField, ReplaceField, MaskField, ExtractField, HoistField, Flatten, Cast,
TimestampConverter, HeaderFrom) has its ``$Key`` twin with the same keys, defaults and messages.

The key must have a type Spark knows: a sink connector's key decoded by its key converter (a
struct for a JsonConverter JSON object), or a source connector's key after ``ValueToKey`` (a
struct). A source task's own key is JSON text without a schema, so a ``$Key`` transform on it
fails when the query starts, naming the transformation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F

# the SMT modules with $Value variants register them (VALUE_SMTS) when imported
from sparkcat.transforms import conversions, fields, routing  # noqa: F401
from sparkcat.transforms.fields import PKG
from sparkcat.transforms.frame import KEY_TYPE, DataError, Records, json_faithful
from sparkcat.transforms.registry import TRANSFORM_KEYS, VALUE_SMTS, Factory, register_transform

__all__ = ["OnKey", "key_as_json"]

_SWAP = {"key": "value", "value": "key"}


def _swapped(records: Records) -> Records:
    df = records.df
    return records.with_df(df.select(*[F.col(f"`{c}`").alias(_SWAP.get(c, c)) for c in df.columns]))


@dataclass
class OnKey:
    """A ``$Value`` transformation (``inner``) applied to the key; ``name`` is its ``X$Key`` class name."""

    name: str
    inner: Any

    def apply(self, records: Records, alias: str, where: Column | None) -> Records:
        if records.key_json:
            raise DataError(
                f"transforms.{alias}: {self.name} needs a key with a schema, and this connector's key is JSON text "
                "without one (a source task's key); build the key with ValueToKey first, or use the "
                f"$Value variant", {f"transforms.{alias}.type": [f"{self.name} needs a key with a schema"]})
        return _swapped(self.inner.apply(_swapped(records), alias, where))


def key_as_json(records: Records) -> Records:
    """A source connector's key back to JSON text after ``ValueToKey`` (and ``$Key`` transforms) changed it.

    ``to_json`` takes structs, maps and arrays; a primitive (``ExtractField$Key``) is written as
    the one element of a JSON array, brackets removed. The key's type (and the schema name and
    version ``SetSchemaMetadata$Key`` gave it) goes on the column's metadata (``KEY_TYPE``), so the
    key converter writes the key with its schema as Connect does, where the JSON text holds the
    values unchanged.
    """
    key, key_type = F.col("key"), records.data_type("key")
    if key_type.simpleString().startswith(("struct", "map", "array")):
        text = F.to_json(key)
    else:
        text = F.regexp_extract(F.to_json(F.array(key)), r"^\[(.*)\]$", 1)
    metadata = {KEY_TYPE: key_type.json(), **records.key_schema} if json_faithful(key_type) else {}
    text = F.when(key.isNotNull(), text).alias("key", metadata=metadata)
    return records.with_df(records.df.withColumn("key", text)).with_key_json(True)


def _key_factory(name: str, factory: Factory) -> Factory:
    return lambda settings, prefix: OnKey(f"{PKG}{name}$Key", factory(settings, prefix))


for _name, _factory in list(VALUE_SMTS.items()):
    _keys = TRANSFORM_KEYS[PKG + _name + "$Value"]  # the same keys as the $Value variant
    register_transform([PKG + _name + "$Key", _name + "$Key"], _key_factory(_name, _factory), _keys.definition,
                       _keys.unsupported)
