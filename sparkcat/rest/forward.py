"""Forwarding writes from a standby driver to the leader, as Kafka Connect's followers do.

A standby serves every read itself (it follows the config log). A write (``POST``, ``PUT``,
``PATCH``, ``DELETE``; ``/admin/loggers`` excepted, whose levels belong to each driver) is made
again, with the same method, path, query, body and ``Authorization`` header, at the leader's URL
that the group reports, and the leader's answer is passed back as it came. The forwarded request
carries ``forward=false``: a driver that gets it and is not the leader either answers 409, as
Connect does, instead of forwarding again.
"""

from __future__ import annotations

import logging
from typing import Any, Callable
from urllib.parse import parse_qsl, urlencode

import httpx
from starlette.types import Receive, Scope, Send

from sparkcat.rest.errors import error_response
from sparkcat.runtime.control.herder_api import DriverApi, HerderApi

log = logging.getLogger("sparkcat.rest")

WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
#: Connect's answer when a forwarded request reaches a driver that is not the leader either.
CONFLICT = "Cannot complete request because of a conflicting operation (e.g. worker rebalance)"
NO_LEADER = "Cannot complete request: no driver leads the cluster right now (the group is electing one)"
#: Headers passed on to the leader; hop-by-hop and Host are the forwarding client's own.
PASSED_HEADERS = ("authorization", "content-type", "accept", "x-request-id")
TIMEOUT_S = 90.0  # above the herder's 60 s request timeout, so the leader's own answer comes back


class ForwardToLeader:
    """ASGI middleware: writes reaching a standby go to the leader; everything else passes through."""

    def __init__(self, app: Callable, driver: DriverApi):
        self.app = app
        self.driver = driver

    def _standby(self) -> HerderApi | None:
        """The herder when this driver is a ready standby, else None (the leader, or still starting)."""
        herder = self.driver.herder
        if herder is None or not herder.ready or herder.is_leader:
            return None
        return herder

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        herder = self._standby() if scope["type"] == "http" else None
        if herder is None or scope["method"] not in WRITES or scope["path"].startswith("/admin"):
            await self.app(scope, receive, send)
            return
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        leader = herder.leader_url
        if any(k == "forward" and v.lower() == "false" for k, v in query):
            response = error_response(409, CONFLICT)
        elif leader is None:
            response = error_response(409, NO_LEADER)
        else:
            response = await self._forward(scope, receive, leader, query)
        await response(scope, receive, send)

    async def _forward(self, scope: Scope, receive: Receive, leader: str, query: list[tuple[str, str]]) -> Any:
        from starlette.responses import Response

        body = await _read_body(receive)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        passed = {k: v for k, v in headers.items() if k in PASSED_HEADERS}
        url = leader.rstrip("/") + scope["path"] + "?" + urlencode([*query, ("forward", "false")])
        try:
            async with httpx.AsyncClient(timeout=TIMEOUT_S) as client:
                answer = await client.request(scope["method"], url, content=body, headers=passed)
        except httpx.HTTPError as e:
            log.warning("Forwarding %s %s to the leader %s failed: %s", scope["method"], scope["path"], leader, e)
            return error_response(409, f"{CONFLICT}: the leader at {leader} did not answer ({type(e).__name__})")
        log.info("Forwarded %s %s to the leader %s: %d", scope["method"], scope["path"], leader, answer.status_code)
        kept = {k: v for k, v in answer.headers.items() if k.lower() in ("content-type", "location")}
        return Response(answer.content, status_code=answer.status_code, headers=kept)


async def _read_body(receive: Receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)
