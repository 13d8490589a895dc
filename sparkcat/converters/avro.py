"""Confluent's ``io.confluent.connect.avro.AvroConverter`` on the Converter interface.

A built-in converter (``converters.AVRO_CONVERTER``). ``Converter.to_bytes`` has no topic, so the
Spark side names each record's topic first (``converters.at_topic`` calls ``for_topic``): the
subject of TopicNameStrategy and TopicRecordNameStrategy depends on it. Registry calls are cached
per converter (one per schema and subject per task, none per record).

A value without a Spark type (a source connector's key: JSON text without a schema) is written
with the Avro primitive of its Python value, as Connect's AvroData writes a schemaless
primitive: ``str`` -> ``string``, ``int`` -> ``long``, ``float`` -> ``double``, ``bool`` ->
``boolean``, ``bytes`` -> ``bytes``; a dict or list without a schema fails the record.
"""

from __future__ import annotations

import decimal
from typing import Any

from pyspark.sql import types as T

from sparkcat.converters.avro_data import AvroCodec, AvroError, avro_schema, schema_id_of
from sparkcat.converters.builtins import unscaled_bytes
from sparkcat.converters.schema_registry import RegistryClient, RegistryConverter, RegistrySettings, subject_name


class AvroConverter(RegistryConverter):
    """Avro values in the Confluent wire format, schemas in a Schema Registry."""

    NAME, ERROR = "AvroConverter", AvroError

    def __init__(self) -> None:
        super().__init__()
        self._codecs: dict[tuple[str, int], AvroCodec] = {}

    def configure(self, settings: dict[str, Any], is_key: bool) -> None:
        self.is_key = is_key
        self._client = RegistryClient(RegistrySettings.parse(dict(settings), is_key))

    def to_bytes(self, value: Any, spark_type: T.DataType | None) -> bytes | None:
        if value is None:
            return None
        if spark_type is None:
            spark_type = self._schemaless_type(value)
        return self._codec(spark_type).encode(_datum(value, spark_type), self.topic)

    def from_bytes(self, data: bytes | None) -> Any:
        if data is None:
            return None
        payload = bytes(data)
        schema_id = schema_id_of(payload, self.topic)
        key = ("", schema_id)
        if key not in self._codecs:
            self._codecs[key] = AvroCodec(schema_id, self._registry().schema(schema_id))
        return self._codecs[key].decode(payload, self.topic)

    def _codec(self, spark_type: T.DataType) -> AvroCodec:
        key = (self.topic, id(spark_type))
        if key not in self._codecs:
            schema = self._schema(spark_type, avro_schema)
            client = self._registry()
            subject = subject_name(client.settings.strategy, self.topic, self.is_key, schema)
            schema_id, write_schema = client.id_for(subject, schema)
            self._codecs[key] = AvroCodec(schema_id, write_schema)
        return self._codecs[key]



def _datum(value: Any, spark_type: T.DataType) -> Any:
    """A Spark value (Rows, dicts, pairs) as fastavro writes it for Connect's AvroData schema."""
    if value is None:
        return None
    if hasattr(value, "asDict"):
        value = value.asDict(recursive=False)
    if isinstance(spark_type, T.StructType):
        return {f.name: _datum(value.get(f.name), f.dataType) for f in spark_type.fields}
    if isinstance(spark_type, T.ArrayType):
        return [_datum(v, spark_type.elementType) for v in value]
    if isinstance(spark_type, T.MapType):
        items = value.items() if isinstance(value, dict) else value
        pairs = [(_datum(k, spark_type.keyType), _datum(v, spark_type.valueType)) for k, v in items]
        if isinstance(spark_type.keyType, T.StringType):
            return dict(pairs)
        return [{"key": k, "value": v} for k, v in pairs]
    if isinstance(spark_type, T.DecimalType):  # Connect's bytes (Java's BigInteger), not fastavro's own
        return unscaled_bytes(decimal.Decimal(value), spark_type.scale)
    return value
