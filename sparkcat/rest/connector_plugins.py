"""``/connector-plugins``: Connect's ``ConnectorPluginsResource`` (list, config definitions, validate)."""

from __future__ import annotations

from typing import Any, Optional

from fastapi import APIRouter, Body

from sparkcat.errors import BadRequestError
from sparkcat.rest import views
from sparkcat.rest.bodies import ConfigMap, config_strings, java_boolean
from sparkcat.rest.context import RestContext
from sparkcat.rest.plugin_catalog import other_plugin_infos
from sparkcat.config.validation import validate_connector_config


def router(ctx: RestContext) -> APIRouter:
    api = APIRouter(prefix="/connector-plugins", tags=["connector-plugins"])

    @api.get("", summary="Installed connector plugins")
    def list_plugins(connectorsOnly: Optional[str] = None) -> Any:  # noqa: N803 (Connect's name)
        # connectorsOnly=false adds the transformations, predicates and converters sparkcat runs (Java SMTs and
        # converters on plugin.path cannot be used by sparkcat's connectors, so they are not listed).
        connectors = views.plugin_infos(ctx.policy)
        return connectors if java_boolean(connectorsOnly, True) else connectors + other_plugin_infos()

    @api.get("/{plugin}/config", summary="Config key definitions of a plugin",
             responses={400: {"description": "version (KIP-891) is no version spec, or not the installed one's"},
                        404: {"description": "Unknown plugin"}})
    def plugin_config(plugin: str, version: Optional[str] = None) -> Any:
        return views.plugin_config(plugin, ctx.policy, version)

    @api.put("/{plugin}/config/validate", summary="Validate a config: every error, per key",
             responses={400: {"description": "Body's connector.class is not the plugin, or is unknown"}})
    def validate(plugin: str, config: ConfigMap = Body(...)) -> Any:
        values = config_strings(config)
        included = values.get("connector.class")
        if included is None:
            raise BadRequestError("Connector config contains no connector type: set connector.class")
        if not views.plugin_matches(included, plugin):
            raise BadRequestError(f"Included connector type {included} does not match request type {plugin}")
        result = validate_connector_config(values, ctx.policy)
        if result.connector_type not in views.CONNECTOR_TYPES and "connector.class" in result.errors:
            raise BadRequestError(" ".join(result.errors["connector.class"]))
        return result.response

    return api
