"""Exactly-once batches written under the driver's ``LeaderLease``, once more after a rebalance of the leader group;
and the leases handed to the JVM exactly-once writer (``publish``).

Every rebalance of the leader group (a driver joins or leaves) gives the leader a new generation, and the
group coordinator refuses a transaction carrying the previous one (``ILLEGAL_GENERATION``). A batch that
met one is written again at once under the new lease, as a replay (its tasks first check what was
committed), instead of failing the query; a driver that no longer holds a lease lets the error stand.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

from sparkcat.kafka.producers import LeaderLease
from sparkcat.spark.query_plan import LeaseSource

__all__ = ["write_under_lease", "lease_refused", "parse_group_metadata", "publish"]

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


# ---------------------------------------------------------------- the JVM writers' leases

_CGMD_MAGIC = b"CGMDv2:"


def parse_group_metadata(data: bytes) -> tuple[str, int, str, str | None]:
    """(group id, generation, member id, group instance id) of librdkafka's serialised group metadata.

    The layout is ``rd_kafka_consumer_group_metadata_write``'s: magic ``CGMDv2:``, the generation as a
    little-endian int32, the group and member ids NUL-terminated, then 1 (no instance id) or 0 and the
    NUL-terminated instance id.

    >>> parse_group_metadata(b"CGMDv2:\\x02\\x00\\x00\\x00g\\x00m-1\\x00\\x01")
    ('g', 2, 'm-1', None)
    >>> parse_group_metadata(b"CGMDv2:\\x03\\x00\\x00\\x00g\\x00i-9\\x00\\x00i\\x00")
    ('g', 3, 'i-9', 'i')
    """
    if not data.startswith(_CGMD_MAGIC) or len(data) < len(_CGMD_MAGIC) + 4:
        raise ValueError(f"not librdkafka's group metadata: {data[:16]!r}")
    rest = data[len(_CGMD_MAGIC):]
    generation = int.from_bytes(rest[:4], "little", signed=True)
    group, member, tail = rest[4:].split(b"\0", 2)
    instance = None if tail[:1] == b"\x01" else tail[1:].split(b"\0", 1)[0].decode()
    return group.decode(), generation, member.decode(), instance


def publish(spark: Any, key: str, lease: LeaderLease | None) -> None:
    """Hand the driver JVM's writers (``org.sparkcat.kafka.eos.Leases``) the current lease under ``key``, or
    take it away: a JVM exactly-once writer then refuses to plan a batch (this driver does not lead)."""
    registry = spark.sparkContext._jvm.org.sparkcat.kafka.eos.Leases
    if lease is None:
        registry.remove(key)
        return
    group, generation, member, instance = parse_group_metadata(lease.group_metadata)
    registry.put(key, spark.sparkContext._jvm.org.sparkcat.kafka.eos.Lease(group, generation, member, instance,
                                                                            lease.topic))
