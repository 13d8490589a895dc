"""The group description the leader election reads (sparkcat.kafka.group_members): members and their partitions."""

from __future__ import annotations

import struct
from types import SimpleNamespace

from confluent_kafka import KafkaError, KafkaException

from sparkcat.kafka.group_members import GroupMember, assigned_partitions, group_members


def assignment(topics: dict[str, list[int]], version: int = 3) -> bytes:
    """A consumer protocol assignment as a Java or librdkafka member sends it (user data: a null)."""
    out = struct.pack(">hi", version, len(topics))
    for topic, partitions in topics.items():
        name = topic.encode()
        out += struct.pack(">h", len(name)) + name + struct.pack(f">i{len(partitions)}i", len(partitions), *partitions)
    return out + struct.pack(">i", -1)


class Client:
    def __init__(self, answer):
        self.answer, self.asked = answer, []

    def list_groups(self, group, timeout):
        self.asked.append((group, timeout))
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def described(group: str, *members, error=None):
    return SimpleNamespace(id=group, error=error, members=[
        SimpleNamespace(id=m, client_id=c, assignment=a) for m, c, a in members])


def test_assignments_of_every_version_decode_to_their_topic_partitions():
    raw = assignment({"configs": [0], "other": [2, 5]}, version=0)
    assert assigned_partitions(raw) == (("configs", 0), ("other", 2), ("other", 5))
    assert assigned_partitions(assignment({"configs": [0]}, version=3)) == (("configs", 0),)
    assert assigned_partitions(b"") == () and assigned_partitions(None) == ()


def test_the_members_of_the_group_asked_for_with_what_each_holds():
    client = Client([described("g", ("m-1", "0001@http://a", assignment({"configs": [0]})),
                               ("m-2", "0002@http://b", b""))])
    members = group_members(client, "g", 2.0)
    assert client.asked == [("g", 2.0)]
    assert members == [GroupMember("m-1", "0001@http://a", (("configs", 0),)), GroupMember("m-2", "0002@http://b", ())]
    assert members[0].holds("configs", 0) and not members[1].holds("configs", 0)


def test_no_answer_is_none_and_an_unknown_group_has_no_members():
    timed_out = KafkaException(KafkaError(KafkaError._TIMED_OUT))
    assert group_members(Client(timed_out), "g", 1.0) is None
    assert group_members(Client([described("g", error=KafkaError(KafkaError.COORDINATOR_NOT_AVAILABLE))]), "g", 1.0) \
        is None
    assert group_members(Client([described("other", ("m", "c", b""))]), "g", 1.0) == []
