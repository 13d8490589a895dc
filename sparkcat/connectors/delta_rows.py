"""The Delta sink's rows from Kafka records, as column expressions: shared by the native append (Delta's own
streaming sink, ``DeltaSinkConnector.native_write``) and the batch writer (``delta_writer``).

A Kafka record becomes its decoded key and value, as the connector's converters would decode them:
StringConverter is a ``decode`` of the bytes in its ``encoding`` (STRING), ByteArrayConverter keeps the bytes
(BINARY), JsonConverter is ``from_json`` with ``value.schema``/``key.schema`` (inside Connect's
``schema``/``payload`` envelope when ``schemas.enable`` is true). Plus ``kafka_topic``, ``kafka_partition``,
``kafka_offset`` and ``kafka_timestamp`` (TIMESTAMP). ``value_is_null`` tells which records a converter decodes to
a null value (the tombstones that ``delete.enabled`` turns into deletes).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, StructType

from sparkcat.converters import ByteArrayConverter, StringConverter, converter_for
from sparkcat.connectors.delta_settings import KEY_SCHEMA, VALUE_SCHEMA, DeltaSinkSettings
from sparkcat.errors import ConfigError

__all__ = ["struct_of", "decoded", "value_is_null", "key_columns", "kafka_rows", "KAFKA_COLUMNS"]

KAFKA_COLUMNS = ("kafka_topic", "kafka_partition", "kafka_offset", "kafka_timestamp")


def struct_of(ddl: str | None, key: str) -> StructType | None:
    """A DDL field list (or ``STRUCT<...>``) as a StructType; ConfigError naming ``key`` otherwise."""
    if ddl is None:
        return None
    try:
        parsed = DataType.fromDDL(ddl)
    except Exception as e:
        raise ConfigError(f"{key}: {ddl!r} is not a Spark DDL field list ({str(e).splitlines()[0]})",
                          {key: [f"not a Spark DDL field list: {ddl}"]}) from None
    if not isinstance(parsed, StructType) or not parsed.fields:
        raise ConfigError(f"{key}: {ddl!r} is not a field list such as 'id BIGINT, name STRING'",
                          {key: [f"not a Spark DDL field list: {ddl}"]})
    return parsed


def decoded(name: str, converter: Any, struct: StructType | None) -> tuple[list[Column], tuple[str, ...]]:
    """Spark expressions equivalent to a converter's ``from_bytes``: (columns, names of the struct fields).

    ``name`` is the Kafka row's ``key`` or ``value`` (binary); JsonConverter values need ``struct``.
    """
    column = F.col(name)
    if isinstance(converter, ByteArrayConverter):
        return [column.alias(name)], ()
    if isinstance(converter, StringConverter):
        return [F.decode(column, converter.encoding).alias(name)], ()
    text = F.decode(column, "UTF-8")
    if struct is None:  # JsonConverter key without key.schema: its JSON text (the payload, if enveloped)
        return [(F.get_json_object(text, "$.payload") if converter.schemas_enable else text).alias(name)], ()
    if converter.schemas_enable:
        parsed = F.from_json(text, StructType().add("payload", struct)).getField("payload")
    else:
        parsed = F.from_json(text, struct)
    return [parsed.getField(f.name).alias(f.name) for f in struct.fields], tuple(f.name for f in struct.fields)


def value_is_null(config: Mapping[str, str]) -> Column:
    """True where the value converter decodes a Kafka record's ``value`` to null, as its ``toConnectData`` would:
    a null value (a tombstone), and for JsonConverter the JSON text ``null`` or, with schemas, an envelope whose
    ``payload`` is null. Connect's JsonConverter writes a null value that has a schema as such an envelope (Debezium's
    ``ExtractNewRecordState`` makes deletes so), and Connect's sinks see a null value there too. Malformed JSON is
    not null."""
    converter = converter_for(dict(config), False)
    column = F.col("value")
    if isinstance(converter, (ByteArrayConverter, StringConverter)):
        return column.isNull()
    text = F.decode(column, "UTF-8")
    if converter.schemas_enable:
        fields = F.from_json(text, "MAP<STRING, STRING>")
        decoded_null = F.map_contains_key(fields, "payload") & fields.getItem("payload").isNull()
    else:
        decoded_null = F.trim(text) == "null"
    return column.isNull() | F.coalesce(decoded_null, F.lit(False))


def key_columns(settings: DeltaSinkSettings) -> tuple[str, ...]:
    """The key's columns of a Kafka-fed table (the merge key): ``key.schema``'s fields, else ``key``."""
    key_type = struct_of(settings.key_schema, KEY_SCHEMA)
    return tuple(f.name for f in key_type.fields) if key_type is not None else ("key",)


def kafka_rows(records: DataFrame, config: Mapping[str, str], settings: DeltaSinkSettings,
               *extra: Column) -> DataFrame:
    """The table's rows of Kafka records (Spark's Kafka columns, ``timestamp`` in epoch ms or TIMESTAMP), then
    ``extra`` columns (the merge writer's bookkeeping)."""
    key_type, value_type = struct_of(settings.key_schema, KEY_SCHEMA), struct_of(settings.value_schema, VALUE_SCHEMA)
    keys, _ = decoded("key", converter_for(dict(config), True), key_type)
    values, value_fields = decoded("value", converter_for(dict(config), False), value_type)
    key_names = key_columns(settings)
    values = [v for v, f in zip(values, value_fields or ("value",)) if f not in key_names]
    stamp = records.schema["timestamp"].dataType.typeName()
    timestamp = F.timestamp_millis(F.col("timestamp")) if stamp in ("long", "integer") else F.col("timestamp")
    return records.select(*keys, *values, F.col("topic").alias("kafka_topic"),
                          F.col("partition").cast("int").alias("kafka_partition"),
                          F.col("offset").cast("long").alias("kafka_offset"), timestamp.alias("kafka_timestamp"),
                          *extra)
