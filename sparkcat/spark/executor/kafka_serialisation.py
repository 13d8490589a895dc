"""Vectorised serialisation: whole Arrow columns to Kafka bytes, byte for byte what the converters write.

Runs on executors, in the source-to-Kafka writers' ``mapInArrow`` functions (the driver's handler only calls
``value_type_of``, to name the value type it pickles to them). The writer (``source_to_kafka``) turns each Arrow batch of a source connector's
rows into keys and values here. Flat structs under ``JsonConverter``, UTF-8 strings under
``StringConverter`` and binary columns are converted column-wise with pyarrow compute; anything
else goes through the converter value by value, so the bytes are always the converter's.
"""

from __future__ import annotations

import json
from typing import Any

from pyspark.sql.types import DataType, StructField, StructType, _parse_datatype_json_string

__all__ = ["column_bytes", "NamedStruct", "value_type_of", "key_type_of"]

_JSON_STRING_NEEDS_ESCAPE = r'["\\\x00-\x1f]'
_INTEGER_TYPES = ("ByteType", "ShortType", "IntegerType", "LongType")


class NamedStruct(StructType):
    """A struct type with the Connect schema name/version SetSchemaMetadata gave the value (or the key).

    ``converters.connect_schema`` writes them into JsonConverter's envelope (``"name"``, ``"version"``).
    """

    def __init__(self, fields: list[StructField], connect_name: str | None, connect_version: int | None) -> None:
        super().__init__(fields)
        self.connect_name, self.connect_version = connect_name, connect_version


def value_type_of(value: StructField) -> DataType:
    """The batch's ``value`` column type, named when its metadata has a Connect schema name or version."""
    from sparkcat.transforms import SCHEMA_NAME, SCHEMA_VERSION
    meta = value.metadata or {}
    if not isinstance(value.dataType, StructType) or not (SCHEMA_NAME in meta or SCHEMA_VERSION in meta):
        return value.dataType
    return NamedStruct(value.dataType.fields, meta.get(SCHEMA_NAME), meta.get(SCHEMA_VERSION))


def key_type_of(key: StructField) -> DataType | None:
    """The type a source's JSON-text ``key`` column had before the chain wrote it as JSON (``ValueToKey``), named
    when ``SetSchemaMetadata$Key`` named it; None for a task's own key, which has no schema."""
    from sparkcat.transforms import KEY_TYPE, SCHEMA_NAME, SCHEMA_VERSION
    meta = key.metadata or {}
    if KEY_TYPE not in meta:
        return None
    key_type = _parse_datatype_json_string(meta[KEY_TYPE])
    if not isinstance(key_type, StructType) or not (SCHEMA_NAME in meta or SCHEMA_VERSION in meta):
        return key_type
    return NamedStruct(key_type.fields, meta.get(SCHEMA_NAME), meta.get(SCHEMA_VERSION))


def _json_field_texts(column: Any, spark_type: DataType) -> Any | None:
    """JSON texts of a primitive column as an Arrow string array (nulls as ``null``), or None if unsupported."""
    import pyarrow as pa
    import pyarrow.compute as pc
    kind = type(spark_type).__name__
    if kind in _INTEGER_TYPES or kind == "BooleanType":
        texts = pc.cast(column, pa.string())  # decimal digits, "true"/"false": what json.dumps writes
    elif kind == "StringType":
        if len(column) and pc.any(pc.match_substring_regex(column, _JSON_STRING_NEEDS_ESCAPE)).as_py():
            return None  # escaping needed somewhere: leave it to the json module
        texts = pc.binary_join_element_wise('"', column, '"', "")
    else:
        return None
    return pc.fill_null(texts, "null")


def _flat_json_values(column: Any, value_type: DataType, conv: Any) -> list[Any] | None:
    """JsonConverter bytes of a struct column with primitive fields, built column-wise; None if not applicable."""
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyspark.sql.types import StructType

    from sparkcat.converters import JsonConverter
    if type(conv) is not JsonConverter or not isinstance(value_type, StructType) or not value_type.fields:
        return None
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    pieces: list[Any] = []
    for i, f in enumerate(value_type.fields):
        texts = _json_field_texts(pc.struct_field(column, [i]), f.dataType)
        if texts is None:
            return None
        pieces += [("{" if i == 0 else ",") + json.dumps(f.name, ensure_ascii=False) + ":", texts]
    pieces.append("}")
    joined = pc.binary_join_element_wise(*pieces, "")
    if conv.schemas_enable:
        conv._prepare(value_type)
        joined = pc.binary_join_element_wise('{"schema":' + conv._schema_text + ',"payload":', joined, "}", "")
    if column.null_count:
        joined = pc.if_else(pc.is_valid(column), joined, pa.scalar(None, pa.string()))
    return pc.cast(joined, pa.binary()).to_pylist()


def column_bytes(column: Any, spark_type: DataType | None, conv: Any, json_keys: bool = False) -> list[Any]:
    """A column's values as Kafka bytes through ``conv`` (None stays None), vectorised where it can be.

    ``json_keys``: the column holds keys as JSON text (the connector source's ``key`` column), of
    ``spark_type`` when the chain gave the key a schema (``key_type_of``), else schemaless (None).
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    from sparkcat.converters import ByteArrayConverter, StringConverter
    n = len(column)
    if column.null_count == n:
        return [None] * n
    kind = type(spark_type).__name__ if spark_type is not None else None
    if not json_keys:
        fast = _flat_json_values(column, spark_type, conv)
        if fast is not None:
            return fast
        if kind == "StringType" and type(conv) is StringConverter and conv.encoding.lower().replace("_", "-") \
                in ("utf-8", "utf8"):
            return pc.cast(column, pa.binary()).to_pylist()
        if kind == "BinaryType" and type(conv) in (ByteArrayConverter, StringConverter):
            return column.to_pylist()
        return [conv.to_bytes(v, spark_type) for v in column.to_pylist(maps_as_pydicts="lossy")]
    loads, to_bytes = json.loads, conv.to_bytes
    return [None if k is None else to_bytes(loads(k), spark_type) for k in column.to_pylist()]
