"""The plugins besides connectors that ``GET /connector-plugins?connectorsOnly=false`` lists, and their keys.

Connect lists its transformations, predicates, converters and header converters there too (``PluginInfo``
with type ``transformation``, ``predicate``, ``converter``, ``header_converter``), and
``GET /connector-plugins/CLASS/config`` gives any of them its ConfigDef (KIP-769). Here: the SMTs and
predicates sparkcat runs (each transformation's keys as its module declares them, ``transforms/registry.py``),
its built-in converters (``converters/declared.py``) and SimpleHeaderConverter. Java SMTs and converters on
plugin.path are not listed: sparkcat's connectors cannot use them. A converter of ``plugin.packages``
(``module:Class``) is described by ``plugin_converter_definition`` but not listed: the packages are not scanned.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from sparkcat import __version__, plugins
from sparkcat.api.config import ConfigDef, Type
from sparkcat.api.converter import Converter

__all__ = ["other_plugin_infos", "other_plugin_definition", "plugin_converter_definition"]

log = logging.getLogger(__name__)


def _avro_keys() -> ConfigDef:
    """AvroConverter's settings sparkcat implements (``converters/schema_registry.py``)."""
    from sparkcat.converters.schema_registry import RETRIES

    keys = (ConfigDef()
            .define("schema.registry.url", Type.LIST,
                    documentation="The Schema Registry's URLs, comma-separated, failed over in turn.")
            .define("key.subject.name.strategy", Type.STRING, "io.confluent.kafka.serializers.subject."
                    "TopicNameStrategy", documentation="Subject name strategy of keys.")
            .define("value.subject.name.strategy", Type.STRING, "io.confluent.kafka.serializers.subject."
                    "TopicNameStrategy", documentation="Subject name strategy of values.")
            .define("auto.register.schemas", Type.BOOLEAN, True, documentation="Register new schemas.")
            .define("use.latest.version", Type.BOOLEAN, False, documentation="Use the subject's latest schema.")
            .define("basic.auth.credentials.source", Type.STRING, "URL", documentation="URL or USER_INFO.")
            .define("basic.auth.user.info", Type.PASSWORD, None, documentation="user:password."))
    for key, default in RETRIES.items():
        keys.define(key, Type.INT, default, documentation="The registry client's retries per URL "
                    "(max.retries) and their back-off (retries.wait.ms, retries.max.wait.ms).")
    return keys


def _json_schema_keys() -> ConfigDef:
    """JsonSchemaConverter's settings sparkcat implements: the registry's and JsonSchemaData's own two."""
    return (_avro_keys()
            .define("decimal.format", Type.STRING, "BASE64", documentation="How Decimals are written: BASE64 "
                    "(their unscaled bytes) or NUMERIC (JSON numbers).")
            .define("object.additional.properties", Type.BOOLEAN, True, documentation="Whether a struct's "
                    "JSON Schema allows other properties (false: \"additionalProperties\": false)."))


def _protobuf_keys() -> ConfigDef:
    """ProtobufConverter's settings sparkcat implements: the registry's and ProtobufData's own two."""
    return (_avro_keys()
            .define("optional.for.nullables", Type.BOOLEAN, False, documentation="Whether a nullable field is "
                    "proto3 optional (false: a null is written as the field's default value).")
            .define("schemas.cache.size", Type.INT, 1000, documentation="The size of the schema cache (sparkcat "
                    "keeps one schema per Spark type; accepted for compatibility)."))


def _definitions() -> dict[str, tuple[str, ConfigDef]]:
    """Every listed plugin's class name and alias -> (its PluginInfo type, its keys)."""
    from sparkcat.converters import AVRO_CONVERTER, HEADER_CONVERTERS, JSON_SCHEMA_CONVERTER, PROTOBUF_CONVERTER
    from sparkcat.converters.declared import CONVERTER_KEYS
    from sparkcat.transforms.catalog import PREDICATE_KEYS, TRANSFORM_KEYS  # every SMT module registered

    out: dict[str, tuple[str, ConfigDef]] = {}
    for kind, declared in (("transformation", TRANSFORM_KEYS), ("predicate", PREDICATE_KEYS)):
        out.update({name: (kind, keys.definition) for name, keys in declared.items()})
    out.update({name: ("converter", keys.definition) for name, keys in CONVERTER_KEYS.items()})
    out[AVRO_CONVERTER] = ("converter", _avro_keys())
    out[JSON_SCHEMA_CONVERTER] = ("converter", _json_schema_keys())
    out[PROTOBUF_CONVERTER] = ("converter", _protobuf_keys())
    out.update({name: ("header_converter", ConfigDef()) for name in HEADER_CONVERTERS})
    return out


def other_plugin_infos() -> list[dict[str, Any]]:
    """Connect's ``PluginInfo`` of each transformation, predicate, converter and header converter, by class name."""
    from sparkcat.transforms.catalog import PREDICATE_KEYS, TRANSFORM_KEYS

    canonical = {keys.class_name for keys in (*TRANSFORM_KEYS.values(), *PREDICATE_KEYS.values())}
    infos = []
    for name, (kind, _) in sorted(_definitions().items()):
        if kind in ("transformation", "predicate") and name not in canonical:
            continue  # an alias
        if "." not in name:
            continue  # a header converter's short name
        infos.append({"class": name, "type": kind, "version": __version__})
    return infos


def other_plugin_definition(plugin: str) -> ConfigDef | None:
    """The keys of the transformation, predicate or converter ``plugin`` names (class name or alias), else None."""
    found = _definitions().get(plugin)
    return None if found is None else found[1]


def plugin_converter_definition(plugin: str, packages: Sequence[str]) -> tuple[str, ConfigDef] | None:
    """The version and keys of the converter ``plugin`` names as ``module:Class`` in ``plugin.packages``, else None.

    The keys are those its ``config_def()`` declares, which validation checks its settings against (none without
    one, as Connect's ``Converter.config()`` defaults to an empty ConfigDef); the version is its ``plugin_version``
    ("unknown" without one), which KIP-891's ``*.plugin.version`` keys are checked against. A module outside the
    packages is not imported.
    """
    if not plugins.in_packages(plugin, packages):
        return None
    try:
        cls = plugins.load_class(plugin, packages)
        if not (isinstance(cls, type) and issubclass(cls, Converter)):
            return None
        declared = cls.config_def()
    except Exception as e:  # noqa: BLE001 - no converter here (404, as Connect's for a plugin it could not load)
        log.warning("Converter %s of plugin.packages does not load: %s", plugin, e)
        return None
    return str(getattr(cls, "plugin_version", "unknown")), declared if isinstance(declared, ConfigDef) else ConfigDef()
