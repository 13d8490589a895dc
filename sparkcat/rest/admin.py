"""``/admin/loggers``: Connect's ``LoggingResource`` over Python's logging."""

from __future__ import annotations

from typing import Any, Optional

from fastapi import APIRouter, Body, Response
from fastapi.responses import JSONResponse

from sparkcat.rest.context import RestContext
from sparkcat.runtime.control.logger_levels import level_name, parse_level


def router(ctx: RestContext) -> APIRouter:
    api = APIRouter(prefix="/admin/loggers", tags=["admin"])

    @api.get("", summary="Root and every logger with an explicit level")
    def list_loggers() -> Any:
        return ctx.loggers.all_levels()

    @api.get("/{logger}", summary="A logger's level (its effective level when it has none)",
             responses={404: {"description": "Unknown logger"}})
    def get_logger(logger: str) -> Any:
        return ctx.loggers.level(logger)

    @api.put("/{logger}", summary="Set the level of a logger and its children",
             responses={204: {"description": "scope=cluster: written to the config log as a logger-cluster- "
                                              "record, which every driver on it applies as it reads it"},
                        404: {"description": "Unknown level name (Connect's answer)"}})
    def set_level(logger: str, body: dict[str, Any] = Body(...), scope: Optional[str] = None) -> Response:
        level = parse_level(body.get("level"))
        if (scope or "worker").strip().lower() == "cluster":
            ctx.herder.set_cluster_logger_level(logger, level_name(level))
            return Response(status_code=204)
        return JSONResponse(ctx.loggers.set_level(logger, level))

    return api
