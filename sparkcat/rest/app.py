"""Builds the FastAPI application of the Kafka Connect-compatible REST API.

>>> from types import SimpleNamespace
>>> from sparkcat.runtime.control.logger_levels import LoggerLevels
>>> from sparkcat.config.worker import WorkerConfig
>>> app = create_app(SimpleNamespace(herder=None, worker=WorkerConfig(), loggers=LoggerLevels()))
>>> sorted(app.openapi()["paths"]["/connectors/{name}/offsets"])
['delete', 'get', 'patch']
"""

from __future__ import annotations

from fastapi import FastAPI

from sparkcat import __version__
from sparkcat.rest import admin, connector_plugins, connectors, root
from sparkcat.rest.context import RestContext
from sparkcat.rest.errors import install_error_handlers
from sparkcat.rest.forward import ForwardToLeader
from sparkcat.rest.guard import GuardPolicy, RequestGuard
from sparkcat.runtime.control.herder_api import REQUEST_TIMEOUT_S, DriverApi

DESCRIPTION = (
    "Kafka Connect's REST API, served by the sparkcat driver. Errors answer "
    '`{"error_code": <status>, "message": "..."}` as Connect does.'
)


def create_app(driver: DriverApi, policy: GuardPolicy | None = None,
               write_wait_s: float = REQUEST_TIMEOUT_S) -> FastAPI:
    """The application for ``driver`` (a ``sparkcat.bootstrap.Driver``: ``runtime.herder_api.DriverApi``).

    ``policy`` (authentication, Host allow-list, limits) defaults to the one the worker
    config describes; building it reads the credentials files. ``write_wait_s``: how long a write
    waits for a driver that takes it (``rest.forward``).
    """
    if policy is None:
        worker = driver.worker
        policy = GuardPolicy.from_config(worker.rest_security, tuple(l.host for l in worker.rest_listeners))
    ctx = RestContext(driver)
    app = FastAPI(title="sparkcat", version=__version__, description=DESCRIPTION)
    install_error_handlers(app)
    # inside the guard: authenticated, within limits
    app.add_middleware(ForwardToLeader, driver=driver, wait_s=write_wait_s)
    app.add_middleware(RequestGuard, policy=policy)
    for module in (root, connectors, connector_plugins, admin):
        app.include_router(module.router(ctx))
    app.state.context = ctx
    return app
