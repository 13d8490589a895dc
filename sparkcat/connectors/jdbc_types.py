"""Column types both ways: PostgreSQL result columns to Spark types (source), record values to SQL (sink).

The source follows Connect JDBC's mapping (``numeric.mapping=none``) with Spark's types:
integers by width, ``real``/``double precision``, ``numeric(p,s)`` as DECIMAL(p,s), ``boolean``,
``bytea`` as BINARY, text types as STRING, ``date`` as DATE, ``timestamp``/``timestamptz`` as
TIMESTAMP. Where Spark has no equal the value becomes text: ``time`` (``HH:MM:SS[.ffffff]``;
Connect: Time, millis of the day), ``numeric`` without a precision or wider than 38 digits, and
every other type (uuid, json, arrays, ...), as PostgreSQL prints it.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["SourceColumn", "source_columns", "value_ddl", "sql_type_of_value"]

#: PostgreSQL type OID -> Spark DDL type (everything else is STRING).
_SPARK_TYPES = {16: "BOOLEAN", 17: "BINARY", 20: "BIGINT", 21: "SMALLINT", 23: "INT", 26: "BIGINT",
                700: "FLOAT", 701: "DOUBLE", 1082: "DATE", 1114: "TIMESTAMP", 1184: "TIMESTAMP",
                25: "STRING", 1043: "STRING", 1042: "STRING", 19: "STRING"}
_NUMERIC = 1700
_TIMESTAMP_NO_TZ = 1114


@dataclass(frozen=True)
class SourceColumn:
    """One result column: its name, Spark type, and how a psycopg value becomes a value of that type."""

    name: str
    spark_type: str
    convert: Callable[[Any], Any] | None = None

    def value(self, raw: Any) -> Any:
        """The column's value for the record (None stays None)."""
        if raw is None or self.convert is None:
            return raw
        return self.convert(raw)


def _as_utc(value: dt.datetime) -> dt.datetime:
    return value.replace(tzinfo=dt.timezone.utc) if value.tzinfo is None else value


def _text(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"), default=str)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    return str(value)


def _column(name: str, oid: int, precision: int | None, scale: int | None) -> SourceColumn:
    if oid == _NUMERIC:
        if precision and 0 < precision <= 38:
            return SourceColumn(name, f"DECIMAL({precision},{scale or 0})")
        return SourceColumn(name, "STRING", _text)
    spark = _SPARK_TYPES.get(oid)
    if spark is None:
        return SourceColumn(name, "STRING", _text)
    if oid == _TIMESTAMP_NO_TZ:
        return SourceColumn(name, spark, _as_utc)
    if oid == 17:
        return SourceColumn(name, spark, bytes)
    return SourceColumn(name, spark)


def source_columns(description: Any) -> list[SourceColumn]:
    """The columns of a psycopg cursor's ``description`` (names, OIDs, numeric precision and scale)."""
    return [_column(c.name, c.type_code, c.precision, c.scale) for c in description]


def value_ddl(columns: list[SourceColumn]) -> str:
    """The Spark DDL field list of a record value, e.g. ```id` BIGINT, `name` STRING``."""
    return ", ".join(f"`{c.name.replace('`', '``')}` {c.spark_type}" for c in columns)


# ---------------------------------------------------------------- sink: SQL types of record fields


def sql_type_of_value(value: Any) -> str:
    """The column type auto.create/auto.evolve give a field, from its first non-null value in the chunk."""
    if isinstance(value, bool):
        return "BOOLEAN"
    if isinstance(value, int):
        return "BIGINT"
    if isinstance(value, float):
        return "DOUBLE PRECISION"
    if isinstance(value, decimal.Decimal):
        return "NUMERIC"
    if isinstance(value, dt.datetime):
        return "TIMESTAMP"
    if isinstance(value, dt.date):
        return "DATE"
    if isinstance(value, (bytes, bytearray, memoryview)):
        return "BYTEA"
    if isinstance(value, (dict, list, tuple)):
        return "JSONB"
    return "TEXT"
