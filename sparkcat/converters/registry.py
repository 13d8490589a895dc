"""Which converter a connector config names: Connect's class names, short aliases, or a plugin's path.

A connector picks its converters with Connect's keys ``key.converter`` / ``value.converter`` (and
their ``key.converter.*`` / ``value.converter.*`` settings). Built-in converters are found by name
without importing anything a user wrote; any other name is a ``module:Class`` path, loaded only
when validation found it in the worker's ``plugin.packages``.
"""

from __future__ import annotations

from typing import Any

from sparkcat.api.converter import Converter
from sparkcat.converters.avro import AvroConverter
from sparkcat.converters.builtins import (
    AVRO_CONVERTER, BYTE_ARRAY_CONVERTER, JSON_CONVERTER, JSON_SCHEMA_CONVERTER, PROTOBUF_CONVERTER, STRING_CONVERTER,
    ByteArrayConverter, JsonConverter, StringConverter,
)
from sparkcat.converters.json_schema import JsonSchemaConverter
from sparkcat.converters.numeric import NUMERIC_CONVERTERS
from sparkcat.converters.protobuf import ProtobufConverter

__all__ = ["converter_for", "is_builtin_converter", "is_avro_converter", "is_json_schema_converter",
           "is_protobuf_converter", "java_name", "topic_aware", "at_topic"]

_BUILTINS: dict[str, tuple[type[Converter], tuple[str, ...]]] = {
    JSON_CONVERTER: (JsonConverter, ("json",)),
    STRING_CONVERTER: (StringConverter, ("string",)),
    BYTE_ARRAY_CONVERTER: (ByteArrayConverter, ("bytearray", "bytes")),
    AVRO_CONVERTER: (AvroConverter, ("avro",)),
    JSON_SCHEMA_CONVERTER: (JsonSchemaConverter, ("jsonschema", "json-schema")),
    PROTOBUF_CONVERTER: (ProtobufConverter, ("protobuf",)),
    **NUMERIC_CONVERTERS,
}


def _names(java_name: str, cls: type[Converter], aliases: tuple[str, ...]) -> list[str]:
    """Every name a built-in answers to: Connect's, the class's, the aliases, and its Python paths.

    ``sparkcat.connectors.converters`` is where the built-ins lived before they had a package of
    their own; configs already in a config log may name them there.
    """
    paths = [f"{module}{sep}{cls.__name__}" for module in (cls.__module__, "sparkcat.connectors.converters")
             for sep in (":", ".")]
    return [java_name, cls.__name__, *aliases, *paths]


_ALIASES: dict[str, type[Converter]] = {
    name: cls for java_name, (cls, aliases) in _BUILTINS.items() for name in _names(java_name, cls, aliases)}


def is_builtin_converter(name: str) -> bool:
    """True for the Java names and aliases of the converters sparkcat ships (nothing is imported)."""
    return name in _ALIASES or name.lower() in _ALIASES


def java_name(name: str) -> str | None:
    """Connect's class name of the built-in converter ``name`` names (an alias, say), else None.

    >>> java_name("string")
    'org.apache.kafka.connect.storage.StringConverter'
    """
    cls = _ALIASES.get(name.strip(), _ALIASES.get(name.strip().lower()))
    return next((java for java, (c, _) in _BUILTINS.items() if c is cls), None) if cls else None


def is_avro_converter(name: str) -> bool:
    """True for the names of Confluent's AvroConverter (nothing is imported)."""
    return _ALIASES.get(name, _ALIASES.get(name.lower())) is AvroConverter


def is_json_schema_converter(name: str) -> bool:
    """True for the names of Confluent's JsonSchemaConverter (nothing is imported)."""
    return _ALIASES.get(name, _ALIASES.get(name.lower())) is JsonSchemaConverter


def is_protobuf_converter(name: str) -> bool:
    """True for the names of Confluent's ProtobufConverter (nothing is imported)."""
    return _ALIASES.get(name, _ALIASES.get(name.lower())) is ProtobufConverter


def topic_aware(converter: Any) -> bool:
    """Whether the converter's bytes depend on the record's topic (it has ``for_topic``, as AvroConverter)."""
    return callable(getattr(converter, "for_topic", None))


def at_topic(converter: Any, topic: str) -> Any:
    """``converter``, told the topic of the record it converts next when it cares (``for_topic``)."""
    if topic_aware(converter):
        converter.for_topic(topic)
    return converter


def _converter_class(name: str) -> type[Converter]:
    """A converter class by Java name, alias or ``module:Class`` path."""
    cls = _ALIASES.get(name) or _ALIASES.get(name.lower())
    if cls is not None:
        return cls
    from sparkcat.plugins import load_class
    loaded = load_class(name)
    if not (isinstance(loaded, type) and issubclass(loaded, Converter)):
        raise TypeError(f"{name} is not a converter (subclass sparkcat.api.converter.Converter)")
    return loaded


def converter_for(config: dict[str, str], is_key: bool) -> Converter:
    """The configured key or value converter of a connector config (JsonConverter when unset)."""
    from sparkcat.policy.input_policy import prepare

    config = prepare(config)  # a plan's connector config: its placeholders resolved here, where it is used
    prefix = "key.converter" if is_key else "value.converter"
    name = (config.get(prefix) or JSON_CONVERTER).strip()
    settings = {k[len(prefix) + 1:]: v for k, v in config.items()
                if k.startswith(prefix + ".") and k != prefix + ".plugin.version"}  # KIP-891's, not the converter's
    converter = _converter_class(name)()
    converter.configure(settings, is_key)
    return converter
