"""A micro-batch seen as Connect records: which DataFrame columns hold key, value, topic, timestamp, headers.

SMTs are written once against ``Records`` and run as Spark column expressions over the whole
batch (a projection; no Python call per record). A source connector's rows (``connector_source``)
have ``key`` as JSON text, ``value`` typed by the task's value schema (a struct for structured
values, so "with schema" in Connect's terms), ``timestamp_ms`` and ``headers``; their position
columns (``_task``, ``_partition``, ``_offset``) are never touched. Records an SMT drops
(``Filter``) stay in the batch with ``_keep`` false: their source offsets still commit, as in
Connect, but nothing is written for them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkcat.errors import ConfigError

__all__ = ["Records", "KEEP", "HEADERS_DDL", "DataError", "SCHEMA_NAME", "SCHEMA_VERSION", "KEY_TYPE",
           "json_faithful"]

KEEP = "_keep"
#: Metadata keys of the value column: the Connect schema name and version a converter writes.
SCHEMA_NAME, SCHEMA_VERSION = "connect.name", "connect.version"
#: Metadata key of a source's JSON-text key column: the Spark type (JSON) the key had, written as its schema.
KEY_TYPE = "connect.key.type"
#: The headers column, as Spark's Kafka source has it.
HEADERS_DDL = "ARRAY<STRUCT<key: STRING, value: BINARY>>"


_JSON_PRIMITIVES = (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.FloatType, T.DoubleType, T.BooleanType,
                    T.StringType)


def json_faithful(spark_type: T.DataType) -> bool:
    """Whether values of this type come back from their JSON text unchanged (no bytes, decimals, dates or times)."""
    if isinstance(spark_type, T.StructType):
        return all(json_faithful(f.dataType) for f in spark_type.fields)
    if isinstance(spark_type, T.ArrayType):
        return json_faithful(spark_type.elementType)
    if isinstance(spark_type, T.MapType):
        return isinstance(spark_type.keyType, T.StringType) and json_faithful(spark_type.valueType)
    return isinstance(spark_type, _JSON_PRIMITIVES)


class DataError(ConfigError):
    """An SMT cannot apply to the batch's schema (Connect's DataException); the connector fails to start."""


@dataclass
class Records:
    """The batch DataFrame and where its record parts are; SMTs return a new ``Records``.

    ``kind`` is "source" (a source connector's rows) or "sink" (Spark's Kafka rows);
    ``timestamp`` names the epoch-milliseconds column; ``key_json``: the key column holds JSON text;
    ``value_schema``: the Connect schema name/version SetSchemaMetadata gave the value
    (``SCHEMA_NAME``/``SCHEMA_VERSION``), put on the value column's metadata at the chain's end;
    ``key_schema``: the same for the key (``SetSchemaMetadata$Key``), put on the key column's.
    """

    df: DataFrame
    kind: str = "source"
    timestamp: str = "timestamp_ms"
    key_json: bool = True
    value_schema: dict[str, Any] = field(default_factory=dict)
    key_schema: dict[str, Any] = field(default_factory=dict)

    def data_type(self, name: str):  # noqa: ANN201 - a pyspark DataType
        return self.df.schema[name].dataType

    def with_df(self, df: DataFrame) -> Records:
        return replace(self, df=df)

    def with_key_json(self, key_json: bool) -> Records:
        return replace(self, key_json=key_json)

    def with_value_schema(self, value_schema: dict[str, Any]) -> Records:
        return replace(self, value_schema=value_schema)

    def with_key_schema(self, key_schema: dict[str, Any]) -> Records:
        return replace(self, key_schema=key_schema)

    def with_schema_metadata(self) -> Records:
        """The value column carrying ``value_schema`` as metadata (what the source's JsonConverter reads)."""
        if not self.value_schema:
            return self
        value = F.col("value").alias("value", metadata=dict(self.value_schema))
        return self.with_df(self.df.withColumn("value", value))

    def set(self, alias: str, name: str, new: Column, where: Column | None) -> Records:
        """``name`` replaced by ``new`` where ``where`` holds (everywhere when None).

        A conditional change must keep the column's type: Spark has one schema per batch, so a
        predicate cannot give some records a struct with an extra field and others not.
        """
        if where is None:
            return self.with_df(self.df.withColumn(name, new))
        candidate = self.df.withColumn("__new", new)
        old_type, new_type = self.data_type(name), candidate.schema["__new"].dataType
        if old_type.simpleString() != new_type.simpleString():  # nullability may differ
            raise DataError(
                f"transforms.{alias}: with a predicate this transformation would give only some records a "
                f"{name} of type {new_type.simpleString()} (others keep {old_type.simpleString()}); sparkcat "
                "applies transformations to a whole micro-batch with one schema, so a predicate may only guard "
                "transformations that keep the type (routing, headers, masking, filtering)",
                {f"transforms.{alias}.predicate": ["changes the record schema for only some records"]})
        return self.with_df(self.df.withColumn(name, F.when(where, new).otherwise(F.col(name))))

    def drop_where(self, where: Column | None) -> Records:
        """Mark records as dropped (Connect's Filter): all of them when ``where`` is None."""
        drop = F.lit(True) if where is None else F.coalesce(where, F.lit(False))
        keep = F.col(KEEP) if KEEP in self.df.columns else F.lit(True)
        return self.with_df(self.df.withColumn(KEEP, keep & ~drop))
