"""Connect's ``ConfigInfos`` JSON: the body of ``config/validate`` and of a plugin's ``config`` listing.

Rendered from a ``ConfigDef`` and its ``ConfigValue``s. It lives in the runtime, not in
``sparkcat.rest``, because the runtime's validation (used by the herder and the CLI
as well as REST) returns this body.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from sparkcat.api.config import ConfigDef, ConfigKey, ConfigValue, Type, convert_to_string

__all__ = ["key_infos", "validate_response"]


def validate_response(
    definition: ConfigDef,
    connector_class_name: str,
    config: Mapping[str, Any],
    extra_values: Iterable[ConfigValue] = (),
) -> dict[str, Any]:
    """The JSON body of Connect's ``PUT /connector-plugins/{plugin}/config/validate``.

    ``extra_values`` (e.g. a connector's multi-key checks) replace the value of the same
    name, as in Connect; names not defined in ``definition`` get a ``null`` definition.
    ``error_count`` counts error messages, as Connect does. Passwords show as ``[hidden]``.

    >>> d = ConfigDef().define("tasks.max", Type.INT, 1)
    >>> body = validate_response(d, "MySource", {"tasks.max": "x"})
    >>> body["error_count"], body["configs"][0]["value"]["errors"]
    (1, ['Invalid value x for configuration tasks.max: Not a number of type INT'])
    """
    values: dict[str, ConfigValue] = {v.name: v for v in definition.validate(config)}
    for extra in extra_values:
        values[extra.name] = replace(extra, errors=list(extra.errors))
    for name, raw in config.items():
        if raw is None:
            target = values.setdefault(name, ConfigValue(name))
            target.errors.append("Null value can not be supplied as the configuration value.")
    configs: list[dict[str, Any]] = []
    error_count = 0
    for name, value in values.items():
        if name not in definition:
            configs.append({"definition": None, "value": _value_info(value, None)})
            error_count += len(value.errors)
    for name, key in definition.keys.items():
        value_info = None
        if name in values:
            value_info = _value_info(values[name], key.type)
            error_count += len(values[name].errors)
        configs.append({"definition": _key_info(key), "value": value_info})
    return {
        "name": connector_class_name,
        "error_count": error_count,
        "groups": definition.groups(),
        "configs": configs,
    }


def key_infos(definition: ConfigDef) -> list[dict[str, Any]]:
    """The definitions as Connect's ``GET /connector-plugins/{plugin}/config`` lists them."""
    return [_key_info(k) for k in definition.keys.values()]


def _key_info(key: ConfigKey) -> dict[str, Any]:
    return {
        "name": key.name,
        "type": key.type.value,
        "required": key.required,
        "default_value": None if key.required else convert_to_string(key.default, key.type),
        "importance": key.importance.value,
        "documentation": key.documentation,
        "group": key.group,
        "width": key.width.value,
        "display_name": key.display_name,
        "dependents": list(key.dependents),
        "order": key.order_in_group,
    }


def _value_info(value: ConfigValue, type_: Type | None) -> dict[str, Any]:
    recommended_type = Type.STRING if type_ is Type.LIST else type_
    return {
        "name": value.name,
        "value": convert_to_string(value.value, type_),
        "recommended_values": [convert_to_string(v, recommended_type) for v in value.recommended_values],
        "errors": list(value.errors),
        "visible": value.visible,
    }
