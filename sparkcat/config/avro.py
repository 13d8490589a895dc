"""Validation of the Schema Registry converters' settings, per key, before anything runs.

Confluent's ``io.confluent.connect.avro.AvroConverter``, ``io.confluent.connect.json.JsonSchemaConverter`` and
``io.confluent.connect.protobuf.ProtobufConverter``.
Connect hands a converter the connector's ``key.converter.*`` / ``value.converter.*`` keys with
the prefix removed (a plain ``schema.registry.url`` is not a converter setting there, and is not
one here either), so every message names the prefixed key the user wrote: a missing
``value.converter.schema.registry.url``, a setting sparkcat does not implement
(``value.converter.normalize.schemas``), a bad subject name strategy or boolean. Without the packages
a converter imports (fastavro, confluent-kafka's registry client's) the converter key itself is
refused, naming them and the extra to install.
"""

from __future__ import annotations

from collections.abc import Mapping

from sparkcat.api.config import ConfigValue

__all__ = ["avro_converter_errors"]


def avro_converter_errors(config: Mapping[str, object]) -> list[ConfigValue]:
    """Errors of the key and value registry converters' settings in ``config`` (none when neither side uses one)."""
    from sparkcat.converters import is_avro_converter, is_json_schema_converter, is_protobuf_converter
    from sparkcat.converters.avro_data import avro_missing, avro_missing_message
    from sparkcat.converters.json_schema import json_schema_problems
    from sparkcat.converters.protobuf import protobuf_missing, protobuf_missing_message, protobuf_problems
    from sparkcat.converters.schema_registry import settings_problems

    out = []
    for prefix, is_key in (("key.converter", True), ("value.converter", False)):
        name = str(config.get(prefix) or "").strip()
        avro = bool(name) and is_avro_converter(name)
        protobuf = bool(name) and is_protobuf_converter(name)
        if not avro and not protobuf and not (name and is_json_schema_converter(name)):
            continue
        missing = protobuf_missing() if protobuf else avro_missing(with_fastavro=avro)
        if missing:
            message = protobuf_missing_message if protobuf else avro_missing_message
            out.append(ConfigValue(prefix, name, errors=[message(missing, name)]))
        settings = {k[len(prefix) + 1:]: v for k, v in config.items()
                    if k.startswith(prefix + ".") and k != prefix + ".plugin.version"}  # the framework's key
        problems = (settings_problems(settings, is_key) if avro else protobuf_problems(settings, is_key) if protobuf
                    else json_schema_problems(settings, is_key))
        for key, messages in problems.items():
            full = f"{prefix}.{key}"
            out.append(ConfigValue(full, config.get(full), errors=[m.replace(key, full, 1) for m in messages]))
    return out
