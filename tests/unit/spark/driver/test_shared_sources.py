"""The shared query's planner: which members plan ranges, and from where (pure planning logic, fake readers)."""

from __future__ import annotations

import base64
import json
import pickle
import threading
from collections import deque
from dataclasses import dataclass, field

from sparkcat.spark.driver.shared_planning import GroupPlanner, Member
from sparkcat.spark.driver.shared_queries import own_query_reason
from sparkcat.spark.driver.shared_sources import group_key
from sparkcat.spark.executor.shared_source import MemberWrite
from sparkcat.spark.query_plan import QueryPlan


def plan(name: str, **kw) -> QueryPlan:
    base = dict(connector=name, connector_type="source", connector_class="m:C", task_class="m:T",
                connector_config={}, task_configs=[{}], checkpoint_dir=f"/ck/{name}")
    return QueryPlan(**{**base, **kw})


class FakeReader:
    """A member's planner: stored offset ``stored``, one record more at every call; ``partitions`` lists ranges."""

    def __init__(self, stored: int, fail: bool = False) -> None:
        self.stored, self.fail, self.stopped = stored, fail, False

    def initialOffset(self):
        return {"offsets": {"p": self.stored}}

    def latestOffset(self, start, limit):
        if self.fail:
            raise ValueError("the task's latest_offsets failed")
        return {"offsets": {"p": start["offsets"]["p"] + 1}}

    def reportLatestOffset(self):
        return None

    def partitions(self, start, end):
        return [("range", start["offsets"]["p"], end["offsets"]["p"])]

    def stop(self):
        self.stopped = True


@dataclass
class FakeRunning:
    gate: threading.Lock = field(default_factory=threading.Lock)
    stopping: bool = False


class FakeGroup:
    def __init__(self, slots: int = 4) -> None:
        self.lock = threading.RLock()
        self._members: list[Member] = []
        self.slots = slots

    def members(self):
        return list(self._members)

    def fail(self, member, trace):
        member.error = trace
        self._members.remove(member)

    def before_round(self, members):
        return True  # a source group asks its members at every round


def member(name: str, reader: FakeReader) -> Member:
    p = plan(name)
    return Member(p, FakeRunning(), reader, MemberWrite(p, {}, None), deque(maxlen=8))


def test_a_joining_member_is_pinned_at_its_stored_offsets_before_it_plans_any_range():
    group = FakeGroup()
    planner = GroupPlanner(group)
    a = member("a", FakeReader(stored=5))
    group._members.append(a)
    stale = json.dumps({"connectors": {"a": {"offsets": {"p": 2}}}})  # a's place in the checkpoint of an old run
    end = planner.latestOffset(stale, -1)
    assert json.loads(end) == {"connectors": {"a": {"offsets": {"p": 5}}}}
    assert planner.pending == set()
    assert json.loads(planner.planPartitions(stale, end)) == []  # nothing from the stale 2 to 5: no replay
    nxt = planner.latestOffset(end, -1)
    assert planner.pending == {"a"}
    parts = json.loads(planner.planPartitions(end, nxt))
    assert len(parts) == 1


def test_a_batch_replayed_after_a_restart_plans_nothing_for_anyone():
    group = FakeGroup()
    planner = GroupPlanner(group)
    group._members.append(member("a", FakeReader(stored=7)))
    start = json.dumps({"connectors": {"a": {"offsets": {"p": 7}}}})
    end = json.dumps({"connectors": {"a": {"offsets": {"p": 9}}}})
    assert json.loads(planner.planPartitions(start, end)) == []


def test_a_member_whose_planning_fails_leaves_and_the_others_plan_on():
    group = FakeGroup()
    planner = GroupPlanner(group)
    bad, good = member("bad", FakeReader(stored=0, fail=True)), member("good", FakeReader(stored=0))
    group._members += [bad, good]
    first = planner.latestOffset(json.dumps({"connectors": {}}), -1)
    second = planner.latestOffset(first, -1)
    assert "the task's latest_offsets failed" in bad.error
    assert planner.pending == {"good"} and list(json.loads(second)["connectors"]) == ["good"]


def test_only_python_sources_to_kafka_share_a_query_one_per_guarantee_and_trigger():
    assert own_query_reason(plan("s")) is None
    assert own_query_reason(plan("j", java_host={"jars": []})) == "a Java connector"
    assert own_query_reason(plan("f", sink_class="file-sink")) is not None
    assert own_query_reason(plan("t", connector_config={"transforms": "mask"})) == "has transforms"
    assert group_key(plan("a", exactly_once=True)) != group_key(plan("b"))
    assert group_key(plan("a", trigger_interval_ms=500)) != group_key(plan("b"))
    assert group_key(plan("a")) == group_key(plan("b"))


def test_a_batch_s_tasks_are_dealt_over_the_group_s_slots_not_one_spark_partition_each():
    group = FakeGroup(slots=2)
    planner = GroupPlanner(group)
    group._members += [member(n, FakeReader(stored=0)) for n in "abcde"]
    first = planner.latestOffset(json.dumps({"connectors": {}}), -1)
    second = planner.latestOffset(first, -1)
    partitions = json.loads(planner.planPartitions(first, second))
    dealt = [[r for r in pickle.loads(base64.b64decode(payload))] for _, payload in partitions]
    assert [i for i, _ in partitions] == [0, 1]
    assert dealt == [[("range", 0, 1)] * 3, [("range", 0, 1)] * 2]
