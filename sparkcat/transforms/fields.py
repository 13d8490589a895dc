"""Connect's field SMTs on record values, as Spark column expressions over the whole batch.

InsertField, ReplaceField, MaskField, ValueToKey, ExtractField, HoistField, Flatten, Cast and
TimestampConverter, ``$Value`` variants, with Connect's keys, defaults and messages. A struct
value is Connect's Struct with a schema; anything else (a string, a map) is refused with
Connect's ``Only Struct objects supported for [...]`` when the query starts. ``$Key`` variants
are refused: a source connector's key is JSON text without a schema here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkcat.errors import ConfigError
from sparkcat.transforms.config import invalid, list_value, missing, register_transform
from sparkcat.transforms.frame import DataError, Records

__all__ = ["CAST_TYPES", "struct_fields"]

PKG = "org.apache.kafka.connect.transforms."
CAST_TYPES: dict[str, T.DataType] = {
    "int8": T.ByteType(), "int16": T.ShortType(), "int32": T.IntegerType(), "int64": T.LongType(),
    "float32": T.FloatType(), "float64": T.DoubleType(), "boolean": T.BooleanType(), "string": T.StringType(),
}


def _struct_name(spark_type: T.DataType) -> str:
    return {T.StringType: "java.lang.String", T.LongType: "java.lang.Long", T.IntegerType: "java.lang.Integer",
            T.MapType: "java.util.HashMap", T.BinaryType: "[B"}.get(type(spark_type), spark_type.simpleString())


def struct_fields(records: Records, purpose: str) -> list[str]:
    """The value's field names; Connect's DataException when the value is not a Struct."""
    value_type = records.data_type("value")
    if not isinstance(value_type, T.StructType):
        raise DataError(f"Only Struct objects supported for [{purpose}], found: {_struct_name(value_type)}")
    return [f.name for f in value_type.fields]


def _field_of(records: Records, name: str, purpose: str) -> T.StructField:
    struct_fields(records, purpose)
    value_type = records.data_type("value")
    if name not in value_type.fieldNames():
        raise DataError(f"{name} is not a valid field name")
    return value_type[name]


def _when_value(new: Column) -> Column:
    """``new`` where the value is not null: tombstones pass through unchanged, as in Connect."""
    return F.when(F.col("value").isNotNull(), new)


def _require(settings: dict[str, str], prefix: str, key: str) -> str:
    value = settings.get(key)
    if value is None or not value.strip():
        raise ConfigError(missing(prefix + key), {prefix + key: [missing(prefix + key)]})
    return value.strip()


def _register(name: str, factory: Callable[[dict[str, str], str], Any], value_only: bool = True) -> None:
    register_transform([PKG + name + "$Value", name + "$Value"], factory)
    if value_only:
        def refuse(settings: dict[str, str], prefix: str) -> Any:
            message = (f"{PKG}{name}$Key is not supported by sparkcat yet: a source connector's key is JSON text "
                       f"without a schema; use {name}$Value, ValueToKey or the sql transform")
            raise ConfigError(message, {prefix + "type": [message]})
        register_transform([PKG + name + "$Key", name + "$Key"], refuse)


# ------------------------------------------------------------------ InsertField


@dataclass
class InsertField:
    """Adds topic, partition, offset, timestamp and static fields (``name!`` required, ``name?`` optional)."""

    fields: dict[str, str]         # "topic"|"partition"|"offset"|"timestamp"|"static" -> field name
    static_value: str | None
    required: frozenset[str] = frozenset()   # kinds named with "!"; the others are optional, as in Connect

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
        value = F.col("value")
        for kind, name in self.fields.items():
            # optional fields: nullable (a literal would not be), guarded by a test the analyser cannot fold
            column = sources[kind] if kind in self.required else F.when(F.col("value").isNotNull(), sources[kind])
            value = value.withField(name, column)
        return records.set(alias, "value", _when_value(value), where)


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
    return InsertField(fields, static_value, frozenset(required))


# ------------------------------------------------------------------ ReplaceField


@dataclass
class ReplaceField:
    """Keeps ``include`` fields (all when empty), drops ``exclude`` ones, renames ``old:new`` pairs."""

    include: list[str]
    exclude: list[str]
    renames: dict[str, str]

    def apply(self, records: Records, alias: str, where: Column | None) -> Records:
        names = struct_fields(records, "field replacement")
        kept = [n for n in names if n not in self.exclude and (not self.include or n in self.include)]
        new = F.struct(*[F.col("value")[n].alias(self.renames.get(n, n)) for n in kept])
        return records.set(alias, "value", _when_value(new), where)


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
    include = list_value(settings.get("include") or settings.get("whitelist"))
    exclude = list_value(settings.get("exclude") or settings.get("blacklist"))
    return ReplaceField(include, exclude, _renames(settings, prefix))


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

    def apply(self, records: Records, alias: str, where: Column | None) -> Records:
        value = F.col("value")
        for name in self.fields:
            value = value.withField(name, _masked(_field_of(records, name, "mask fields").dataType,
                                                  self.replacement))
        return records.set(alias, "value", _when_value(value), where)


def _mask_field(settings: dict[str, str], prefix: str) -> MaskField:
    fields = list_value(_require(settings, prefix, "fields"))
    replacement = settings.get("replacement")
    return MaskField(fields, replacement if replacement else None)


# ------------------------------------------------------------------ ValueToKey, ExtractField, HoistField


@dataclass
class ValueToKey:
    """The key becomes a struct of the value's ``fields`` (JSON text in a source connector's key column)."""

    fields: list[str]

    def apply(self, records: Records, alias: str, where: Column | None) -> Records:
        names = struct_fields(records, "copying fields from value to key")
        for name in self.fields:
            if name not in names:
                raise DataError(f"Field does not exist: {name}")
        key = F.struct(*[F.col("value")[n].alias(n) for n in self.fields])
        new = F.to_json(key) if records.key_json else key
        return records.set(alias, "key", F.when(F.col("value").isNotNull(), new), where)


def _value_to_key(settings: dict[str, str], prefix: str) -> ValueToKey:
    return ValueToKey(list_value(_require(settings, prefix, "fields")))


@dataclass
class ExtractField:
    """The value becomes its field ``field`` (whatever type that field has)."""

    field: str

    def apply(self, records: Records, alias: str, where: Column | None) -> Records:
        _field_of(records, self.field, "field extraction")
        return records.set(alias, "value", F.col("value")[self.field], where)


def _extract_field(settings: dict[str, str], prefix: str) -> ExtractField:
    version = (settings.get("field.syntax.version") or "V1").strip().upper()
    if version != "V1":
        message = f"field.syntax.version {version} (nested paths) is not supported by sparkcat yet; use V1"
        raise ConfigError(message, {prefix + "field.syntax.version": [message]})
    return ExtractField(_require(settings, prefix, "field"))


@dataclass
class HoistField:
    """The value becomes a struct with one field ``field`` holding the old value."""

    field: str

    def apply(self, records: Records, alias: str, where: Column | None) -> Records:
        return records.set(alias, "value", F.struct(F.col("value").alias(self.field)), where)


def _hoist_field(settings: dict[str, str], prefix: str) -> HoistField:
    return HoistField(_require(settings, prefix, "field"))


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
        return records.set(alias, "value", _when_value(new), where)


def _flatten(settings: dict[str, str], prefix: str) -> Flatten:
    return Flatten(settings.get("delimiter", "."))


# ------------------------------------------------------------------ Cast


@dataclass
class Cast:
    """Casts fields (``field:type,...``) or the whole value (``type``) to Connect's primitive types."""

    whole: T.DataType | None
    fields: dict[str, T.DataType]

    def apply(self, records: Records, alias: str, where: Column | None) -> Records:
        if self.whole is not None:
            return records.set(alias, "value", F.col("value").cast(self.whole), where)
        value = F.col("value")
        for name, target in self.fields.items():
            _field_of(records, name, "cast types")
            value = value.withField(name, F.col("value")[name].cast(target))
        return records.set(alias, "value", _when_value(value), where)


def _cast(settings: dict[str, str], prefix: str) -> Cast:
    key = prefix + "spec"
    specs = list_value(_require(settings, prefix, "spec"))
    whole, fields = None, {}
    for spec in specs:
        parts = [p.strip() for p in spec.split(":")]
        type_name = parts[-1]
        if type_name not in CAST_TYPES or len(parts) > 2:
            message = invalid(key, settings["spec"], f"Invalid type found in casting spec: {type_name}")
            raise ConfigError(message, {key: [message]})
        if len(parts) == 1:
            if len(specs) > 1:
                message = invalid(key, settings["spec"], "Cast transformations that specify a type to cast the "
                                  "entire value to may only specify a single cast in their spec")
                raise ConfigError(message, {key: [message]})
            whole = CAST_TYPES[type_name]
        else:
            fields[parts[0]] = CAST_TYPES[type_name]
    return Cast(whole, fields)


# ------------------------------------------------------------------ TimestampConverter


def utc_wall(instant: Column) -> Column:
    """An instant as its UTC wall-clock time (TIMESTAMP_NTZ), whatever the session time zone."""
    return F.convert_timezone(F.current_timezone(), F.lit("UTC"), instant.cast("timestamp_ntz"))


def from_utc_wall(wall: Column) -> Column:
    """A UTC wall-clock time (TIMESTAMP_NTZ) as the instant it names."""
    return F.convert_timezone(F.lit("UTC"), F.current_timezone(), wall).cast("timestamp")


def utc_text(instant: Column, pattern: str) -> Column:
    """An instant formatted in UTC (Connect's TimestampConverter and TimestampRouter use UTC)."""
    return F.date_format(utc_wall(instant), pattern)


@dataclass
class TimestampConverter:
    """Converts a timestamp field (or the whole value) between string, unix, Date and Timestamp."""

    field: str
    target: str
    pattern: str | None
    unit_ms: int                  # unix.precision: milliseconds per unit (1, or 1000 for seconds); 0 = micro/nano
    precision: str

    def _instant(self, column: Column, spark_type: T.DataType) -> Column:
        if isinstance(spark_type, T.TimestampType):
            return column
        if isinstance(spark_type, (T.TimestampNTZType, T.DateType)):
            return from_utc_wall(column.cast("timestamp_ntz"))
        if isinstance(spark_type, T.StringType):
            if not self.pattern:
                raise DataError("TimestampConverter requires format option to be specified when using string "
                                "timestamps")
            return from_utc_wall(F.to_timestamp_ntz(column, F.lit(self.pattern)))
        if isinstance(spark_type, T.IntegralType):
            scale = {"seconds": F.timestamp_seconds, "milliseconds": F.timestamp_millis,
                     "microseconds": F.timestamp_micros}.get(self.precision)
            if scale is None:
                return F.timestamp_micros(F.floor(column / 1000))
            return scale(column)
        raise DataError(f"TimestampConverter does not support {spark_type.simpleString()} objects as timestamps")

    def _out(self, instant: Column) -> Column:
        if self.target == "string":
            return utc_text(instant, str(self.pattern))
        if self.target == "unix":
            millis = F.unix_millis(instant)
            return {"seconds": F.floor(millis / 1000), "microseconds": F.unix_micros(instant),
                    "nanoseconds": F.unix_micros(instant) * 1000}.get(self.precision, millis).cast("long")
        if self.target == "Date":
            return F.to_date(utc_wall(instant))
        return instant

    def apply(self, records: Records, alias: str, where: Column | None) -> Records:
        if not self.field:
            new = self._out(self._instant(F.col("value"), records.data_type("value")))
            return records.set(alias, "value", new, where)
        spark_type = _field_of(records, self.field, "converting timestamp formats").dataType
        new = F.col("value").withField(self.field, self._out(self._instant(F.col("value")[self.field], spark_type)))
        return records.set(alias, "value", _when_value(new), where)


TARGET_TYPES = ("string", "unix", "Date", "Timestamp")


def _timestamp_converter(settings: dict[str, str], prefix: str) -> TimestampConverter:
    target = _require(settings, prefix, "target.type")
    if target == "Time" or target not in TARGET_TYPES:
        message = invalid(prefix + "target.type", target, "String must be one of: string, unix, Date, Time, "
                          "Timestamp" if target != "Time" else "Time is not supported by sparkcat yet")
        raise ConfigError(message, {prefix + "target.type": [message]})
    pattern = (settings.get("format") or "").strip() or None
    if target == "string" and not pattern:
        message = "TimestampConverter requires format option to be specified when using string timestamps"
        raise ConfigError(message, {prefix + "format": [message]})
    precision = (settings.get("unix.precision") or "milliseconds").strip()
    if precision not in ("seconds", "milliseconds", "microseconds", "nanoseconds"):
        message = invalid(prefix + "unix.precision", precision,
                          "String must be one of: nanoseconds, microseconds, milliseconds, seconds")
        raise ConfigError(message, {prefix + "unix.precision": [message]})
    return TimestampConverter((settings.get("field") or "").strip(), target, pattern, 1, precision)


def _set_schema_metadata(settings: dict[str, str], prefix: str) -> Any:
    message = ("org.apache.kafka.connect.transforms.SetSchemaMetadata is not supported by sparkcat yet: Spark "
               "types carry no Connect schema name or version for the converters to write")
    raise ConfigError(message, {prefix + "type": [message]})


for _name, _factory in (("InsertField", _insert_field), ("ReplaceField", _replace_field),
                        ("MaskField", _mask_field), ("ExtractField", _extract_field),
                        ("HoistField", _hoist_field), ("Flatten", _flatten), ("Cast", _cast),
                        ("TimestampConverter", _timestamp_converter), ("SetSchemaMetadata", _set_schema_metadata)):
    _register(_name, _factory)
register_transform([PKG + "ValueToKey", "ValueToKey"], _value_to_key)
