"""A sink's positions reach its consumer group ``connect-NAME`` as ``kafka-consumer-groups`` would show them, and
the group refuses them while another consumer is a member of it, as it refused them through the AdminClient.

The commits go through a consumer of the group that never joins it (``sparkcat.kafka.sink_groups``): these are
the user-visible answers the AdminClient's AlterConsumerGroupOffsets gave before, which that change must keep.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer

from sparkcat.kafka.sink_groups import COMMITTERS, commit_positions, committed_positions
from sparkcat.runtime.execution.sink_groups import replace
from tests.kafka_helpers import create_topic, produce, wait_until

pytestmark = pytest.mark.integration


def test_positions_committed_to_the_group_are_read_back_and_refused_while_it_has_a_member(broker, unique_name):
    topic, group = f"{unique_name}-in", f"connect-{unique_name}"
    create_topic(broker.bootstrap, topic, partitions=2)
    produce(broker.bootstrap, topic, [b"r"] * 20, partition=0)
    produce(broker.bootstrap, topic, [b"r"] * 20, partition=1)
    conf = {"bootstrap.servers": broker.bootstrap}
    partitions = [(topic, 0), (topic, 1)]
    try:
        _commits_and_refusals(conf, topic, group, partitions)
    finally:
        COMMITTERS.drop(group)  # its consumer would reconnect to the broker after the session ends


def _commits_and_refusals(conf: dict, topic: str, group: str, partitions: list[tuple[str, int]]) -> None:
    commit_positions(conf, group, [(topic, 0, 7), (topic, 1, 3)])
    assert committed_positions(conf, group, partitions) == [(topic, 0, 7), (topic, 1, 3)]
    commit_positions(conf, group, [(topic, 0, 12)])  # a later batch moves one partition on
    assert committed_positions(conf, group, partitions) == [(topic, 0, 12), (topic, 1, 3)]

    member = Consumer({**conf, "group.id": group, "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    member.subscribe([topic])
    try:
        wait_until(lambda: member.poll(0.5) is not None and bool(member.assignment()), timeout_s=60,
                   message="a live member of the group (a Connect worker running the connector)")
        with pytest.raises(RuntimeError, match=rf"committing {topic}-0 to group {group}: .*UNKNOWN_MEMBER_ID"):
            commit_positions(conf, group, [(topic, 0, 15)], timeout_s=5)
        with pytest.raises(Exception, match="NON_EMPTY_GROUP"):  # the offsets API's alter: the group is in use
            replace(conf["bootstrap.servers"], {}, group[len("connect-"):], {}, [])
    finally:
        member.close()
    assert committed_positions(conf, group, partitions)[0] == (topic, 0, 12)  # the refused commit changed nothing

    COMMITTERS.drop(group)  # the connector deleted: a later commit (a new connector of that name) starts afresh
    commit_positions(conf, group, [(topic, 0, 20), (topic, 1, 20)])
    assert committed_positions(conf, group, partitions) == [(topic, 0, 20), (topic, 1, 20)]
    # the offsets API's alter of a stopped sink: the group then holds exactly the altered positions
    replace(conf["bootstrap.servers"], {}, group[len("connect-"):], {},
            [({"kafka_topic": topic, "kafka_partition": 1}, {"kafka_offset": 5})])
    assert committed_positions(conf, group, partitions) == [(topic, 1, 5)]


def test_an_idle_groups_committer_is_closed_and_its_next_commit_still_lands(broker, unique_name):
    topic, group = f"{unique_name}-in", f"connect-{unique_name}"
    create_topic(broker.bootstrap, topic, partitions=1)
    conf = {"bootstrap.servers": broker.bootstrap}
    try:
        commit_positions(conf, group, [(topic, 0, 4)])
        busy = f"connect-{unique_name}-busy"
        commit_positions(conf, busy, [(topic, 0, 1)])
        assert COMMITTERS.close_idle(idle_s=3600) == 0  # used just now: kept
        assert COMMITTERS.close_idle(idle_s=0) >= 2      # unused since: closed, their threads gone
        commit_positions(conf, group, [(topic, 0, 9)])   # the sink's next batch after a quiet spell
        assert committed_positions(conf, group, [(topic, 0)]) == [(topic, 0, 9)]
    finally:
        COMMITTERS.drop(group)
        COMMITTERS.drop(f"connect-{unique_name}-busy")


def test_an_idle_sinks_committer_closes_while_another_sink_commits_every_batch(broker, unique_name):
    from sparkcat.runtime.execution.sink_groups import GroupMirror
    from sparkcat.spark.query_plan import QueryPlan
    topic = f"{unique_name}-in"
    create_topic(broker.bootstrap, topic, partitions=1)

    def plan(name: str) -> QueryPlan:
        return QueryPlan(connector=name, connector_type="sink", connector_class="x", task_class="y",
                         connector_config={"topics": topic}, task_configs=[{}], checkpoint_dir="/ck",
                         bootstrap_servers=broker.bootstrap)
    busy, idle = plan(f"{unique_name}-busy"), plan(f"{unique_name}-idle")
    position = ({"kafka_topic": topic, "kafka_partition": 0}, {"kafka_offset": 1})
    mirror = GroupMirror(sweep_s=0.5, idle_close_s=2.0)  # the driver's: every 30 s, after 60 s unused
    try:
        mirror.submit(idle, [position])
        wait_until(lambda: f"connect-{idle.connector}" in COMMITTERS.open_groups(), timeout_s=30,
                   message="the idle sink's first commit")
        deadline = time.monotonic() + 30
        while f"connect-{idle.connector}" in COMMITTERS.open_groups():  # the busy sink keeps the mirror awake
            assert time.monotonic() < deadline, "the idle sink's committer was never closed"
            mirror.submit(busy, [position])
            time.sleep(0.2)
        assert f"connect-{busy.connector}" in COMMITTERS.open_groups()
        assert committed_positions({"bootstrap.servers": broker.bootstrap}, f"connect-{idle.connector}",
                                   [(topic, 0)]) == [(topic, 0, 1)]
    finally:
        mirror.close()
        COMMITTERS.drop(f"connect-{busy.connector}")
        COMMITTERS.drop(f"connect-{idle.connector}")
