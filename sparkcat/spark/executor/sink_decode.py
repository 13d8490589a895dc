"""A sink connector's Kafka rows decoded in Spark, so that its ``transforms`` chain can run as column expressions.

``decode_batch`` is called by the driver's handler and builds expressions that Spark evaluates on executors;
the module is executor-side because its ``Side`` and ``ORIGINAL`` are pickled into ``sink_chain.transformed_records``.

Connect applies a sink's transformations to the ``SinkRecord`` its converters made. Here the
chain is a projection of the batch (``sparkcat.transforms``), so the key and value are decoded
with Spark expressions first, per side (``key`` / ``value``):

- ``ByteArrayConverter`` (and sink tasks that want raw bytes): the binary column as it is;
- ``StringConverter``: the bytes as text in the converter's encoding (one Spark's ``decode`` knows;
  any other stays bytes through the chain and the converter decodes it afterwards);
- ``JsonConverter``: ``from_json`` into the Spark type of the batch's Connect schema (the
  envelope's ``schema`` with ``schemas.enable``, the type Spark infers from the whole batch
  without it) when that is a struct, map or array; a struct field's ``"default"`` rides on its
  ``StructField`` (``transforms.null_defaults``) and, under the converter's ``replace.null.with.default``
  (default true), a null field with a default is the default, as Connect's JsonConverter reads it.
  Otherwise (primitives, logical types such as ``Decimal`` or ``Timestamp``, several schemas in one
  batch) the side stays the bytes in Kafka and
  the Python converter decodes it after the chain: routers, header and filter transforms still
  apply, field transforms fail with Connect's ``Only Struct objects supported``.

The ORIGINAL coordinates are copied to ``_orig_topic``, ``_orig_partition`` and ``_orig_offset``
before any transform, as Connect keeps ``originalTopic``/``originalKafkaPartition``/
``originalKafkaOffset`` (KIP-793): positions and commits use them, whatever a router did to
``topic``. A JSON side that Spark could not parse for a row is flagged (``_bad_key`` /
``_bad_value``) and its bytes kept (``_raw_key`` / ``_raw_value``), so the row's conversion error
is raised by the Python converter, with Connect's error handling, where the records are put.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkcat.converters import ByteArrayConverter, JsonConverter, StringConverter, converter_for
from sparkcat.transforms.null_defaults import FIELD_DEFAULT, with_field_defaults

__all__ = ["ORIGINAL", "Side", "sides_of", "decode_batch", "spark_type"]

log = logging.getLogger(__name__)

#: The original Kafka coordinates of each row, kept through the chain.
ORIGINAL = {"topic": "_orig_topic", "partition": "_orig_partition", "offset": "_orig_offset"}

_PRIMITIVES: dict[str, T.DataType] = {
    "int8": T.ByteType(), "int16": T.ShortType(), "int32": T.IntegerType(), "int64": T.LongType(),
    "float32": T.FloatType(), "float64": T.DoubleType(), "boolean": T.BooleanType(), "string": T.StringType(),
    "bytes": T.BinaryType()}


#: Python encoding names StringConverter takes -> the charset Spark's ``decode`` takes; others decode in Python.
_SPARK_CHARSETS = {"utf-8": "UTF-8", "utf8": "UTF-8", "us-ascii": "US-ASCII", "ascii": "US-ASCII",
                   "iso-8859-1": "ISO-8859-1", "latin-1": "ISO-8859-1", "latin1": "ISO-8859-1",
                   "utf-16": "UTF-16", "utf-16be": "UTF-16BE", "utf-16le": "UTF-16LE"}


@dataclass
class Side:
    """How one side (``key`` or ``value``) of the records is decoded: ``kind`` bytes, string or json."""

    name: str
    kind: str
    schemas_enable: bool = False
    encoding: str = "UTF-8"
    decoded: bool = True  # False: the column still holds the bytes in Kafka (decode in Python after the chain)
    replace_null: bool = True  # JsonConverter's replace.null.with.default: a null field with a default is it

    @property
    def raw(self) -> str:
        return f"_raw_{self.name}"

    @property
    def bad(self) -> str:
        return f"_bad_{self.name}"


def sides_of(config: Mapping[str, str], raw: bool) -> list[Side]:
    """The key and value sides as the connector's converters (or a raw-bytes task) decode them."""
    out = []
    for name, is_key in (("key", True), ("value", False)):
        converter = ByteArrayConverter() if raw else converter_for(dict(config), is_key)
        if isinstance(converter, JsonConverter):
            out.append(Side(name, "json", converter.schemas_enable, replace_null=converter.replace_null))
        elif isinstance(converter, StringConverter):
            encoding = _SPARK_CHARSETS.get(str(converter.encoding).lower().replace("_", "-"))
            out.append(Side(name, "string", encoding=encoding) if encoding else Side(name, "bytes", decoded=False))
        else:  # ByteArrayConverter, or a plugin converter: its Python from_bytes runs after the chain
            out.append(Side(name, "bytes", decoded=isinstance(converter, ByteArrayConverter)))
    return out


def spark_type(schema: Any) -> T.DataType | None:
    """The Spark type of a Connect schema (JsonConverter's envelope), None when Spark cannot hold it faithfully.

    >>> spark_type({"type": "struct", "fields": [{"field": "id", "type": "int32"}]}).simpleString()
    'struct<id:int>'
    >>> spark_type({"type": "int64", "name": "org.apache.kafka.connect.data.Timestamp"}) is None
    True
    """
    if not isinstance(schema, dict) or schema.get("name", "").startswith("org.apache.kafka.connect.data."):
        return None
    kind = schema.get("type")
    if kind == "struct":
        fields = [(f, spark_type(f)) for f in schema.get("fields", [])]
        if any(t is None for _, t in fields):
            return None
        return T.StructType([T.StructField(str(f.get("field")), t, True, _default_metadata(f)) for f, t in fields])
    if kind == "array":
        items = spark_type(schema.get("items"))
        return None if items is None else T.ArrayType(items, True)
    if kind == "map":
        keys, values = schema.get("keys") or {}, spark_type(schema.get("values"))
        if keys.get("type") != "string" or values is None:  # other keys are an array of pairs in Connect's JSON
            return None
        return T.MapType(T.StringType(), values, True)
    return _PRIMITIVES.get(str(kind))


def _default_metadata(field_schema: dict[str, Any]) -> dict[str, str]:
    """A field's Connect default (the envelope's ``"default"``) as the SMTs read it (``null_defaults``)."""
    if field_schema.get("default") is None:
        return {}
    return {FIELD_DEFAULT: json.dumps(field_schema["default"], separators=(",", ":"))}


def _json_text(df: DataFrame, side: Side) -> Column:
    text = F.col(side.raw).cast("string")
    return F.get_json_object(text, "$.payload") if side.schemas_enable else text


def _batch_type(df: DataFrame, side: Side) -> T.DataType | None:
    """The Spark type of the batch's JSON ``side``: from its envelope schema, else inferred from every row."""
    if side.schemas_enable:
        schemas = [r[0] for r in df.select(F.get_json_object(F.col(side.raw).cast("string"), "$.schema"))
                   .where(F.col(side.raw).isNotNull()).distinct().limit(2).collect() if r[0] is not None]
        if len(schemas) == 1:
            return spark_type(json.loads(schemas[0]))
        if len(schemas) > 1:
            log.warning("The batch's %s has several JSON schemas; inferring one Spark type from the payloads",
                        side.name)
    texts = df.select(_json_text(df, side).alias("t")).where(F.col("t").isNotNull())
    if texts.where(~F.ltrim(F.col("t")).startswith("{")).limit(1).count():
        return None  # a JSON value that is no object: no struct to transform
    inferred = df.sparkSession.read.json(texts.rdd.map(lambda r: r[0])).schema
    fields = [f for f in inferred.fields if f.name != "_corrupt_record"]
    return T.StructType(fields) if fields else None


def _decode(df: DataFrame, side: Side) -> tuple[DataFrame, Side]:
    if side.kind == "string":
        return df.withColumn(side.name, F.decode(F.col(side.name), side.encoding)), side
    if side.kind != "json":
        return df, side
    df = df.withColumn(side.raw, F.col(side.name))
    target = _batch_type(df, side)
    if not isinstance(target, (T.StructType, T.MapType, T.ArrayType)):
        log.info("The batch's %s stays bytes through the transforms (its type is %s)", side.name,
                 "unknown" if target is None else target.simpleString())
        return df, replace(side, decoded=False)
    parsed = F.from_json(_json_text(df, side), target)  # the type itself: a DDL string breaks on "a.b"
    df = df.withColumn(side.name, parsed)
    df = df.withColumn(side.bad, F.col(side.raw).isNotNull() & F.col(side.name).isNull())
    if side.replace_null and side.schemas_enable:  # only an envelope schema declares defaults
        df = df.withColumn(side.name, with_field_defaults(F.col(side.name), target))
    return df, side


def decode_batch(df: DataFrame, sides: list[Side]) -> tuple[DataFrame, list[Side]]:
    """``df`` (Spark's Kafka rows) with the original coordinates copied and each side decoded."""
    df = df.select("*", *(F.col(c).alias(o) for c, o in ORIGINAL.items()))
    out = []
    for side in sides:
        df, decoded = _decode(df, side)
        out.append(decoded)
    return df, out
