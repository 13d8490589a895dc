"""Whether this driver leads its cluster: what the herder and the query runner ask, apart from how it is decided.

``control.membership`` decides it (a Kafka consumer group, or the state directory's lock); execution
only asks (a batch refuses to commit while this driver does not lead, exactly-once writers carry the lease).
``WriteRoute`` is what a write made on this driver does now (REST reads it to forward or wait).
"""

from __future__ import annotations

import enum
import logging
from dataclasses import dataclass
from typing import Protocol

from sparkcat.kafka.producers import LeaderLease
from sparkcat.storage.log import KeyedLog

log = logging.getLogger(__name__)


class Route(enum.Enum):
    LOCAL = "local"      # this driver leads, and has read the config log: the write runs here
    FORWARD = "forward"  # another driver leads: the write goes to its URL
    WAIT = "wait"        # nobody takes writes yet (the group is electing, or this driver is taking up the leadership)


@dataclass(frozen=True)
class WriteRoute:
    """What a write made on this driver does now: runs here, goes to ``leader_url``, or waits (``reason`` says why).

    >>> WriteRoute.waiting("the group is electing one").waits, WriteRoute.to("http://b:8083").leader_url
    (True, 'http://b:8083')
    """

    route: Route
    leader_url: str | None = None
    reason: str = ""

    @classmethod
    def here(cls) -> WriteRoute:
        return cls(Route.LOCAL)

    @classmethod
    def to(cls, leader_url: str) -> WriteRoute:
        return cls(Route.FORWARD, leader_url)

    @classmethod
    def waiting(cls, reason: str) -> WriteRoute:
        return cls(Route.WAIT, reason=reason)

    @property
    def waits(self) -> bool:
        return self.route is Route.WAIT

    def describe(self) -> str:
        """One line for the log: ``taken here``, ``forwarded to URL``, ``waiting: reason``."""
        if self.route is Route.LOCAL:
            return "taken here (this driver leads)"
        if self.route is Route.FORWARD:
            return f"forwarded to the leader {self.leader_url}"
        return f"waiting: {self.reason}"


class Leadership(Protocol):
    """What the herder asks: is this driver the leader, where is the leader, and a fenced writer on promotion."""

    def is_leader(self) -> bool: ...

    def leader_url(self) -> str | None: ...

    def own_url(self) -> str | None:
        """This driver's REST URL as the group knows it (a leader URL equal to it is never forwarded to)."""
        ...

    def config_writer(self) -> KeyedLog | None: ...

    def step_down(self, reason: str) -> None: ...

    def lease(self) -> LeaderLease | None: ...

    def lease_key(self) -> str: ...


class SoleLeader:
    """One driver on its own stores (local stores, unit tests): always the leader, writes through the stores."""

    def __init__(self, url: str | None = None):
        self.url = url

    def is_leader(self) -> bool:
        return True

    def leader_url(self) -> str | None:
        return self.url

    def own_url(self) -> str | None:
        return self.url

    def config_writer(self) -> KeyedLog | None:
        return None

    def step_down(self, reason: str) -> None:
        log.error("This driver was fenced (%s) but has no group to step down in", reason)

    def lease(self) -> LeaderLease | None:
        return None  # no group: nothing else can lead

    def lease_key(self) -> str:
        return ""
