"""A deadline for a request's headers: a client that opens a connection and sends its headers slowly (or never)
cannot hold one of the REST API's connection slots for ever (a "slowloris").

uvicorn closes idle keep-alive connections but sets no deadline while a request's headers arrive. This
protocol starts one when a connection opens and again after each response, and closes the connection when
no complete request head has come by then. Jetty, under Kafka Connect's REST API, bounds the same wait with
its idle timeout (30 s).
"""

from __future__ import annotations

import asyncio
import logging

from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger("sparkcat.rest")

#: Seconds a client has to send a complete request head, from connecting or from the previous response.
HEADER_TIMEOUT_S = 15.0


class HeaderDeadlineProtocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline for each request's head (``header_timeout_s``)."""

    header_timeout_s = HEADER_TIMEOUT_S

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()

    def handle_events(self) -> None:
        super().handle_events()
        if self.cycle is not self._timed_cycle:  # a complete request head arrived: a new cycle began
            self._disarm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        self._timed_cycle = self.cycle
        self._deadline = self.loop.call_later(self.header_timeout_s, self._too_slow)

    def _disarm(self) -> None:
        deadline, self._deadline = getattr(self, "_deadline", None), None
        if deadline is not None:
            deadline.cancel()

    def _too_slow(self) -> None:
        self._deadline = None
        if not self.transport.is_closing():
            peer = "%s:%d" % self.client if self.client else "a client"
            log.warning("REST API: closing the connection of %s: no complete request head within %.0f s", peer,
                        self.header_timeout_s)
            self.transport.close()


def with_timeout(seconds: float) -> type[HeaderDeadlineProtocol]:
    """The protocol class with another deadline (tests use a short one)."""
    return type("HeaderDeadlineProtocol", (HeaderDeadlineProtocol,), {"header_timeout_s": seconds})
