"""The ``key.converter.*`` / ``value.converter.*`` settings of a config, checked against its converters' keys.

A connector runs with its own converter of a side, or the worker's (inherited with the worker's settings,
``policy/worker_converters.py``), or JsonConverter when neither names one; each setting of that side must be
one the converter takes, with a value of its type. Built-in converters declare their settings
(``converters/declared.py``); a plugin's converter does with a ``config_def()`` classmethod returning a
``ConfigDef`` (without one its settings are passed on unchecked); AvroConverter's, JsonSchemaConverter's and
ProtobufConverter's are checked by ``config/avro.py``. The same check runs on the worker config, so a bad worker setting stops the worker,
naming the worker's key.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sparkcat import plugins
from sparkcat.api.config import ConfigDef, ConfigValue

__all__ = ["converter_setting_errors", "REFUSED_CONVERTERS"]

#: Connect converters users paste in that sparkcat does not implement, with the reason: refused by name, in
#: connector and worker configs alike, rather than as an unknown class (none today).
REFUSED_CONVERTERS: dict[str, str] = {}


def _declared(name: str, packages: Sequence[str]):
    """The converter's declared keys (``ConverterKeys``), or None when they are checked elsewhere or unknown."""
    from sparkcat.converters import is_avro_converter, is_json_schema_converter, is_protobuf_converter, java_name
    from sparkcat.converters.declared import CONVERTER_KEYS, ConverterKeys

    java = java_name(name)
    if java is not None:
        registry = is_avro_converter(name) or is_json_schema_converter(name) or is_protobuf_converter(name)
        return None if registry else CONVERTER_KEYS.get(java)
    if not plugins.in_packages(name, packages):
        return None  # refused by the class check, not imported
    try:
        definition = getattr(plugins.load_class(name, packages), "config_def", None)
    except Exception:  # noqa: BLE001 - a class that does not load fails where the converter is made
        return None
    if not callable(definition):
        return None
    declared = definition()
    return ConverterKeys(name, declared) if isinstance(declared, ConfigDef) else None


def converter_setting_errors(config: Mapping[str, object], packages: Sequence[str]) -> list[ConfigValue]:
    """Errors of the key and value converters' settings in ``config``, each naming its prefixed key."""
    from sparkcat.converters import JSON_CONVERTER
    from sparkcat.converters.declared import setting_errors

    out = []
    for side in ("key.converter", "value.converter"):
        prefix = side + "."
        settings = {k[len(prefix):]: v for k, v in config.items() if k.startswith(prefix)}
        if not settings:
            continue
        keys = _declared(str(config.get(side) or "").strip() or JSON_CONVERTER, packages)
        if keys is not None:
            out += setting_errors(keys, settings, prefix)
    return out
