"""This driver's role as the herder acts on it: promotion, demotion, and where a write made here goes now.

The group (``runtime.leadership.Leadership``) decides who leads; the herder thread follows it here once per
pass (``follow_group``). A promotion fences the previous leader's config writer and notes the config log's end;
writes are taken here only once the herder has read the log that far, as Kafka Connect's leader reads the config
topic to its end before it handles requests. Until then a write waits (``WriteRoute.waits``), and so it does
while the group elects a leader: a request is queued, not refused, within its own timeout, as Connect's herder
queues requests until it has joined. A driver that knows another leader forwards; it never forwards to itself.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable

from sparkcat.errors import FencedError
from sparkcat.runtime.execution.reconciler import Reconciler
from sparkcat.runtime.leadership import Leadership, WriteRoute
from sparkcat.storage.factory import Stores

log = logging.getLogger(__name__)

ELECTING = "no driver leads the cluster right now (the group is electing one)"
TAKING_UP = "this driver was elected and is taking up the leadership (fencing the previous leader's writer)"
CATCHING_UP = "this driver leads and is reading the config log to its end"
STOPPED_LEADING = ("this driver stopped leading (fenced, or out of contact with the group coordinator) and the group "
                   "names no other leader yet")


class LeaderRole:
    """Whether this driver leads (``leading``, set on the herder thread only) and the route of a write (any thread)."""

    def __init__(self, leadership: Leadership, stores: Stores, reconciler: Reconciler, driver_id: str):
        self.leadership = leadership
        self.stores = stores
        self.reconciler = reconciler
        self.driver_id = driver_id
        self.leading = False  # promoted: the config writer is ours and connectors may run
        self.lead_from = 0    # the config log's end when promoted: writes and connectors once read that far
        self._published: WriteRoute | None = None
        self._changed = threading.Condition()
        self._known = threading.Event()

    # -- the herder thread ---------------------------------------------------------------

    def follow_group(self, start_offset: int) -> None:
        """Promote or demote this driver as the group decided (every pass, before requests run)."""
        leader = self.leadership.is_leader()
        if leader and not self.leading:
            self._promote(start_offset)
        elif not leader and self.leading:
            self.demote("the group gave the leadership to another driver, or the coordinator is out of reach")

    def _promote(self, start_offset: int) -> None:
        """Fence the previous leader's config writer, then lead from the log's end as it is now."""
        began = time.monotonic()
        self.stores.config.use_writer(self.leadership.config_writer())
        fenced = time.monotonic()
        self.lead_from = self.stores.config.last_written_offset() + 1
        self.reconciler.ignore_restarts_before(max(start_offset, self.lead_from))
        self.reconciler.promoted()
        self.leading = True
        log.info("Driver %s is the leader (config log read up to offset %d before connectors run; "
                 "writer fenced in %.2f s, log end in %.2f s)", self.driver_id, self.lead_from - 1,
                 fenced - began, time.monotonic() - fenced)

    def demote(self, reason: str) -> None:
        """Stop every connector this driver runs and become a standby."""
        self.leading = False
        log.warning("Driver %s is a standby now: %s; stopping its connectors", self.driver_id, reason)
        self.stores.config.use_writer(None)
        self.reconciler.release_all(graceful=False)  # nothing of ours can commit now: cancel, do not wait

    def fenced(self, error: FencedError) -> None:
        """A newer leader fenced our config writer: step down in the group and stop leading."""
        if self.leading:
            self.leadership.step_down(error.message)
            self.demote(f"fenced: {error.message}")

    def publish(self, read_to: int) -> WriteRoute:
        """The route after this pass (``read_to``: the next config-log offset the herder will apply); logged when it
        changed, and every request waiting for a route looks at it again."""
        route = self.route(read_to)
        with self._changed:
            changed, self._published = route != self._published, route
            self._changed.notify_all()
        if changed:
            log.info("Writes on driver %s: %s", self.driver_id, route.describe())
        if not route.waits:
            self._known.set()
        return route

    # -- any thread ----------------------------------------------------------------------

    def route(self, read_to: int) -> WriteRoute:
        """Where a write made now goes: here, to the leader, or nowhere yet (with the reason)."""
        if self.leading:
            return WriteRoute.here() if read_to >= self.lead_from else WriteRoute.waiting(CATCHING_UP)
        if self.leadership.is_leader():
            return WriteRoute.waiting(TAKING_UP)
        url = self.leadership.leader_url()
        if url is None:
            return WriteRoute.waiting(ELECTING)
        if url == self.leadership.own_url():  # named before it stepped down: never forwarded to
            return WriteRoute.waiting(STOPPED_LEADING)
        return WriteRoute.to(url)

    def wait_route(self, current: Callable[[], WriteRoute], settled: Callable[[WriteRoute], bool],
                   timeout_s: float) -> WriteRoute:
        """``current()`` once ``settled`` by it, or as it is when ``timeout_s`` ran out; looked at again after every
        herder pass (``publish``)."""
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while True:
                route = current()
                remaining = deadline - time.monotonic()
                if settled(route) or remaining <= 0:
                    return route
                self._changed.wait(remaining)

    def wait_known(self, timeout_s: float) -> bool:
        """True once this driver knows whether it leads: it takes writes, or knows another driver that does."""
        return self._known.wait(timeout_s)
