"""``/connectors``: Connect's ``ConnectorsResource`` (create, read, reconfigure, steer, offsets).

Writes go through the herder, which validates, writes the config log and returns once
the change was read back; an invalid config is rejected (400, naming the keys) before
anything is written.
"""

from __future__ import annotations

from typing import Any, Optional
from urllib.parse import quote

from fastapi import APIRouter, Body, Query, Response
from fastapi.responses import JSONResponse

from sparkcat.errors import BadRequestError, NotFoundError
from sparkcat.rest import views
from sparkcat.rest.bodies import (
    ConfigMap,
    ConnectorOffsetsBody,
    CreateConnectorRequest,
    check_config_name,
    config_strings,
    initial_target_state,
    java_boolean,
)
from sparkcat.rest.context import RestContext
from sparkcat.model.config_state import TargetState
from sparkcat.config.validation import mask_connector_config, validate_connector_config

ALTERED = "The offsets for this connector have been altered successfully"
RESET = "The offsets for this connector have been reset successfully"

_ERRORS = {400: {"description": "Invalid request or config (Connect's error body)"},
           404: {"description": "Unknown connector or task"}}


def _put_config(ctx: RestContext, name: str, raw: dict[str, Any], *, allow_replace: bool,
                initial_state: TargetState | None = None) -> bool:
    """Validate and write one connector config through the herder; True when it was created."""
    config = config_strings(raw)
    check_config_name(name, config)
    config["name"] = name
    if any(v is None for v in config.values()):
        validate_connector_config(config, ctx.policy).raise_if_invalid(f"connector {name}")
    return ctx.herder.put_connector_config(name, config, allow_replace=allow_replace, initial_state=initial_state)


def java_trim(text: str) -> str:
    """Java's ``String.trim``: only characters up to U+0020 go (Python's ``strip`` would also eat U+0085)."""
    return text.strip("".join(map(chr, range(0x21))))


def _location(name: str) -> str:
    """The new connector's URL, percent-encoded (headers are Latin-1 only; ``..`` must not be a dot segment)."""
    segment = quote(name, safe="")
    return f"/connectors/{segment.replace('.', '%2E') if segment in ('.', '..') else segment}"


def _info(ctx: RestContext, name: str) -> dict[str, Any]:
    return views.connector_info(name, ctx.herder.snapshot(), ctx.policy)


def _status(ctx: RestContext, name: str) -> dict[str, Any]:
    return ctx.herder.connector_status(name)


def router(ctx: RestContext) -> APIRouter:
    api = APIRouter(prefix="/connectors", tags=["connectors"], responses=_ERRORS)

    @api.get("", summary="List connectors (names, or with expand=status / expand=info a map of details)")
    def list_connectors(expand: list[str] = Query(default_factory=list)) -> Any:
        herder = ctx.herder
        state = herder.snapshot()
        if not expand:
            return state.connectors()
        out: dict[str, dict[str, Any]] = {}
        for name in state.connectors():
            entry: dict[str, Any] = {}
            try:
                for kind in expand:
                    if kind == "status":
                        entry["status"] = herder.connector_status(name, state)
                    elif kind == "info":
                        entry["info"] = views.connector_info(name, state, ctx.policy)
            except NotFoundError:
                continue  # deleted while we looked (Connect skips it too)
            out[name] = entry
        return out

    @api.post("", status_code=201, summary="Create a connector (409 when it exists)",
              responses={409: {"description": "The connector already exists"}})
    def create_connector(request: CreateConnectorRequest = Body(...)) -> Response:
        if request.config is None:
            raise BadRequestError("Connector configuration must be provided in the 'config' field")
        name = java_trim(request.name or "")  # Connect trims the name of a create request
        state = initial_target_state(request.initial_state)
        _put_config(ctx, name, dict(request.config), allow_replace=False, initial_state=state)
        return JSONResponse(_info(ctx, name), status_code=201, headers={"Location": _location(name)})

    @api.get("/{name}", summary="Connector info: name, config, tasks, type")
    def get_connector(name: str) -> Any:
        return _info(ctx, name)

    @api.get("/{name}/config", summary="The connector's configuration")
    def get_connector_config(name: str) -> Any:
        return mask_connector_config(ctx.herder.connector_config(name), ctx.policy)

    @api.put("/{name}/config", summary="Create (201) or reconfigure (200) a connector")
    def put_connector_config(name: str, config: ConfigMap = Body(...)) -> Response:
        created = _put_config(ctx, name, config, allow_replace=True)
        headers = {"Location": _location(name)} if created else None
        return JSONResponse(_info(ctx, name), status_code=201 if created else 200, headers=headers)

    @api.patch("/{name}/config", summary="Change some keys of a connector's config (null removes a key)")
    def patch_connector_config(name: str, patch: ConfigMap = Body(...)) -> Any:
        current: dict[str, Any] = ctx.herder.connector_config(name)
        changes = config_strings(patch)
        check_config_name(name, {k: v for k, v in changes.items() if v is not None})
        for key, value in changes.items():
            if value is None:
                current.pop(key, None)
            else:
                current[key] = value
        _put_config(ctx, name, current, allow_replace=True)
        return _info(ctx, name)

    @api.get("/{name}/status", summary="Connector and task states")
    def get_connector_status(name: str) -> Any:
        return _status(ctx, name)

    @api.post("/{name}/restart", summary="Restart the connector (and with includeTasks its tasks)",
              responses={202: {"description": "Status with what restarts shown as RESTARTING"},
                         204: {"description": "Only the connector restarts"}})
    def restart_connector(name: str, includeTasks: Optional[str] = None,  # noqa: N803 (Connect's names)
                          onlyFailed: Optional[str] = None) -> Response:  # noqa: N803
        include_tasks = java_boolean(includeTasks, False)
        only_failed = java_boolean(onlyFailed, False)
        before = _status(ctx, name)
        ctx.herder.restart_connector(name, include_tasks=include_tasks, only_failed=only_failed)
        if not include_tasks and not only_failed:
            return Response(status_code=204)
        return JSONResponse(views.restart_plan(before, include_tasks, only_failed), status_code=202)

    @api.put("/{name}/pause", status_code=202, response_class=Response, summary="Pause the connector")
    def pause_connector(name: str) -> Response:
        ctx.herder.set_target_state(name, TargetState.PAUSED)
        return Response(status_code=202)

    @api.put("/{name}/resume", status_code=202, response_class=Response, summary="Resume the connector")
    def resume_connector(name: str) -> Response:
        ctx.herder.set_target_state(name, TargetState.STARTED)
        return Response(status_code=202)

    @api.put("/{name}/stop", status_code=204, response_class=Response,
             summary="Stop the connector: no tasks, no query, offsets may then be changed")
    def stop_connector(name: str) -> Response:
        ctx.herder.set_target_state(name, TargetState.STOPPED)
        return Response(status_code=204)

    @api.delete("/{name}", status_code=204, response_class=Response, summary="Delete the connector")
    def delete_connector(name: str) -> Response:
        ctx.herder.delete_connector(name)
        return Response(status_code=204)

    @api.get("/{name}/tasks", summary="Task ids and configs")
    def get_tasks(name: str) -> Any:
        return views.task_infos(name, ctx.herder.snapshot(), ctx.policy)

    @api.get("/{name}/tasks/{task}/status", summary="One task's state")
    def get_task_status(name: str, task: int) -> Any:
        return ctx.herder.task_status(name, task)

    @api.post("/{name}/tasks/{task}/restart", status_code=204, response_class=Response,
              summary="Restart one task")
    def restart_task(name: str, task: int) -> Response:
        ctx.herder.restart_task(name, task)
        return Response(status_code=204)

    @api.get("/{name}/topics", summary="Topics the connector used (KIP-558)")
    def get_topics(name: str) -> Any:
        return {name: {"topics": ctx.herder.active_topics(name)}}

    @api.put("/{name}/topics/reset", status_code=202, response_class=Response,
             summary="Forget the topics the connector used")
    def reset_topics(name: str) -> Response:
        ctx.herder.reset_connector_active_topics(name)
        return Response(status_code=202)

    @api.get("/{name}/offsets", summary="The connector's offsets (KIP-875)")
    def get_offsets(name: str) -> Any:
        herder = ctx.herder
        pairs = herder.connector_offsets(name)
        return {"offsets": [{"partition": p, "offset": o} for p, o in pairs]}

    @api.patch("/{name}/offsets", summary="Alter offsets of a STOPPED connector (KIP-875)")
    def alter_offsets(name: str, body: ConnectorOffsetsBody = Body(...)) -> Any:
        pairs = [(entry.partition, entry.offset) for entry in body.offsets or []]
        ctx.herder.alter_connector_offsets(name, pairs)
        return {"message": ALTERED}

    @api.delete("/{name}/offsets", summary="Reset offsets of a STOPPED connector (KIP-875)")
    def reset_offsets(name: str) -> Any:
        ctx.herder.reset_connector_offsets(name)
        return {"message": RESET}

    return api

