"""Serves the REST API with uvicorn from a daemon thread of the driver."""

from __future__ import annotations

import logging
import socket
import threading
import time
from typing import Any

from sparkcat.errors import SparkcatError

log = logging.getLogger("sparkcat.rest")


class RestServer:
    """``start()`` returns once the port is listening; ``stop()`` lets requests in flight finish, then ends.

    >>> RestServer(driver=None, host="127.0.0.1", port=0).port
    0
    """

    def __init__(self, driver: Any, host: str, port: int):
        self.driver = driver
        self.host = host
        self.port = port
        self._server = None
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None

    @property
    def url(self) -> str:
        host = self.host if self.host not in ("0.0.0.0", "::", "") else "127.0.0.1"
        return f"http://{host}:{self.port}"

    def _bind(self) -> socket.socket:
        """Bind here, so a port in use fails ``start()`` with a clear error (port 0: the OS picks one)."""
        try:
            family, kind, proto, _, address = socket.getaddrinfo(
                self.host or None, self.port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
            sock = socket.socket(family, kind, proto)
        except OSError as e:
            raise SparkcatError(f"REST API cannot listen on {self.host}:{self.port}: {e}") from e
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(address)
        except OSError as e:
            sock.close()
            raise SparkcatError(f"REST API cannot listen on {self.host}:{self.port}: {e}") from e
        self.port = sock.getsockname()[1]
        return sock

    def start(self, timeout_s: float = 30.0) -> None:
        import uvicorn

        from sparkcat.rest.app import create_app

        self._socket = self._bind()
        config = uvicorn.Config(create_app(self.driver), log_config=None, lifespan="off",
                                timeout_graceful_shutdown=10)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._socket]},
                                        name="sparkcat-rest", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise SparkcatError(f"REST API did not start on {self.host}:{self.port}")
            time.sleep(0.01)
        log.info("REST API listening on %s", self.url)

    def stop(self, timeout_s: float = 15.0) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout_s)
            self._thread = None
        if self._socket is not None:
            self._socket.close()
            self._socket = None
        self._server = None
