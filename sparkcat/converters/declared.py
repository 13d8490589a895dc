"""The settings each built-in converter takes (after the ``key.converter.`` / ``value.converter.`` prefix).

Connect 4.1's ConfigDefs are the reference: JsonConverterConfig (``schemas.enable``, ``schemas.cache.size``,
``decimal.format``, ``replace.null.with.default``), StringConverterConfig (``converter.encoding``), and
ConverterConfig's ``converter.type`` alone for ByteArrayConverter and the number and boolean converters.
Validation refuses every other setting, naming it: a typo (``schemas.enabel``) must not leave a
converter running with its default. AvroConverter's registry settings are checked by
``schema_registry.settings_problems``; a plugin's converter declares its keys with ``config_def()``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from sparkcat.api.config import ConfigDef, ConfigValue, Range, Type, ValidString
from sparkcat.converters.builtins import BYTE_ARRAY_CONVERTER, JSON_CONVERTER, STRING_CONVERTER
from sparkcat.converters.numeric import NUMERIC_CONVERTERS

__all__ = ["ConverterKeys", "CONVERTER_KEYS", "setting_errors"]

#: ConverterConfig's key, which Connect's runtime sets itself (key or value) over whatever a config says.
_RUNTIME_TYPE = MappingProxyType({
    "converter.type": "converter.type is set by the runtime from the side the converter is on (key or value); "
                      "remove it"})


@dataclass(frozen=True)
class ConverterKeys:
    """The settings a converter takes (``definition``) and those refused with a reason (``refused``)."""

    class_name: str
    definition: ConfigDef
    refused: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))


_JSON = (ConfigDef()
         .define("schemas.enable", Type.BOOLEAN, True,
                 documentation="Include schemas within each of the serialized values and keys.")
         .define("schemas.cache.size", Type.INT, 1000, Range.at_least(0),
                 documentation="The maximum number of schemas that can be cached (sparkcat keeps the last one "
                               "per converter; accepted for compatibility)."))
_JSON.define("decimal.format", Type.STRING, "BASE64", ValidString.in_ignore_case("BASE64", "NUMERIC"),
             documentation="How DECIMAL values are serialized: BASE64 or NUMERIC.")
_JSON.define("replace.null.with.default", Type.BOOLEAN, True,
             documentation="Whether to replace fields that have a default value and that are null to the default "
                           "value. When set to true, the default value is used, otherwise null is used.")
_STRING = (ConfigDef()
           .define("converter.encoding", Type.STRING, "UTF8",
                   documentation="The name of the Java character set to use for encoding strings.")
           .define("encoding", Type.STRING, None, documentation="sparkcat's alias of converter.encoding."))

#: Connect's class name of each built-in converter (except AvroConverter) -> the settings it takes.
CONVERTER_KEYS: dict[str, ConverterKeys] = {
    JSON_CONVERTER: ConverterKeys(JSON_CONVERTER, _JSON.freeze(), _RUNTIME_TYPE),
    STRING_CONVERTER: ConverterKeys(STRING_CONVERTER, _STRING.freeze(), _RUNTIME_TYPE),
    BYTE_ARRAY_CONVERTER: ConverterKeys(BYTE_ARRAY_CONVERTER, ConfigDef().freeze(), _RUNTIME_TYPE),
    **{name: ConverterKeys(name, ConfigDef().freeze(), _RUNTIME_TYPE) for name in NUMERIC_CONVERTERS},
}


def setting_errors(keys: ConverterKeys, settings: Mapping[str, object], prefix: str) -> list[ConfigValue]:
    """Errors of one converter's settings (``prefix`` removed), each naming the prefixed key.

    A setting the converter does not take, a refused one, or a value its type does not parse (a
    ``schemas.enable`` of ``yes`` is an error, never taken as false).
    """
    out = []
    for key, value in settings.items():
        full = prefix + key
        if key == "plugin.version":
            continue  # KIP-891's version key: the framework's (config/plugin_versions.py), never the converter's
        if key in keys.refused:
            out.append(ConfigValue(full, value, errors=[keys.refused[key].replace(key, full, 1)]))
        elif key not in keys.definition.keys:
            taken = ", ".join(prefix + k for k in keys.definition.names()) or "none"
            out.append(ConfigValue(full, value, errors=[
                f"Unknown configuration key {full!r}: {keys.class_name} does not take it (its settings: {taken}); "
                "check for a typo"]))
    given = {k: v for k, v in settings.items() if k in keys.definition.keys}
    for checked in keys.definition.validate(given):
        if checked.errors and checked.name in given:
            out.append(ConfigValue(prefix + checked.name, given[checked.name],
                                   errors=[e.replace(checked.name, prefix + checked.name) for e in checked.errors]))
    return out
