"""What every request passes before a handler runs: request id, Host check, authentication, limits.

``RequestGuard`` is one ASGI middleware, outermost in the app, so a rejected request
never reaches a handler (nothing is read from or written to the herder), and so that
an unexpected exception becomes a 500 whose body names only a request id while the
traceback goes to the log under that id. In order:

1. request id: the client's ``X-Request-Id`` when it is short and plain, else a new one;
   every response carries it.
2. Host header: a name not allowed (``rest.allowed.hosts``) gets 400, which defeats DNS
   rebinding (a web page whose name was pointed at 127.0.0.1). IP addresses are always
   allowed: rebinding needs a name. A browser's ``Origin`` other than this server's own
   gets 403 (a page elsewhere posting to 127.0.0.1); clients that are not browsers send none.
3. authentication, when a credentials or tokens file is set: 401 with Connect's error
   body and a ``WWW-Authenticate`` challenge. Every path is protected, /health too, as
   Connect's ``BasicAuthSecurityRestExtension`` does (it exempts only the internal
   task-config request between workers, which sparkcat has no use for).
4. body size (``rest.max.request.bytes``): 413 from Content-Length before the body is
   read, or while reading a chunked body.
5. requests in flight (``rest.max.concurrent.requests``): 503 with ``Retry-After``
   rather than queueing for the handler thread pool; GET /health is not counted, so a
   health probe still answers while slow requests hold every slot.
"""

from __future__ import annotations

import ipaddress
import logging
import re
import socket
import threading
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from sparkcat.rest.credentials import PasswordFile, TokenFile, basic_credentials, bearer_token
from sparkcat.config.rest import LOOPBACK_NAMES, RestSecurityConfig

log = logging.getLogger("sparkcat.rest")

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

REALM = "KafkaConnect"  # Connect's extension hard-codes this JAAS realm name
UNAUTHORIZED = "User cannot access the resource."  # Connect's 401 text
REQUEST_ID_HEADER = "X-Request-Id"
_CLIENT_REQUEST_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")
#: How much of a rejected request's body is read and dropped, so the client sees the answer
#: instead of a reset connection while it is still sending.
DRAIN_LIMIT_BYTES = 64 * 1024 * 1024
#: Handler threads beyond the in-flight limit (sync dependencies, the exempt health probe).
THREAD_HEADROOM = 8


@dataclass(frozen=True)
class GuardPolicy:
    """The checks of ``RequestGuard``, with the secrets files already read."""

    passwords: PasswordFile | None = None
    tokens: TokenFile | None = None
    allowed_hosts: frozenset[str] = frozenset(LOOPBACK_NAMES)
    max_request_bytes: int = 1024 * 1024
    max_concurrent_requests: int = 32

    @classmethod
    def from_config(cls, config: RestSecurityConfig, listener_hosts: tuple[str, ...] = ()) -> GuardPolicy:
        """Reads the credentials and tokens files (a ConfigError names the key when one cannot be used)."""
        passwords = PasswordFile.load(config.basic_credentials_file) if config.basic_credentials_file else None
        tokens = TokenFile.load(config.bearer_tokens_file) if config.bearer_tokens_file else None
        names = {*LOOPBACK_NAMES, socket.gethostname(), socket.getfqdn(), *listener_hosts, *config.allowed_hosts}
        return cls(passwords, tokens, frozenset(_host_name(_strip_port(n)) for n in names if n),
                   config.max_request_bytes, config.max_concurrent_requests)

    @property
    def authenticates(self) -> bool:
        return self.passwords is not None or self.tokens is not None

    def host_allowed(self, host_header: str | None) -> bool:
        """True for a missing Host (HTTP/1.0; no browser sends that), an IP address, or an allowed name.

        >>> GuardPolicy().host_allowed("localhost:8083"), GuardPolicy().host_allowed("[::1]:1")
        (True, True)
        >>> GuardPolicy().host_allowed("10.1.2.3"), GuardPolicy().host_allowed("evil.example:8083")
        (True, False)
        """
        if not host_header:
            return True
        if "*" in self.allowed_hosts:
            return True
        name = _host_name(_strip_port(host_header))
        try:
            ipaddress.ip_address(name)
            return True
        except ValueError:
            return name in self.allowed_hosts

    def origin_allowed(self, origin: str | None, host: str | None, scheme: str) -> bool:
        """True without ``Origin`` (not a browser) or when it is this server's own origin (``/docs``).

        A page on another site can send a browser's "simple" POST (no preflight) to
        127.0.0.1, e.g. a restart; the Host check cannot see that, its Origin can.

        >>> GuardPolicy().origin_allowed("http://127.0.0.1:8083", "127.0.0.1:8083", "http")
        True
        >>> GuardPolicy().origin_allowed("https://evil.example", "127.0.0.1:8083", "http")
        False
        >>> GuardPolicy().origin_allowed("https://c.example", "c.example:443", "https")
        True
        """
        if origin is None or "*" in self.allowed_hosts:
            return True
        origin_scheme, sep, origin_host = origin.strip().lower().partition("://")
        if not sep or not host:
            return False
        return origin_scheme == scheme and _default_port(origin_host, scheme) == _default_port(host.lower(), scheme)

    def principal(self, authorization: str | None) -> str | None:
        """Who ``authorization`` proves to be (a user, or a token's label); None when it proves nothing."""
        if not authorization:
            return None
        if self.passwords is not None:
            credentials = basic_credentials(authorization)
            if credentials is not None:
                return self.passwords.check(*credentials)
        if self.tokens is not None:
            token = bearer_token(authorization)
            if token is not None:
                label = self.tokens.check(token)
                return None if label is None else f"token:{label}"
        return None

    def challenges(self) -> list[str]:
        """``WWW-Authenticate`` values for a 401: one per scheme that is on."""
        out = []
        if self.passwords is not None:
            out.append(f'Basic realm="{REALM}", charset="UTF-8"')
        if self.tokens is not None:
            out.append(f'Bearer realm="{REALM}"')
        return out


def _strip_port(host: str) -> str:
    """The name or address of a Host header; a malformed bracketed value is returned whole (and refused)."""
    host = host.strip()
    if host.startswith("["):
        address, bracket, rest = host[1:].partition("]")
        well_formed = bracket and (not rest or (rest[0] == ":" and rest[1:].isdigit()))
        return address if well_formed else host
    name, colon, port = host.rpartition(":")
    return name if colon and port.isdigit() and ":" not in name else host


def _default_port(netloc: str, scheme: str) -> str:
    """``host:port`` with the scheme's default port made explicit, so ``h`` equals ``h:443`` over https."""
    netloc = netloc.strip().rstrip("/")
    bare = _strip_port(netloc)
    if bare == netloc or (netloc.startswith("[") and netloc.endswith("]")):
        return f"{netloc}:{443 if scheme == 'https' else 80}"
    return netloc


def _host_name(host: str) -> str:
    return host.strip().strip("[]").lower().rstrip(".")


class InFlight:
    """A count of requests being handled, shared by every listener's event loop (hence a lock)."""

    def __init__(self, limit: int):
        self.limit = limit
        self._count = 0
        self._lock = threading.Lock()

    def acquire(self) -> bool:
        with self._lock:
            if self._count >= self.limit:
                return False
            self._count += 1
            return True

    def release(self) -> None:
        with self._lock:
            self._count -= 1


class BodyTooLarge(StarletteHTTPException):
    """Raised while reading a body past the limit; FastAPI passes HTTP exceptions through to our handler."""

    def __init__(self, limit: int):
        super().__init__(413, f"Request body is larger than the limit of {limit} bytes (rest.max.request.bytes)")


def _raw_path(scope: Scope) -> str:
    """The path as sent (percent-encoded), so a logged path cannot start a forged log line."""
    raw = scope.get("raw_path") or scope["path"].encode("utf-8", "replace")
    return raw.decode("latin-1")


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error_code": status, "message": message}, status_code=status, headers=headers)


class RequestGuard:
    """ASGI middleware applying ``GuardPolicy`` to every HTTP request (see the module docstring)."""

    def __init__(self, app: Callable, policy: GuardPolicy):
        self.app = app
        self.policy = policy
        self.in_flight = InFlight(policy.max_concurrent_requests)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        given = headers.get(REQUEST_ID_HEADER.lower(), "")
        request_id = given if _CLIENT_REQUEST_ID.fullmatch(given) else uuid.uuid4().hex[:16]
        scope.setdefault("state", {})["request_id"] = request_id
        started = False

        async def send_with_id(message: dict[str, Any]) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                message = {**message, "headers": [*message.get("headers", []),
                                                  (b"x-request-id", request_id.encode())]}
            await send(message)

        rejection = self._reject(scope, headers)
        if rejection is not None:
            await _drain(receive, headers)
            await rejection(scope, receive, send_with_id)
            return
        exempt = scope["method"] == "GET" and scope["path"] == "/health"
        if not exempt and not self.in_flight.acquire():
            await _drain(receive, headers)
            await _error(503, "Too many requests in flight (rest.max.concurrent.requests); retry shortly",
                         {"Retry-After": "1"})(scope, receive, send_with_id)
            return
        self._size_thread_pool()
        if scope["method"] not in ("GET", "HEAD", "OPTIONS"):  # who changed what, without secrets
            log.info("%s %s by %s (request id %s)", scope["method"], _raw_path(scope),
                     scope["state"].get("principal", "anonymous"), request_id)
        try:
            await self.app(scope, self._limited(receive), send_with_id)
        except Exception as exc:  # noqa: BLE001 - the one place unexpected faults become a 500
            if isinstance(exc, BodyTooLarge) and not started:
                await _error(413, exc.detail)(scope, receive, send_with_id)
                return
            log.error("Internal server error (request id %s) on %s %s", request_id, scope["method"],
                      _raw_path(scope), exc_info=exc)
            if not started:
                await _error(500, f"Internal server error (request id {request_id})")(scope, receive, send_with_id)
        finally:
            if not exempt:
                self.in_flight.release()

    def _reject(self, scope: Scope, headers: dict[str, str]) -> JSONResponse | None:
        """The answer for a request that must not reach a handler, or None."""
        policy = self.policy
        if not policy.host_allowed(headers.get("host")):
            return _error(400, "Invalid Host header: this name is not in rest.allowed.hosts")
        if not policy.origin_allowed(headers.get("origin"), headers.get("host"), scope.get("scheme", "http")):
            return _error(403, "Cross-origin requests are not accepted")
        if policy.authenticates:
            principal = policy.principal(headers.get("authorization"))
            if principal is None:
                log.debug("Request %s %s failed authentication", scope["method"], _raw_path(scope))
                response = _error(401, UNAUTHORIZED)
                for challenge in policy.challenges():
                    response.headers.append("WWW-Authenticate", challenge)
                return response
            scope["state"]["principal"] = principal
        length = headers.get("content-length", "")
        if length.isdigit() and int(length) > policy.max_request_bytes:
            return _error(413, BodyTooLarge(policy.max_request_bytes).detail)
        return None

    def _limited(self, receive: Receive) -> Receive:
        """``receive`` that raises ``BodyTooLarge`` once more than the limit has arrived (chunked bodies)."""
        limit = self.policy.max_request_bytes
        seen = 0

        async def limited() -> dict[str, Any]:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise BodyTooLarge(limit)
            return message

        return limited

    def _size_thread_pool(self) -> None:
        """Handler threads for every admitted request, so admitted requests never queue for a thread."""
        from anyio.to_thread import current_default_thread_limiter

        limiter = current_default_thread_limiter()
        wanted = self.policy.max_concurrent_requests + THREAD_HEADROOM
        if limiter.total_tokens < wanted:
            limiter.total_tokens = wanted


async def _drain(receive: Receive, headers: dict[str, str]) -> None:
    """Read and drop a rejected request's body (up to ``DRAIN_LIMIT_BYTES``) so the client reads our answer."""
    if not headers.get("content-length", "").strip("0") and "chunked" not in headers.get("transfer-encoding", ""):
        return
    dropped = 0
    while dropped <= DRAIN_LIMIT_BYTES:
        message = await receive()
        if message["type"] != "http.request":
            return
        dropped += len(message.get("body", b""))
        if not message.get("more_body", False):
            return
