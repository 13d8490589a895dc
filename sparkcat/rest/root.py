"""``GET /``, ``GET /health`` (Connect's ``RootResource``) and ``GET /metrics`` (Prometheus)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse, PlainTextResponse

from sparkcat.errors import NotFoundError
from sparkcat.rest import metrics
from sparkcat.rest.context import RestContext
from sparkcat.runtime.status_view import connector_status

HEALTHY = {"status": "healthy", "message": "Worker has completed startup and is ready to handle requests."}
STARTING = {"status": "starting", "message": "Worker is still starting up."}


def router(ctx: RestContext) -> APIRouter:
    api = APIRouter(tags=["cluster"])

    @api.get("/", summary="Version, commit and Kafka cluster id")
    def server_info() -> Any:
        return ctx.cluster.server_info()

    @api.get("/health", summary="200 once the driver has read the config log, 503 while starting",
             responses={503: {"description": "Still starting"}})
    async def health() -> JSONResponse:  # on the event loop: answers even when handler threads are busy
        if ctx.ready:
            return JSONResponse(HEALTHY)
        return JSONResponse(STARTING, status_code=503)

    @api.get("/metrics", response_class=PlainTextResponse, summary="Prometheus metrics per connector and task")
    def prometheus() -> PlainTextResponse:
        statuses = []
        if ctx.ready:
            herder = ctx.herder
            state = herder.snapshot()
            for name in state.connectors():
                try:
                    statuses.append(connector_status(name, state, ctx.status_store))
                except NotFoundError:
                    continue
        return PlainTextResponse(metrics.render(ctx.runtimes(), statuses), media_type=metrics.CONTENT_TYPE)

    return api
