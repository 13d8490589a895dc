"""The worker config's ``key.converter``, ``value.converter``, ``header.converter`` and their settings.

Kafka Connect's worker names the converters of every connector that names none
(``policy/worker_converters.py`` hands them down). They are checked when the worker config is read,
each error naming its key: a class sparkcat has neither built in nor in ``plugin.packages``, a header
converter other than SimpleHeaderConverter, settings of an AvroConverter, JsonSchemaConverter or
ProtobufConverter it does not implement, a Connect converter sparkcat refuses by name (``REFUSED_CONVERTERS``),
and a ``*.converter.plugin.version`` (KIP-891) the converter's one version does not satisfy.
Built-in names are kept as Connect's class names (``string`` becomes
``org.apache.kafka.connect.storage.StringConverter``), so that a Java connector's JVM host, which
knows only Java classes, gets what a Connect worker would.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sparkcat import plugins
from sparkcat.config.avro import avro_converter_errors
from sparkcat.config.converter_keys import REFUSED_CONVERTERS, converter_setting_errors
from sparkcat.config.plugin_versions import worker_converter_version_errors
from sparkcat.errors import ConfigError
from sparkcat.policy.worker_converters import SIDES, side_of

__all__ = ["DOCS", "checked_worker_converters", "is_worker_converter_key"]

#: What docs/reference.md says of each class key (the worker's ConfigDef defines them with these).
DOCS = {
    "key.converter": "Kafka Connect's key: the key converter of every connector that names none (Connect's class "
                     "name, an alias such as 'string', or a plugin's module:Class), configured by the worker's "
                     "key.converter.* keys. A connector's own key.converter replaces it with only the connector's "
                     "key.converter.* settings. Unset: JsonConverter (Connect requires the key).",
    "value.converter": "Kafka Connect's key: the value converter of every connector that names none, as key.converter "
                       "for values. Unset: JsonConverter (schemas.enable true, Connect's own default).",
    "header.converter": "Kafka Connect's key: the header converter of every connector that names none; only "
                        "org.apache.kafka.connect.storage.SimpleHeaderConverter (the default) is implemented.",
}


def is_worker_converter_key(key: str) -> bool:
    """Whether a worker config key is a converter class or one of its settings."""
    return side_of(key) is not None


def checked_worker_converters(converters: Mapping[str, str], packages: Sequence[str]) -> dict[str, str]:
    """The worker's converter keys with built-in names as Connect's; ConfigError naming each bad key."""
    if not converters:
        return {}  # and nothing imported: most worker configs name no converter
    from sparkcat.converters import HEADER_CONVERTERS, java_name

    out = {k: str(v).strip() if k in SIDES else str(v) for k, v in converters.items()}
    errors: dict[str, list[str]] = {}
    for side in ("key.converter", "value.converter"):
        name = out.get(side, "")
        if name in REFUSED_CONVERTERS:
            errors[side] = [REFUSED_CONVERTERS[name]]
        elif name and java_name(name) is not None:
            out[side] = str(java_name(name))
        elif name and not plugins.in_packages(name, packages):
            errors[side] = [f"{name} is neither a converter sparkcat has (JsonConverter, StringConverter, "
                            f"ByteArrayConverter, the numeric converters, AvroConverter, JsonSchemaConverter, "
                            f"ProtobufConverter) nor "
                            f"a module:Class in plugin.packages ({', '.join(packages)})"]
    header = out.get("header.converter", "")
    if header and header not in HEADER_CONVERTERS:
        errors["header.converter"] = [f"{header} is not implemented; only "
                                      f"org.apache.kafka.connect.storage.SimpleHeaderConverter (the default) is"]
    for key in out:
        if key.startswith("header.converter.") and key != "header.converter.plugin.version":
            errors[key] = ["SimpleHeaderConverter has no settings sparkcat implements"]
    for value in avro_converter_errors(out) + converter_setting_errors(out, packages):
        errors.setdefault(value.name, []).extend(value.errors)
    for key, messages in worker_converter_version_errors(out, packages).items():
        errors.setdefault(key, []).extend(messages)
    if errors:
        details = "; ".join(f"{k}: {' '.join(m)}" for k, m in errors.items())
        raise ConfigError(f"worker converters: {details}", errors)
    return out
