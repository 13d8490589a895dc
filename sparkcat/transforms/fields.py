"""Connect's field SMTs on record values, as Spark column expressions over the whole batch.

InsertField, ReplaceField, MaskField, ValueToKey, ExtractField, HoistField and Flatten (Cast and
TimestampConverter are in ``conversions``), ``$Value`` variants, with Connect's keys, defaults and messages. A struct
value is Connect's Struct with a schema; anything else (a string, a map) is refused with
Connect's ``Only Struct objects supported for [...]`` when the query starts. ``$Key`` variants
are in ``keys``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkcat.api.config import NO_DEFAULT, ConfigDef, Type
from sparkcat.errors import ConfigError
from sparkcat.transforms.registry import VALUE_SMTS, invalid, list_value, missing, register_transform
from sparkcat.transforms.field_path import FieldPath, define_syntax_version, syntax_version
from sparkcat.transforms.frame import DataError, Records
from sparkcat.transforms.null_defaults import (
    copied_fields, define_replace_null, field_value, has_defaults, replace_null,
)

__all__ = ["PKG", "struct_fields", "field_of", "require", "register_value_smt", "when_value", "value_copy"]

PKG = "org.apache.kafka.connect.transforms."


def _struct_name(spark_type: T.DataType) -> str:
    return {T.StringType: "java.lang.String", T.LongType: "java.lang.Long", T.IntegerType: "java.lang.Integer",
            T.MapType: "java.util.HashMap", T.BinaryType: "[B"}.get(type(spark_type), spark_type.simpleString())


def struct_fields(records: Records, purpose: str) -> list[str]:
    """The value's field names; Connect's DataException when the value is not a Struct."""
    value_type = records.data_type("value")
    if not isinstance(value_type, T.StructType):
        raise DataError(f"Only Struct objects supported for [{purpose}], found: {_struct_name(value_type)}")
    return [f.name for f in value_type.fields]


def field_of(records: Records, name: str, purpose: str) -> T.StructField:
    struct_fields(records, purpose)
    value_type = records.data_type("value")
    if name not in value_type.fieldNames():
        raise DataError(f"{name} is not a valid field name")
    return value_type[name]


def when_value(new: Column) -> Column:
    """``new`` where the value is not null: tombstones pass through unchanged, as in Connect."""
    return F.when(F.col("value").isNotNull(), new)


def value_copy(records: Records, replace: bool) -> Column:
    """The struct value as Connect's SMTs copy it field by field into a new Struct: with ``replace``
    (``replace.null.with.default``) a null field that has a default becomes the default."""
    value_type = records.data_type("value")
    if not replace or not has_defaults(value_type):
        return F.col("value")
    return F.struct(*copied_fields(F.col("value"), value_type, True))


def require(settings: dict[str, str], prefix: str, key: str) -> str:
    value = settings.get(key)
    if value is None or not value.strip():
        raise ConfigError(missing(prefix + key), {prefix + key: [missing(prefix + key)]})
    return value.strip()


def register_value_smt(name: str, factory: Callable[[dict[str, str], str], Any], definition: ConfigDef,
                       unsupported: Mapping[str, str] = MappingProxyType({})) -> None:
    """Register ``name$Value`` taking ``definition``'s keys; ``keys`` registers ``name$Key`` from the same."""
    register_transform([PKG + name + "$Value", name + "$Value"], factory, definition, unsupported)
    VALUE_SMTS[name] = factory


# ------------------------------------------------------------------ InsertField


@dataclass
class InsertField:
    """Adds topic, partition, offset, timestamp and static fields (``name!`` required, ``name?`` optional)."""

    fields: dict[str, str]         # "topic"|"partition"|"offset"|"timestamp"|"static" -> field name
    static_value: str | None
    required: frozenset[str] = frozenset()   # kinds named with "!"; the others are optional, as in Connect
    replace_null: bool = True      # replace.null.with.default: the copied fields' nulls -> their defaults

    def apply(self, records: Records, alias: str, where: Column | None) -> Records:
        struct_fields(records, "field insertion")
        if "offset" in self.fields and records.kind == "source":
            raise DataError("Only SinkRecord supported for [field insertion], found: "
                            "org.apache.kafka.connect.source.SourceRecord")
        partition = F.col("partition").cast("int") if "partition" in records.df.columns else F.lit(None).cast("int")
        sources = {"topic": F.col("topic"), "partition": partition,
                   "offset": F.col("offset").cast("long") if records.kind == "sink" else None,
                   "timestamp": F.timestamp_millis(F.col(records.timestamp)),
                   "static": F.lit(self.static_value).cast("string")}
        value = value_copy(records, self.replace_null)
        for kind, name in self.fields.items():
            # optional fields: nullable (a literal would not be), guarded by a test the analyser cannot fold
            column = sources[kind] if kind in self.required else F.when(F.col("value").isNotNull(), sources[kind])
            value = value.withField(name, column)
        return records.set(alias, "value", when_value(value), where)


def _insert_field(settings: dict[str, str], prefix: str) -> InsertField:
    fields, required = {}, set()
    for kind in ("topic", "partition", "offset", "timestamp", "static"):
        name = (settings.get(kind + ".field") or "").strip()
        if name:
            fields[kind] = name[:-1] if name[-1] in "!?" else name
            if name.endswith("!"):
                required.add(kind)
    if not fields:
        raise ConfigError("No field insertion configured", {prefix + "type": ["No field insertion configured"]})
    static_value = settings.get("static.value")
    if "static" in fields and static_value is None:
        message = invalid(prefix + "static.value", None, f"No value specified for static field: {fields['static']}")
        raise ConfigError(message, {prefix + "static.value": [message]})
    return InsertField(fields, static_value, frozenset(required), replace_null(settings, prefix))


# ------------------------------------------------------------------ ReplaceField


@dataclass
class ReplaceField:
    """Keeps ``include`` fields (all when empty), drops ``exclude`` ones, renames ``old:new`` pairs."""

    include: list[str]
    exclude: list[str]
    renames: dict[str, str]
    replace_null: bool = True      # replace.null.with.default: a kept field's null -> its default

    def apply(self, records: Records, alias: str, where: Column | None) -> Records:
        names = struct_fields(records, "field replacement")
        kept = [n for n in names if n not in self.exclude and (not self.include or n in self.include)]
        new = F.struct(*copied_fields(F.col("value"), records.data_type("value"), self.replace_null, kept,
                                      self.renames))
        return records.set(alias, "value", when_value(new), where)


def _renames(settings: dict[str, str], prefix: str) -> dict[str, str]:
    out = {}
    for mapping in list_value(settings.get("renames")):
        parts = mapping.split(":")
        if len(parts) != 2:
            message = invalid(prefix + "renames", settings.get("renames"), f"Invalid rename mapping: {mapping}")
            raise ConfigError(message, {prefix + "renames": [message]})
        out[parts[0]] = parts[1]
    return out


def _replace_field(settings: dict[str, str], prefix: str) -> ReplaceField:
    include = list_value(settings.get("include"))  # whitelist/blacklist: removed by Kafka Connect 4.0
    exclude = list_value(settings.get("exclude"))
    return ReplaceField(include, exclude, _renames(settings, prefix), replace_null(settings, prefix))


# ------------------------------------------------------------------ MaskField


def _masked(spark_type: T.DataType, replacement: str | None) -> Column:
    """Connect's null-equivalent of a type (0, "", false, epoch, empty), or the replacement cast to it."""
    if replacement is not None:
        if not isinstance(spark_type, (T.NumericType, T.StringType)):
            raise DataError(f"Cannot mask value of type {spark_type.simpleString()} with custom replacement.")
        return F.lit(replacement).cast(spark_type)
    if isinstance(spark_type, T.NumericType):
        return F.lit(0).cast(spark_type)
    if isinstance(spark_type, T.StringType):
        return F.lit("")
    if isinstance(spark_type, T.BooleanType):
        return F.lit(False)
    if isinstance(spark_type, (T.TimestampType, T.TimestampNTZType, T.DateType)):
        return F.lit(0).cast("timestamp").cast(spark_type)
    if isinstance(spark_type, T.BinaryType):
        return F.lit(b"")
    if isinstance(spark_type, T.ArrayType):
        return F.array().cast(spark_type)
    if isinstance(spark_type, T.MapType):
        return F.create_map().cast(spark_type)
    raise DataError(f"Cannot mask value of type: {spark_type.simpleString()}")


@dataclass
class MaskField:
    """Replaces ``fields`` with their type's null-equivalent, or ``replacement`` (numeric and string fields)."""

    fields: list[str]
    replacement: str | None
    replace_null: bool = True      # replace.null.with.default: nulls -> defaults before masking

    def apply(self, records: Records, alias: str, where: Column | None) -> Records:
        value = value_copy(records, self.replace_null)
        for name in self.fields:
            field = field_of(records, name, "mask fields")
            original = field_value(F.col("value"), field, self.replace_null)
            # Connect's masked(null) is null: only a value is masked
            value = value.withField(name, F.when(original.isNotNull(), _masked(field.dataType, self.replacement)))
        return records.set(alias, "value", when_value(value), where)


def _mask_field(settings: dict[str, str], prefix: str) -> MaskField:
    fields = list_value(require(settings, prefix, "fields"))
    replacement = settings.get("replacement")
    return MaskField(fields, replacement if replacement else None, replace_null(settings, prefix))


# ------------------------------------------------------------------ ValueToKey, ExtractField, HoistField


@dataclass
class ValueToKey:
    """The key becomes a struct of the value's ``fields`` (JSON text in a source connector's key column)."""

    fields: list[str]
    replace_null: bool = True      # replace.null.with.default: a copied field's null -> its default

    def apply(self, records: Records, alias: str, where: Column | None) -> Records:
        names = struct_fields(records, "copying fields from value to key")
        for name in self.fields:
            if name not in names:
                raise DataError(f"Field does not exist: {name}")
        copied = copied_fields(F.col("value"), records.data_type("value"), self.replace_null, self.fields)
        key = F.when(F.col("value").isNotNull(), F.struct(*copied))
        if records.key_json and where is None:  # the key has a schema now: $Key transforms may follow
            return records.set(alias, "key", key, None).with_key_json(False)
        return records.set(alias, "key", F.to_json(key) if records.key_json else key, where)


def _value_to_key(settings: dict[str, str], prefix: str) -> ValueToKey:
    return ValueToKey(list_value(require(settings, prefix, "fields")), replace_null(settings, prefix))


@dataclass
class ExtractField:
    """The value becomes the field at ``path`` (whatever type that field has): a root field under
    ``field.syntax.version`` V1, a nested one (``after.id``) under V2 (KIP-821)."""

    path: FieldPath
    replace_null: bool = True      # replace.null.with.default: the extracted field's null -> its default

    def apply(self, records: Records, alias: str, where: Column | None) -> Records:
        if len(self.path.steps) == 1:
            field = field_of(records, self.path.steps[0], "field extraction")
            return records.set(alias, "value", field_value(F.col("value"), field, self.replace_null), where)
        struct_fields(records, "field extraction")
        found = self.path.resolve(F.col("value"), records.data_type("value"), self.replace_null)
        if found is None:  # Connect: fieldFrom(schema) is null
            raise DataError(f"Unknown field: {self.path.text}")
        return records.set(alias, "value", found[0], where)


def _extract_field(settings: dict[str, str], prefix: str) -> ExtractField:
    version = syntax_version(settings, prefix)
    return ExtractField(FieldPath.parse(require(settings, prefix, "field"), version, prefix + "field"),
                        replace_null(settings, prefix))


@dataclass
class HoistField:
    """The value becomes a struct with one field ``field`` holding the old value."""

    field: str

    def apply(self, records: Records, alias: str, where: Column | None) -> Records:
        return records.set(alias, "value", F.struct(F.col("value").alias(self.field)), where)


def _hoist_field(settings: dict[str, str], prefix: str) -> HoistField:
    return HoistField(require(settings, prefix, "field"))


# ------------------------------------------------------------------ Flatten


def _flat(column: Column, spark_type: T.StructType, path: str, delimiter: str) -> list[Column]:
    out = []
    for f in spark_type.fields:
        name = f"{path}{delimiter}{f.name}" if path else f.name
        if isinstance(f.dataType, T.StructType):
            out += _flat(column[f.name], f.dataType, name, delimiter)
        else:
            out.append(column[f.name].alias(name))
    return out


@dataclass
class Flatten:
    """Nested struct fields become top-level fields named ``outer<delimiter>inner``."""

    delimiter: str

    def apply(self, records: Records, alias: str, where: Column | None) -> Records:
        struct_fields(records, "flattening")
        new = F.struct(*_flat(F.col("value"), records.data_type("value"), "", self.delimiter))
        return records.set(alias, "value", when_value(new), where)


def _flatten(settings: dict[str, str], prefix: str) -> Flatten:
    return Flatten(settings.get("delimiter", "."))


def _string(definition: ConfigDef, name: str, default: object, doc: str) -> ConfigDef:
    return definition.define(name, Type.STRING, default, documentation=doc)


_FIELD_DOC = "Field name for {kind}; suffix with ! to make it required, ? to keep it optional (the default)."
_INSERT_KEYS = ConfigDef()
for _kind, _what in (("topic", "the Kafka topic"), ("partition", "the Kafka partition"),
                     ("offset", "the Kafka offset (sink connectors only)"), ("timestamp", "the record timestamp"),
                     ("static", "a static data field")):
    _string(_INSERT_KEYS, _kind + ".field", None, _FIELD_DOC.format(kind=_what))
_string(_INSERT_KEYS, "static.value", None, "Static field value, if a static field name is configured.")

#: Each field SMT's keys, as Connect 4.1's ConfigDef of the class has them.
_DECLARED = {
    "InsertField": (_insert_field, _INSERT_KEYS),
    "ReplaceField": (_replace_field, ConfigDef()
                     .define("exclude", Type.LIST, "", documentation="Fields to exclude (takes precedence).")
                     .define("include", Type.LIST, "", documentation="Fields to include; all when empty.")
                     .define("renames", Type.LIST, "", documentation="Field rename mappings, old:new.")),
    "MaskField": (_mask_field, ConfigDef()
                  .define("fields", Type.LIST, NO_DEFAULT, documentation="Names of fields to mask.")
                  .define("replacement", Type.STRING, None,
                          documentation="Custom value replacement applied to all fields' values.")),
    "ExtractField": (_extract_field, define_syntax_version(_string(ConfigDef(), "field", NO_DEFAULT,
                                                                   "Field name to extract."))),
    "HoistField": (_hoist_field, _string(ConfigDef(), "field", NO_DEFAULT,
                                         "Field name for the single field placed in the struct.")),
    "Flatten": (_flatten, _string(ConfigDef(), "delimiter", ".",
                                  "Delimiter inserted between field names of the input record.")),
}
_NULL_DEFAULTS = ("InsertField", "ReplaceField", "MaskField", "ExtractField")  # those with KIP-1040's key

for _name, (_factory, _definition) in _DECLARED.items():
    register_value_smt(_name, _factory, define_replace_null(_definition) if _name in _NULL_DEFAULTS else _definition)

register_transform([PKG + "ValueToKey", "ValueToKey"], _value_to_key, define_replace_null(
    ConfigDef().define("fields", Type.LIST, NO_DEFAULT,
                       documentation="Field names on the record value to extract as the record key.")))
