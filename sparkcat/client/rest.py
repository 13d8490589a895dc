"""A small client of the driver's Kafka Connect REST API, on the standard library only.

One method per route the CLI uses; each returns the decoded JSON body (None for an
empty one). A 4xx/5xx answer raises ``ApiError`` with the server's ``message``; a
driver that cannot be reached raises ``UnreachableError``.

>>> RestClient("http://127.0.0.1:8083/").url
'http://127.0.0.1:8083'
>>> resolve_url("http://h:1", None, {}) , resolve_url(None, None, {"SPARKCAT_URL": "http://e:2"})
('http://h:1', 'http://e:2')
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sparkcat.errors import SparkcatError

DEFAULT_URL = "http://127.0.0.1:8083"
DEFAULT_WORKER_CONFIG = "conf/worker.yaml"


class ApiError(SparkcatError):
    """The server answered with an error; ``message`` is the server's own."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.http_status = status


class UnreachableError(SparkcatError):
    """No answer from the REST API (refused, unknown host, timeout)."""


def resolve_url(explicit: str | None, worker_config: str | None, env: Mapping[str, str] = os.environ) -> str:
    """``--url``, else ``$SPARKCAT_URL``, else rest.host/rest.port of the worker config, else the default."""
    if explicit:
        return explicit
    if env.get("SPARKCAT_URL"):
        return env["SPARKCAT_URL"]
    path = worker_config_path(worker_config)
    if path is None:
        return DEFAULT_URL
    from sparkcat.runtime.worker_config import load_worker_config

    worker = load_worker_config(path)
    host = worker.rest_host if worker.rest_host not in ("", "0.0.0.0", "::") else "127.0.0.1"
    return f"http://{host}:{worker.rest_port}"


def worker_config_path(explicit: str | None) -> str | None:
    """``--worker-config``, else ``conf/worker.yaml`` when it exists (as the driver reads it)."""
    if explicit:
        return explicit
    return DEFAULT_WORKER_CONFIG if Path(DEFAULT_WORKER_CONFIG).exists() else None


class RestClient:
    """Calls one driver's REST API at ``url``; ``timeout_s`` bounds each request."""

    def __init__(self, url: str, timeout_s: float = 120.0):
        self.url = url.rstrip("/")
        self.timeout_s = timeout_s

    def request(self, method: str, path: str, body: Any = None, params: list[tuple[str, str]] | None = None) -> Any:
        """One call; the decoded JSON answer, or None when it has no body."""
        url = self.url + path + (f"?{urllib.parse.urlencode(params)}" if params else "")
        data = None if body is None else json.dumps(body).encode()
        headers = {"Accept": "application/json"} | ({"Content-Type": "application/json"} if data else {})
        req = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as response:
                return _decode(response.read())
        except urllib.error.HTTPError as e:
            raise ApiError(e.code, _error_message(e)) from None
        except urllib.error.URLError as e:
            raise UnreachableError(f"cannot reach sparkcat REST API at {self.url}: {e.reason}") from None
        except (TimeoutError, ConnectionError) as e:
            raise UnreachableError(f"cannot reach sparkcat REST API at {self.url}: {e}") from None

    # -- connectors ---------------------------------------------------------------------------

    def connectors(self, *expand: str) -> Any:
        """``GET /connectors``: names, or with ``expand`` ("status", "info") a map of details."""
        return self.request("GET", "/connectors", params=[("expand", e) for e in expand])

    def connector(self, name: str) -> dict[str, Any]:
        return self.request("GET", _path(name))

    def config(self, name: str) -> dict[str, str]:
        return self.request("GET", _path(name, "config"))

    def put_config(self, name: str, config: dict[str, str]) -> dict[str, Any]:
        """Create or reconfigure (Connect's PUT, which has no initial state)."""
        return self.request("PUT", _path(name, "config"), config)

    def create(self, name: str, config: dict[str, str], initial_state: str | None = None) -> dict[str, Any]:
        """``POST /connectors`` (409 when it exists); ``initial_state`` RUNNING, PAUSED or STOPPED."""
        body: dict[str, Any] = {"name": name, "config": config}
        if initial_state:
            body["initial_state"] = initial_state
        return self.request("POST", "/connectors", body)

    def status(self, name: str) -> dict[str, Any]:
        return self.request("GET", _path(name, "status"))

    def restart(self, name: str, include_tasks: bool = False, only_failed: bool = False) -> dict[str, Any] | None:
        """None when only the connector restarts (204); else the plan showing what is RESTARTING."""
        params = [("includeTasks", _flag(include_tasks)), ("onlyFailed", _flag(only_failed))]
        return self.request("POST", _path(name, "restart"), params=params)

    def pause(self, name: str) -> None:
        self.request("PUT", _path(name, "pause"))

    def resume(self, name: str) -> None:
        self.request("PUT", _path(name, "resume"))

    def stop(self, name: str) -> None:
        self.request("PUT", _path(name, "stop"))

    def delete(self, name: str) -> None:
        self.request("DELETE", _path(name))

    # -- offsets ------------------------------------------------------------------------------

    def offsets(self, name: str) -> dict[str, Any]:
        return self.request("GET", _path(name, "offsets"))

    def alter_offsets(self, name: str, offsets: list[dict[str, Any]]) -> dict[str, Any]:
        """``PATCH`` offsets of a STOPPED connector; an entry's ``offset`` None resets that partition."""
        return self.request("PATCH", _path(name, "offsets"), {"offsets": offsets})

    def reset_offsets(self, name: str) -> dict[str, Any]:
        return self.request("DELETE", _path(name, "offsets"))

    # -- plugins ------------------------------------------------------------------------------

    def plugins(self) -> list[dict[str, Any]]:
        return self.request("GET", "/connector-plugins")

    def plugin_config(self, plugin: str) -> list[dict[str, Any]]:
        """``GET /connector-plugins/PLUGIN/config``: the plugin's key definitions (name, type, ...)."""
        return self.request("GET", f"/connector-plugins/{_quote(plugin)}/config")

    def validate(self, plugin: str, config: dict[str, str]) -> dict[str, Any]:
        """``PUT /connector-plugins/PLUGIN/config/validate``: every error, per key."""
        return self.request("PUT", f"/connector-plugins/{_quote(plugin)}/config/validate", config)


def _quote(part: str) -> str:
    return urllib.parse.quote(part, safe="")


def _path(name: str, *rest: str) -> str:
    return "/".join(["/connectors", _quote(name), *rest])


def _flag(value: bool) -> str:
    return "true" if value else "false"


def _decode(raw: bytes) -> Any:
    return json.loads(raw) if raw.strip() else None


def _error_message(error: urllib.error.HTTPError) -> str:
    """The ``message`` of Connect's error body, else the body's text, else the HTTP reason."""
    raw = error.read()
    try:
        body = json.loads(raw)
    except ValueError:
        return raw.decode(errors="replace").strip() or f"HTTP {error.code} {error.reason}"
    if isinstance(body, dict) and body.get("message"):
        return str(body["message"])
    return f"HTTP {error.code} {error.reason}"
