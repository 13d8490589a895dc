"""``GET /``, ``GET /health`` (Connect's ``RootResource``) and ``GET /metrics`` (Prometheus)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse, PlainTextResponse

from sparkcat.errors import NotFoundError
from sparkcat.rest import connect_metrics, metrics
from sparkcat.rest.context import RestContext

HEALTHY = {"status": "healthy", "message": "Worker has completed startup and is ready to handle requests."}
STARTING = {"status": "starting", "message": "Worker is still starting up."}
#: Connect's ``WorkerStatus.unhealthy`` message, followed by the reason.
UNHEALTHY = "Worker was unable to handle this request and may be unable to handle other requests."


def router(ctx: RestContext) -> APIRouter:
    api = APIRouter(tags=["cluster"])

    @api.get("/", summary="Version, commit and Kafka cluster id")
    def server_info() -> Any:
        info: dict[str, Any] = ctx.cluster.server_info()
        herder = ctx.driver.herder
        if herder is not None:  # sparkcat's fields: which driver leads the cluster
            info["sparkcat_role"] = "leader" if herder.is_leader else "standby"
            info["sparkcat_leader_url"] = herder.leader_url
            info["sparkcat_running_connectors"] = herder.running_connectors()
        return info

    @api.get("/health", summary="200 once the driver has read the config log and takes writes (it leads, or knows "
                                "the leader it forwards them to); 503 while starting, while no driver takes writes "
                                "(the group is electing one), or while the herder or the config log stream is down "
                                "(with the reason)",
             responses={503: {"description": "Still starting, or unhealthy"}})
    async def health() -> JSONResponse:  # on the event loop: answers even when handler threads are busy
        problem = ctx.health_problem
        if problem is not None:  # Connect answers 500 here; the issue asks for 503 (docs/running.md)
            return _unhealthy(problem)
        herder = ctx.driver.herder
        if herder is None or not herder.ready:
            return JSONResponse(STARTING, status_code=503)
        route = herder.write_route()
        if not route.waits:
            return JSONResponse(HEALTHY)
        if not herder.wait_role(0):  # never took writes yet: still starting
            return JSONResponse({**STARTING, "message": f"{STARTING['message'][:-1]}: {route.reason}."},
                                status_code=503)
        return _unhealthy(f"Writes cannot be taken: {route.reason}.")

    registry = metrics.registry(lambda: _metrics_snapshot(ctx))

    @api.get("/metrics", response_class=PlainTextResponse, summary="Prometheus metrics per connector and task")
    def prometheus() -> PlainTextResponse:
        return PlainTextResponse(metrics.exposition(registry), media_type=metrics.CONTENT_TYPE)

    return api


def _unhealthy(reason: str) -> JSONResponse:
    return JSONResponse({"status": "unhealthy", "message": f"{UNHEALTHY} {reason}"}, status_code=503)


def _metrics_snapshot(ctx: RestContext) -> metrics.Snapshot:
    """Progress of the connectors this driver runs and, once the herder is ready, their statuses and classes; the
    leader group's rebalances (with Kafka stores)."""
    herder = ctx.driver.herder
    membership = getattr(ctx.driver, "membership", None)
    rebalance = membership.rebalance_view() if membership is not None else None
    if herder is None:
        return [], [], {}, rebalance
    statuses, classes = [], {}
    if ctx.ready:
        state = herder.snapshot()
        for name in state.connectors():
            try:
                statuses.append(herder.connector_status(name, state))
            except NotFoundError:
                continue
            classes[name] = connect_metrics.connector_identity(
                (state.connector_config(name) or {}).get("connector.class", ""), ctx.policy)
    return herder.connector_progress(), statuses, classes, rebalance
