"""Who is in a consumer group and which partitions each member holds, as the group's coordinator says.

The coordinator is asked with the DescribeGroups request that librdkafka's ``list_groups`` sends, not with
the AdminClient's ``describe_consumer_groups``. Every coordinator-targeted admin request of librdkafka 2.x
(DescribeConsumerGroups, ListConsumerGroupOffsets, AlterConsumerGroupOffsets, ...) can abort the process with
``rd_kafka_enq_once_del_source_return: Assertion 'eonce->refcnt > 0' failed``: when the request cannot be
sent on the coordinator's connection (it dropped, as when a network cut heals and every hung connection is
closed at once), its error path frees the request's enq-once object that the coordinator lookup still uses
(confluentinc/librdkafka issue 4605, open; the fix, pull request 5397, is not in 2.16). A core of a driver
aborted this way in ``test_split_brain.py`` showed the abort in ``rd_kafka_admin_coord_response_parse``
while the membership thread waited on ``describe_consumer_groups``. ``list_groups`` answers on a queue of
its own that it drops on timeout; a late answer is discarded, and no enq-once object is involved.

``list_groups`` gives each member's assignment in the consumer protocol's bytes, decoded here.
"""

from __future__ import annotations

import logging
import struct
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class GroupMember:
    """One member of a consumer group: its member id, ``client.id`` and assigned (topic, partition)s."""

    member_id: str
    client_id: str
    partitions: tuple[tuple[str, int], ...]

    def holds(self, topic: str, partition: int) -> bool:
        return (topic, partition) in self.partitions


def group_members(client: Any, group: str, timeout_s: float) -> list[GroupMember] | None:
    """The members of ``group`` as its coordinator describes them, or None when it does not answer in time.

    ``client``: any confluent-kafka client (an AdminClient here). A group the coordinator does not know has
    no members.
    """
    try:
        described = client.list_groups(group, timeout=timeout_s)
    except Exception as e:  # noqa: BLE001 - KafkaException (a timeout, a partial answer): asked again later
        log.debug("Describing group %s failed: %s", group, e)
        return None
    for g in described:
        if g.id != group:
            continue
        if g.error is not None:
            log.debug("Describing group %s failed: %s", group, g.error)
            return None
        return [GroupMember(str(m.id), str(m.client_id), assigned_partitions(m.assignment)) for m in g.members]
    return []


def assigned_partitions(assignment: bytes | None) -> tuple[tuple[str, int], ...]:
    """Decode a consumer protocol assignment: int16 version, then an array of (topic string, int32 partitions
    array), then user data, which is not read. Empty bytes (a member still joining) assign nothing.

    >>> assigned_partitions(bytes.fromhex("0000" "00000001" "0001" "74" "00000002" "00000000" "00000003" "ffffffff"))
    (('t', 0), ('t', 3))
    """
    if not assignment:
        return ()
    out: list[tuple[str, int]] = []
    pos = 2  # the version: every version starts with the same topic array
    (topics,), pos = struct.unpack_from(">i", assignment, pos), pos + 4
    for _ in range(max(topics, 0)):
        (length,), pos = struct.unpack_from(">h", assignment, pos), pos + 2
        topic, pos = assignment[pos:pos + length].decode(), pos + length
        (count,), pos = struct.unpack_from(">i", assignment, pos), pos + 4
        out.extend((topic, p) for p in struct.unpack_from(f">{max(count, 0)}i", assignment, pos))
        pos += 4 * max(count, 0)
    return tuple(out)
