"""Converters: record keys, values and headers to Kafka bytes and back (Connect's ``Converter``).

The interface is ``sparkcat.api.converter.Converter``. Built in: Connect's JSON, String and
ByteArray converters and its SimpleHeaderConverter (``builtins``), its number and boolean converters
(``numeric``: Long, Integer, Short, Double, Float, Boolean), Confluent's AvroConverter with
a Schema Registry client (``avro``, ``avro_data``, ``schema_registry``) and its JsonSchemaConverter
(``json_schema``, ``json_schema_data``, ``json_schema_values``) and its ProtobufConverter (``protobuf``,
``protobuf_schema``, ``protobuf_values``). ``registry`` resolves the
name a connector config gives (``key.converter`` / ``value.converter``) to one of these or to a
plugin's class. A package of its own, below both the connectors that name converters and the
Spark runtime that runs them.
"""

from sparkcat.converters.avro import AvroConverter
from sparkcat.converters.builtins import (
    AVRO_CONVERTER, BYTE_ARRAY_CONVERTER, HEADER_CONVERTERS, JSON_CONVERTER, JSON_SCHEMA_CONVERTER, PROTOBUF_CONVERTER,
    SIMPLE_HEADER_CONVERTER, STRING_CONVERTER, ByteArrayConverter, JsonConverter, SimpleHeaderConverter,
    StringConverter, connect_schema,
)
from sparkcat.converters.json_schema import JsonSchemaConverter
from sparkcat.converters.protobuf import ProtobufConverter
from sparkcat.converters.registry import (
    at_topic, converter_for, is_avro_converter, is_builtin_converter, is_json_schema_converter, is_protobuf_converter,
    java_name, topic_aware,
)

__all__ = ["JsonConverter", "StringConverter", "ByteArrayConverter", "AvroConverter", "JsonSchemaConverter",
           "ProtobufConverter", "is_protobuf_converter", "PROTOBUF_CONVERTER",
           "SimpleHeaderConverter", "converter_for", "at_topic", "topic_aware", "is_builtin_converter",
           "is_avro_converter", "is_json_schema_converter", "java_name", "connect_schema", "HEADER_CONVERTERS",
           "SIMPLE_HEADER_CONVERTER", "JSON_CONVERTER", "STRING_CONVERTER", "BYTE_ARRAY_CONVERTER", "AVRO_CONVERTER",
           "JSON_SCHEMA_CONVERTER"]
