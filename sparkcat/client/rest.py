"""A small client of the driver's Kafka Connect REST API, on the standard library only.

One method per route the CLI uses; each returns the decoded JSON body (None for an
empty one). A 4xx/5xx answer raises ``ApiError`` with the server's ``message``; a
driver that cannot be reached raises ``UnreachableError``. ``Credentials`` add HTTP
Basic or bearer authentication; HTTPS certificates are verified against the system CAs
or ``cafile``, and only ``insecure=True`` turns verification off.

>>> RestClient("http://127.0.0.1:8083/").url
'http://127.0.0.1:8083'
>>> resolve_url("http://h:1", None, {}) , resolve_url(None, None, {"SPARKCAT_URL": "http://e:2"})
('http://h:1', 'http://e:2')
"""

from __future__ import annotations

import base64
import getpass
import json
import os
import ssl
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sparkcat.errors import ConfigError, SparkcatError

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
    from sparkcat.config.worker import load_worker_config

    return load_worker_config(path, resolve_placeholders=False).rest_listeners[0].url


@dataclass(frozen=True)
class Credentials:
    """How the client proves who it is: the ``Authorization`` header value (never shown in repr)."""

    authorization: str = field(default="", repr=False)
    source: str = ""

    @classmethod
    def basic(cls, user_password: str, source: str) -> Credentials:
        """``user:password`` (curl's ``--user``); without ``:`` the password is asked on the terminal."""
        user, colon, password = user_password.partition(":")
        if not user:
            raise ConfigError(f"{source}: expected USER:PASSWORD")
        if not colon:
            password = getpass.getpass(f"password for {user}: ")
        token = base64.b64encode(f"{user}:{password}".encode()).decode()
        return cls(f"Basic {token}", source)

    @classmethod
    def bearer(cls, token: str, source: str) -> Credentials:
        if not token.strip():
            raise ConfigError(f"{source}: the token is empty")
        return cls(f"Bearer {token.strip()}", source)


def resolve_credentials(user: str | None, token: str | None, worker_config: str | None,
                        env: Mapping[str, str] = os.environ, *, url_from_worker: bool = True) -> Credentials | None:
    """``--token``/``--user``, else ``$SPARKCAT_TOKEN``/``$SPARKCAT_USER``, else the first entry of the worker
    config's tokens or credentials file when this user can read it (an operator on the driver's machine);
    else None (no authentication).

    The worker's own secrets are used only when the URL also came from the worker config
    (``url_from_worker``), so ``--url`` to another host never carries this driver's password.
    """
    if user and token:
        raise ConfigError("--user and --token cannot be used together")
    if token:
        return Credentials.bearer(token, "--token")
    if user:
        return Credentials.basic(user, "--user")
    if env.get("SPARKCAT_TOKEN"):
        return Credentials.bearer(env["SPARKCAT_TOKEN"], "SPARKCAT_TOKEN")
    if env.get("SPARKCAT_USER"):
        return Credentials.basic(env["SPARKCAT_USER"], "SPARKCAT_USER")
    path = worker_config_path(worker_config)
    if path is None or not url_from_worker:
        return None
    from sparkcat.rest.credentials import parse_properties
    from sparkcat.config.worker import load_worker_config

    security = load_worker_config(path, resolve_placeholders=False).rest_security
    for file, make in ((security.bearer_tokens_file, lambda k, v, s: Credentials.bearer(v, s)),
                       (security.basic_credentials_file, lambda k, v, s: Credentials.basic(f"{k}:{v}", s))):
        if not file:
            continue
        try:
            entries = parse_properties(Path(file).expanduser().read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            continue
        for name, secret in entries.items():
            return make(name, secret, f"{file} (from {path})")
    return None


def tls_context(cafile: str | None = None, insecure: bool = False, certfile: str | None = None,
                keyfile: str | None = None) -> ssl.SSLContext:
    """Verification against the system CAs, or ``cafile`` (PEM); ``insecure`` skips it (explicitly).

    ``certfile`` (PEM, with its key unless ``keyfile``) is the client certificate a listener with
    ``listeners.https.ssl.client.auth`` asks for.
    """
    if insecure:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    else:
        try:
            context = ssl.create_default_context(cafile=cafile)
        except (OSError, ssl.SSLError) as e:
            raise ConfigError(f"--cacert {cafile}: cannot load CA certificates: {e}") from None
    if certfile:
        try:
            context.load_cert_chain(certfile, keyfile or None)
        except (OSError, ssl.SSLError) as e:
            raise ConfigError(f"--cert {certfile}: cannot load the client certificate and key: {e}") from None
    return context


def worker_config_path(explicit: str | None) -> str | None:
    """``--worker-config``, else ``conf/worker.yaml`` when it exists (as the driver reads it)."""
    if explicit:
        return explicit
    return DEFAULT_WORKER_CONFIG if Path(DEFAULT_WORKER_CONFIG).exists() else None


class RestClient:
    """Calls one driver's REST API at ``url``; ``timeout_s`` bounds each request."""

    def __init__(self, url: str, timeout_s: float = 120.0, credentials: Credentials | None = None,
                 cafile: str | None = None, insecure: bool = False, certfile: str | None = None,
                 keyfile: str | None = None):
        self.url = url.rstrip("/")
        self.certfile, self.keyfile = certfile, keyfile
        self.timeout_s = timeout_s
        self.credentials = credentials
        self.cafile = cafile
        self.insecure = insecure
        self._context: ssl.SSLContext | None = None

    @property
    def context(self) -> ssl.SSLContext | None:
        """TLS for an https URL, built on first use (loading the CAs costs ~0.1 s a command); None for http."""
        if self._context is None and self.url.lower().startswith("https://"):
            self._context = tls_context(self.cafile, self.insecure, self.certfile, self.keyfile)
        return self._context

    def request(self, method: str, path: str, body: Any = None, params: list[tuple[str, str]] | None = None) -> Any:
        """One call; the decoded JSON answer, or None when it has no body."""
        url = self.url + path + (f"?{urllib.parse.urlencode(params)}" if params else "")
        data = None if body is None else json.dumps(body).encode()
        headers = {"Accept": "application/json"} | ({"Content-Type": "application/json"} if data else {})
        if self.credentials is not None:
            headers["Authorization"] = self.credentials.authorization
        req = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s, context=self.context) as response:
                return _decode(response.read())
        except urllib.error.HTTPError as e:
            raise ApiError(e.code, _error_message(e)) from None
        except urllib.error.URLError as e:
            hint = " (trust the server's CA with --cacert FILE)" \
                if isinstance(e.reason, ssl.SSLCertVerificationError) else ""
            if isinstance(e.reason, ssl.SSLError) and "CERTIFICATE_REQUIRED" in str(e.reason):
                hint = self._certificate_hint()
            raise UnreachableError(f"cannot reach sparkcat REST API at {self.url}: {e.reason}{hint}") from None
        except (TimeoutError, ConnectionError) as e:
            hint = self._certificate_hint() if isinstance(e, ConnectionError) else ""
            raise UnreachableError(f"cannot reach sparkcat REST API at {self.url}: {e}{hint}") from None

    def _certificate_hint(self) -> str:
        """A TLS 1.3 server that wants a client certificate closes the connection after the handshake."""
        if self.context is None or self.certfile:
            return ""
        return " (if the server requires a client certificate: --cert FILE [--key FILE])"

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
