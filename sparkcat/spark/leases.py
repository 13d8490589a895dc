"""Exactly-once batches written under the driver's ``LeaderLease``, once more after a rebalance of the leader group.

Every rebalance of the leader group (a driver joins or leaves) gives the leader a new generation, and the
group coordinator refuses a transaction carrying the previous one (``ILLEGAL_GENERATION``). A batch that
met one is written again at once under the new lease, as a replay (its tasks first check what was
committed), instead of failing the query; a driver that no longer holds a lease lets the error stand.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from sparkcat.kafka.producers import LeaderLease
from sparkcat.spark.plan import LeaseSource

__all__ = ["write_under_lease", "lease_refused"]

log = logging.getLogger(__name__)

T = TypeVar("T")
#: What the group coordinator answers a transaction whose lease is not the group's current one.
REFUSALS = ("ILLEGAL_GENERATION", "UNKNOWN_MEMBER_ID", "FENCED_INSTANCE_ID")


def lease_refused(error: BaseException) -> bool:
    """Whether ``error`` (an executor's, as the driver sees it) is the coordinator refusing a lease.

    >>> lease_refused(RuntimeError("KafkaError{code=ILLEGAL_GENERATION,val=22}")), lease_refused(ValueError("x"))
    (True, False)
    """
    text = str(error)
    return any(code in text for code in REFUSALS)


def write_under_lease(lease: LeaseSource, write: Callable[[LeaderLease | None, bool], T], replay: bool,
                      connector: str, batch_id: int) -> T:
    """``write(lease, replay)`` with the current lease; again under a renewed one when a rebalance refused it."""
    held = lease()
    try:
        return write(held, replay)
    except Exception as e:
        renewed = lease()
        if not lease_refused(e) or renewed is None or renewed == held:
            raise
        log.info("Connector %s: batch %d met a rebalance of the leader group; writing it again under the new "
                 "generation", connector, batch_id)
        return write(renewed, True)
