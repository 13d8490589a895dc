"""Connect's Cast and TimestampConverter SMTs on record values, as Spark column expressions.

Timestamps are read and written in UTC whatever the Spark session's time zone, as Connect's
TimestampConverter and TimestampRouter do; patterns are Java's (SimpleDateFormat's common letters
mean the same in Spark's DateTimeFormatter patterns). Connect's ``Time`` logical type (a time of
day, milliseconds since midnight UTC) is a Spark ``TIME`` column; read as an instant it is that
time on 1970-01-01, as Connect's ``java.util.Date`` of a Time is.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkcat.api.config import NO_DEFAULT, ConfigDef, Type
from sparkcat.errors import ConfigError
from sparkcat.transforms.registry import invalid, list_value
from sparkcat.transforms.fields import field_of, register_value_smt, require, value_copy, when_value
from sparkcat.transforms.frame import DataError, Records
from sparkcat.transforms.null_defaults import define_replace_null, field_value, replace_null

__all__ = ["CAST_TYPES", "utc_text", "utc_wall", "from_utc_wall"]

CAST_TYPES: dict[str, T.DataType] = {
    "int8": T.ByteType(), "int16": T.ShortType(), "int32": T.IntegerType(), "int64": T.LongType(),
    "float32": T.FloatType(), "float64": T.DoubleType(), "boolean": T.BooleanType(), "string": T.StringType(),
}


# ------------------------------------------------------------------ Cast


@dataclass
class Cast:
    """Casts fields (``field:type,...``) or the whole value (``type``) to Connect's primitive types."""

    whole: T.DataType | None
    fields: dict[str, T.DataType]
    replace_null: bool = True      # replace.null.with.default: every field's null -> its default

    def apply(self, records: Records, alias: str, where: Column | None) -> Records:
        if self.whole is not None:
            return records.set(alias, "value", F.col("value").cast(self.whole), where)
        value = value_copy(records, self.replace_null)
        for name, target in self.fields.items():
            field = field_of(records, name, "cast types")
            value = value.withField(name, field_value(F.col("value"), field, self.replace_null).cast(target))
        return records.set(alias, "value", when_value(value), where)


def _cast(settings: dict[str, str], prefix: str) -> Cast:
    key = prefix + "spec"
    specs = list_value(require(settings, prefix, "spec"))
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
    return Cast(whole, fields, replace_null(settings, prefix))


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
    """Converts a timestamp field (or the whole value) between string, unix, Date, Time and Timestamp."""

    field: str
    target: str
    pattern: str | None
    precision: str                # unix.precision: seconds, milliseconds, microseconds or nanoseconds
    replace_null: bool = True     # replace.null.with.default: every field's null -> its default

    def _instant(self, column: Column, spark_type: T.DataType) -> Column:
        if isinstance(spark_type, T.TimestampType):
            return column
        if isinstance(spark_type, (T.TimestampNTZType, T.DateType)):
            return from_utc_wall(column.cast("timestamp_ntz"))
        if isinstance(spark_type, T.TimeType):  # Connect's Time: that time of day on 1970-01-01 UTC
            return F.timestamp_millis(F.time_to_millis(column))
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
        if self.target == "Time":  # the UTC time of day, to the millisecond (Connect's Calendar fields)
            return F.time_from_millis(F.pmod(F.unix_millis(instant), F.lit(_DAY_MS)))
        return instant

    def apply(self, records: Records, alias: str, where: Column | None) -> Records:
        if not self.field:
            new = self._out(self._instant(F.col("value"), records.data_type("value")))
            return records.set(alias, "value", new, where)
        field = field_of(records, self.field, "converting timestamp formats")
        original = field_value(F.col("value"), field, self.replace_null)
        new = value_copy(records, self.replace_null).withField(self.field, self._out(self._instant(original,
                                                                                                   field.dataType)))
        return records.set(alias, "value", when_value(new), where)


TARGET_TYPES = ("string", "unix", "Date", "Time", "Timestamp")
_DAY_MS = 86_400_000


def _timestamp_converter(settings: dict[str, str], prefix: str) -> TimestampConverter:
    target = require(settings, prefix, "target.type")
    if target not in TARGET_TYPES:
        message = invalid(prefix + "target.type", target, "String must be one of: string, unix, Date, Time, "
                          "Timestamp")
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
    return TimestampConverter((settings.get("field") or "").strip(), target, pattern, precision,
                              replace_null(settings, prefix))


register_value_smt("Cast", _cast, define_replace_null(ConfigDef().define(
    "spec", Type.LIST, NO_DEFAULT, documentation="field:type pairs, or one type to cast the whole value to.")))
register_value_smt("TimestampConverter", _timestamp_converter, define_replace_null(ConfigDef()
                   .define("field", Type.STRING, "", documentation="The field with the timestamp; empty: the "
                                                                   "whole value.")
                   .define("target.type", Type.STRING, NO_DEFAULT, documentation="string, unix, Date, Time or "
                                                                                  "Timestamp.")
                   .define("format", Type.STRING, "", documentation="A SimpleDateFormat-compatible pattern, for "
                                                                    "string input or output.")
                   .define("unix.precision", Type.STRING, "milliseconds",
                           documentation="seconds, milliseconds, microseconds or nanoseconds of unix timestamps.")))
