"""Whether this driver leads its cluster: what the herder and the query runner ask, apart from how it is decided.

``control.membership`` decides it (a Kafka consumer group, or the state directory's lock); execution
only asks (a batch refuses to commit while this driver does not lead, exactly-once writers carry the lease).
"""

from __future__ import annotations

import logging
from typing import Protocol

from sparkcat.kafka.producers import LeaderLease
from sparkcat.storage.log import KeyedLog

log = logging.getLogger(__name__)


class Leadership(Protocol):
    """What the herder asks: is this driver the leader, where is the leader, and a fenced writer on promotion."""

    def is_leader(self) -> bool: ...

    def leader_url(self) -> str | None: ...

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

    def config_writer(self) -> KeyedLog | None:
        return None

    def step_down(self, reason: str) -> None:
        log.error("This driver was fenced (%s) but has no group to step down in", reason)

    def lease(self) -> LeaderLease | None:
        return None  # no group: nothing else can lead

    def lease_key(self) -> str:
        return ""
