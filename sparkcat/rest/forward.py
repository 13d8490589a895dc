"""Writes go where the herder's route says (``HerderApi.write_route``), as Kafka Connect's workers do with theirs.

A write (``POST``, ``PUT``, ``PATCH``, ``DELETE``; ``/admin/loggers`` excepted, whose levels belong to each driver)
runs here when this driver leads. On a standby it is made again, with the same method, path, query, body and
``Authorization`` header, at the leader's URL that the group reports, and the leader's answer is passed back as it
came. While no driver takes writes (the group is electing a leader, or this driver was elected and is taking up the
leadership) the request waits for one, at most the herder's request timeout, instead of failing: a deployment
script's first write after a start or a failover succeeds. A leader that cannot be reached (killed, its session not
yet expired) is a wait too: the write goes wherever the route points next. A driver never forwards to itself.

The forwarded request carries ``forward=false``: a driver that gets it and knows another leader answers 409, as
Connect does, instead of forwarding again.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Callable
from urllib.parse import parse_qsl, urlencode

import anyio
import httpx
from starlette.types import Message, Receive, Scope, Send

from sparkcat.rest.errors import error_response
from sparkcat.runtime.control.herder_api import REQUEST_TIMEOUT_S, DriverApi, HerderApi
from sparkcat.runtime.leadership import Route, WriteRoute

log = logging.getLogger("sparkcat.rest")

WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
#: Connect's answer when a forwarded request reaches a driver that is not the leader either.
CONFLICT = "Cannot complete request because of a conflicting operation (e.g. worker rebalance)"
#: Headers passed on to the leader; hop-by-hop and Host are the forwarding client's own.
PASSED_HEADERS = ("authorization", "content-type", "accept", "x-request-id")
TIMEOUT_S = 90.0  # above the herder's 60 s request timeout, so the leader's own answer comes back
#: The request never reached the leader: safe to send again, to whichever driver leads next.
NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout)


class ForwardToLeader:
    """ASGI middleware: a write runs here, goes to the leader, or waits for one; everything else passes through."""

    def __init__(self, app: Callable, driver: DriverApi, wait_s: float = REQUEST_TIMEOUT_S):
        """``wait_s``: how long a write waits for a driver that takes it (the group electing, a leader unreachable)."""
        self.app = app
        self.driver = driver
        self.wait_s = wait_s
        self._client_tls: Any = None  # the ssl context for https leaders, made on the first forward to one

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        herder = self.driver.herder
        if (herder is None or scope["type"] != "http" or scope["method"] not in WRITES
                or scope["path"].startswith("/admin")):
            await self.app(scope, receive, send)  # a driver still starting answers 503 itself
            return
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        forwarded = any(k == "forward" and v.lower() == "false" for k, v in query)
        deadline = time.monotonic() + self.wait_s
        body: bytes | None = None
        unreachable: str | None = None  # a leader the request could not be sent to
        while True:
            route = await _settled_route(herder, deadline, unreachable)
            if route.route is Route.LOCAL:
                await self.app(scope, receive if body is None else _replay(body, receive), send)
                return
            if not _settled(route, unreachable):  # the deadline passed
                response = self._no_driver(route, unreachable)
            elif forwarded:
                response = error_response(409, CONFLICT)
            else:
                if body is None:
                    body = await _read_body(receive)
                response = await self._forward(scope, body, route.leader_url, query, deadline)
                if response is None:
                    unreachable = route.leader_url
                    continue
            await response(scope, receive, send)
            return

    def _verify(self, leader: str) -> Any:
        """For an https leader, the worker's TLS as Connect's RestClient uses it: the truststore checks the leader,
        the keystore is this driver's client certificate (a listener with ssl.client.auth=required wants one)."""
        if not leader.lower().startswith("https://"):
            return True
        if self._client_tls is None:
            from sparkcat.rest.tls import client_context

            self._client_tls = client_context(self.driver.worker.rest_security.tls)
        return self._client_tls

    def _no_driver(self, route: WriteRoute, unreachable: str | None) -> Any:
        if not route.waits:  # still the leader the request could not be sent to
            return error_response(409, f"{CONFLICT}: the leader at {unreachable} could not be reached within "
                                       f"{self.wait_s:g} s")
        return error_response(409, f"Cannot complete request: {route.reason} (waited {self.wait_s:g} s)")

    async def _forward(self, scope: Scope, body: bytes, leader: str, query: list[tuple[str, str]],
                       deadline: float) -> Any:
        """The leader's answer, or None when the request could not be sent to it (it may be dead)."""
        from starlette.responses import Response

        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        passed = {k: v for k, v in headers.items() if k in PASSED_HEADERS}
        url = leader.rstrip("/") + scope["path"] + "?" + urlencode([*query, ("forward", "false")])
        connect_s = max(1.0, deadline - time.monotonic())
        try:
            async with httpx.AsyncClient(timeout=httpx.Timeout(TIMEOUT_S, connect=connect_s),
                                         verify=self._verify(leader)) as client:
                answer = await client.request(scope["method"], url, content=body, headers=passed)
        except NOT_SENT as e:
            tls = _tls_failure(e)
            if tls is not None:  # the leader answers, and will not pass the check the next time either
                log.warning("Forwarding %s %s to the leader %s failed: TLS: %s", scope["method"], scope["path"],
                            leader, tls)
                return error_response(500, f"IO Error trying to forward REST request: TLS with the leader at "
                                           f"{leader} failed: {tls}")
            log.info("Could not reach the leader %s with %s %s (%s); waiting for the group", leader, scope["method"],
                     scope["path"], type(e).__name__)
            return None
        except httpx.HTTPError as e:
            log.warning("Forwarding %s %s to the leader %s failed: %s", scope["method"], scope["path"], leader, e)
            return error_response(409, f"{CONFLICT}: the leader at {leader} did not answer ({type(e).__name__})")
        log.info("Forwarded %s %s to the leader %s: %d", scope["method"], scope["path"], leader, answer.status_code)
        kept = {k: v for k, v in answer.headers.items() if k.lower() in ("content-type", "location")}
        return Response(answer.content, status_code=answer.status_code, headers=kept)


def _tls_failure(error: BaseException) -> str | None:
    """The TLS reason behind a connection error (a certificate or host name the leader fails), else None."""
    import ssl
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, ssl.SSLError):
            return str(getattr(seen, "verify_message", "") or seen)
        seen = seen.__cause__ or seen.__context__
    return None


def _settled(route: WriteRoute, unreachable: str | None) -> bool:
    """Whether a write can go where ``route`` says: here, or to a leader other than ``unreachable``."""
    return not route.waits and not (route.route is Route.FORWARD and route.leader_url == unreachable)


async def _settled_route(herder: HerderApi, deadline: float, unreachable: str | None) -> WriteRoute:
    """The herder's route once settled (``_settled``), or as it is at ``deadline``; the wait is off the event loop."""
    route = herder.write_route()
    if _settled(route, unreachable):
        return route
    return await anyio.to_thread.run_sync(herder.wait_route, lambda r: _settled(r, unreachable),
                                          max(0.0, deadline - time.monotonic()))


async def _read_body(receive: Receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that hands the application the body already read (a forward that did not reach the leader),
    then the client's own messages (its disconnect)."""
    pending = True

    async def replayed() -> Message:
        nonlocal pending
        if pending:
            pending = False
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed
