"""Connect's response entities built from the herder's snapshot (connector info, tasks, plugins).

Statuses come from the herder (``Herder.connector_status``, built by
``sparkcat.runtime.control.status_view``, which the CLI shares); this module adds only what
the REST API shows and the CLI does not.
"""

from __future__ import annotations

from typing import Any

from sparkcat import __version__, plugins, redact
from sparkcat.errors import BadRequestError, NotFoundError, SparkcatError
from sparkcat.model.config_state import ClusterConfigState
from sparkcat.policy.input_policy import InputPolicy
from sparkcat.config.infos import key_infos
from sparkcat.config.maven_version import InvalidVersionSpec, VersionRange
from sparkcat.config.plugin_versions import requirement
from sparkcat.rest.plugin_catalog import other_plugin_definition, plugin_converter_definition
from sparkcat.config.validation import framework_definition, mask_connector_config, secret_keys
from sparkcat.runtime.control.status_view import connector_type

CONNECTOR_TYPES = ("source", "sink")


def connector_info(name: str, state: ClusterConfigState, policy: InputPolicy | None = None) -> dict[str, Any]:
    """``GET /connectors/NAME``: Connect's ``ConnectorInfo`` (sensitive values ``[hidden]``)."""
    config = state.connector_config(name)
    if config is None:
        raise NotFoundError(f"Connector {name} not found")
    return {"name": name, "config": mask_connector_config(config, policy),
            "tasks": [{"connector": name, "task": t} for t in state.task_ids(name)],
            "type": connector_type(config, policy)}


def task_infos(name: str, state: ClusterConfigState, policy: InputPolicy | None = None) -> list[dict[str, Any]]:
    """``GET /connectors/NAME/tasks``: Connect's ``TaskInfo`` list (sensitive values ``[hidden]``)."""
    if not state.contains(name):
        raise NotFoundError(f"Connector {name} not found")
    hidden = secret_keys(state.connector_config(name) or {}, policy)
    return [{"id": {"connector": name, "task": t},
             "config": redact.mask_config(state.task_config(name, t) or {}, hidden)}
            for t in state.task_ids(name)]


def restart_plan(status: dict[str, Any], include_tasks: bool, only_failed: bool) -> dict[str, Any]:
    """The 202 body of ``POST /connectors/NAME/restart``: what restarts shows RESTARTING.

    Connect's ``RestartRequest``: the connector restarts unless ``onlyFailed`` and it is
    not FAILED; a task restarts when ``includeTasks`` and (not ``onlyFailed`` or it FAILED).
    """
    def restarting(entry: dict[str, Any], chosen: bool) -> dict[str, Any]:
        return {**entry, "state": "RESTARTING"} if chosen else dict(entry)

    connector = status["connector"]
    restart_connector = not only_failed or connector["state"] == "FAILED"
    tasks = [restarting(t, include_tasks and (not only_failed or t["state"] == "FAILED")) for t in status["tasks"]]
    return {**status, "connector": restarting(connector, restart_connector), "tasks": tasks}


def plugin_infos(policy: InputPolicy | None = None) -> list[dict[str, Any]]:
    """``GET /connector-plugins``: Connect's ``PluginInfo`` of each connector plugin: the Java ones on plugin.path,
    then the built-ins whose Connect name no Java plugin took."""
    java = policy.java_plugins.plugin_infos() if policy is not None and policy.java_plugins is not None else []
    taken = {info["class"] for info in java}
    out = list(java)
    for class_name, cls in plugins.builtin_plugins():
        if class_name not in taken:
            out.append({"class": class_name, "type": plugins.connector_type(cls), "version": cls().version()})
    return out


def plugin_config(plugin: str, policy: InputPolicy | None = None, version: str | None = None
                  ) -> list[dict[str, Any]]:
    """``GET /connector-plugins/PLUGIN/config``: the plugin's keys, then the framework's (Connect's order).

    Only plugins in the worker's ``plugin.packages`` are looked at (404 otherwise, nothing imported); a Java
    connector on plugin.path is described by Connect's own classes; a transformation, predicate or
    converter (built in, or a ``module:Class`` converter of plugin.packages) by the keys it declares
    (``plugin_catalog``). ``version`` (KIP-891's ``?version=``) must be
    satisfied by the one version installed (400 with Connect's messages otherwise); a connector's
    ``connector.plugin.version`` shows that version as its default, as Connect 4.1 does.
    """
    try:
        wanted = requirement(version)
    except InvalidVersionSpec:
        raise BadRequestError(f"Invalid version specification: {version}") from None
    if policy is not None and policy.java_connector(plugin) is not None:
        keys = policy.java_plugins.plugin_config(plugin)
        installed = next((k["default_value"] for k in keys if k["name"] == "connector.plugin.version"), None)
        return _in_version(plugin, wanted, str(installed or "undefined"), keys)
    other = other_plugin_definition(plugin)
    if other is not None:
        return _in_version(plugin, wanted, __version__, key_infos(other))
    packages = (policy or InputPolicy.default()).plugin_packages
    converter = plugin_converter_definition(plugin, packages)
    if converter is not None:
        return _in_version(plugin, wanted, converter[0], key_infos(converter[1]))
    try:
        cls = plugins.connector_class(plugin, packages)
    except SparkcatError:
        raise NotFoundError(f"Unknown plugin {plugin}.") from None
    installed = cls().version()
    own = key_infos(cls().config_def())
    base = [{**k, "default_value": installed} if k["name"] == "connector.plugin.version" else k
            for k in key_infos(framework_definition(cls))]
    names = {k["name"] for k in own}
    return _in_version(plugin, wanted, installed, own + [k for k in base if k["name"] not in names])


def _in_version(plugin: str, wanted: VersionRange | None, installed: str, keys: list[dict[str, Any]]
                ) -> list[dict[str, Any]]:
    """``keys`` when the installed version satisfies ``?version=`` (or none was given), else Connect's 400."""
    if wanted is not None and not wanted.contains(installed):
        raise BadRequestError(f"Plugin {plugin} not found that matches the version range {wanted}, available "
                              f"versions: [{installed}]")
    return keys


def plugin_matches(included: str, requested: str) -> bool:
    """Connect's check that a validate request's ``connector.class`` is the path's plugin.

    Connect compares names with a trailing ``Connector`` removed (so simple names match
    fully qualified ones); sparkcat also accepts two aliases of the same class.

    >>> plugin_matches("org.apache.kafka.connect.file.FileStreamSinkConnector", "FileStreamSink")
    True
    >>> plugin_matches("file-sink", "org.apache.kafka.connect.file.FileStreamSinkConnector")
    True
    >>> plugin_matches("increment", "file-sink")
    False
    """
    def normalized(name: str) -> str:
        suffix = "Connector"
        return name[: -len(suffix)] if name.endswith(suffix) and len(name) > len(suffix) else name

    if normalized(included).endswith(normalized(requested)):
        return True
    return plugins.class_path_of(included) == plugins.class_path_of(requested)
