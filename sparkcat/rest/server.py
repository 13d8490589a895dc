"""Serves the REST API with uvicorn, one daemon thread per listener (plain HTTP or HTTPS).

The listeners come from the worker config (``listeners``, else ``rest.host``/``rest.port``).
Before anything binds, the credentials files are read and the HTTPS certificate is
loaded, so a bad file stops the driver with a ConfigError naming its key.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from dataclasses import dataclass, replace
from typing import Any

from sparkcat.errors import SparkcatError
from sparkcat.rest.slow_headers import HEADER_TIMEOUT_S, with_timeout
from sparkcat.rest.tls import tls_context
from sparkcat.runtime.control.herder_api import DriverApi
from sparkcat.config.rest import Listener, TlsConfig, check_exposure
from sparkcat.config.worker import WorkerConfig

__all__ = ["RestServer", "preflight", "tls_context"]

log = logging.getLogger("sparkcat.rest")

#: uvicorn's own cap on open connections plus tasks (it answers 503 beyond it); the guard's
#: in-flight limit applies first, so this only bounds idle and rejected connections.
CONNECTIONS_PER_REQUEST_SLOT = 4


def preflight(worker: WorkerConfig) -> None:
    """Everything ``RestServer.start`` would refuse, checked before the driver starts Spark: an exposed
    listener without authentication, unreadable credentials or tokens files, an unusable certificate."""
    from sparkcat.rest.guard import GuardPolicy

    security = worker.rest_security
    check_exposure(security, worker.rest_listeners)
    GuardPolicy.from_config(security)
    if any(listener.scheme == "https" for listener in worker.rest_listeners):
        tls_context(security.tls)


@dataclass
class _Running:
    listener: Listener
    server: Any
    thread: threading.Thread
    sock: socket.socket


class RestServer:
    """``start()`` returns once every listener accepts; ``stop()`` lets requests in flight finish, then ends.

    >>> RestServer(driver=None, listeners=(Listener("http", "127.0.0.1", 0),)).url
    'http://127.0.0.1:0'
    """

    def __init__(self, driver: DriverApi, listeners: tuple[Listener, ...] | None = None, tls: TlsConfig | None = None,
                 header_timeout_s: float = HEADER_TIMEOUT_S):
        self.driver = driver
        self.header_timeout_s = header_timeout_s  # slow_headers: a request head must arrive within it
        self.listeners = list(listeners if listeners is not None else driver.worker.rest_listeners)
        self.tls = tls  # None: the worker config's, read at start()
        self._running: list[_Running] = []

    @property
    def url(self) -> str:
        """The first listener's URL (its bound port once started)."""
        return self.listeners[0].url

    @property
    def port(self) -> int:
        return self.listeners[0].port

    @property
    def urls(self) -> list[str]:
        return [listener.url for listener in self.listeners]

    @staticmethod
    def _bind(listener: Listener) -> socket.socket:
        """Bind here, so a port in use fails ``start()`` with a clear error (port 0: the OS picks one)."""
        where = f"{listener.host}:{listener.port}"
        try:
            family, kind, proto, _, address = socket.getaddrinfo(
                listener.host or None, listener.port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
            sock = socket.socket(family, kind, proto)
        except OSError as e:
            raise SparkcatError(f"REST API cannot listen on {where}: {e}") from e
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(address)
        except OSError as e:
            sock.close()
            raise SparkcatError(f"REST API cannot listen on {where}: {e}") from e
        return sock

    def start(self, timeout_s: float = 30.0) -> None:
        import uvicorn

        from sparkcat.rest.app import create_app

        security = self.driver.worker.rest_security
        check_exposure(security, tuple(self.listeners))
        app = create_app(self.driver)  # reads the credentials files: fails before anything binds
        tls = self.tls if self.tls is not None else security.tls
        context = tls_context(tls) if any(l.scheme == "https" for l in self.listeners) else None
        connections = security.max_concurrent_requests * CONNECTIONS_PER_REQUEST_SLOT + 16
        try:
            for i, listener in enumerate(self.listeners):
                sock = self._bind(listener)
                listener = self.listeners[i] = replace(listener, port=sock.getsockname()[1])
                config = uvicorn.Config(app, log_config=None, lifespan="off", timeout_graceful_shutdown=10,
                                        server_header=False, http=with_timeout(self.header_timeout_s),
                                        limit_concurrency=connections)
                config.load()
                config.ssl = context if listener.scheme == "https" else None
                server = uvicorn.Server(config)
                thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]},
                                          name=f"sparkcat-rest-{listener.scheme}-{listener.port}", daemon=True)
                self._running.append(_Running(listener, server, thread, sock))
                thread.start()
            deadline = time.monotonic() + timeout_s
            for running in self._running:
                while not running.server.started:
                    if not running.thread.is_alive() or time.monotonic() > deadline:
                        raise SparkcatError(f"REST API did not start on {running.listener.url}")
                    time.sleep(0.01)
        except BaseException:
            self.stop()
            raise
        log.info("REST API listening on %s", ", ".join(self.urls))

    def stop(self, timeout_s: float = 15.0) -> None:
        for running in self._running:
            running.server.should_exit = True
        for running in self._running:
            running.thread.join(timeout_s)
            running.sock.close()
        self._running = []
