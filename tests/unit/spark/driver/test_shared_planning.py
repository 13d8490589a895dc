"""The shared planner's pace: a round per interval, and an idle trigger held until something moves."""

from __future__ import annotations

import json
import threading
import time

from sparkcat.spark.driver.shared_planning import GroupPlanner
from tests.unit.spark.driver.test_shared_sources import FakeGroup, FakeReader, member

EMPTY = json.dumps({"connectors": {}})


class IdleReader(FakeReader):
    """A member with no new record until ``arrive`` is set."""

    def __init__(self, stored: int) -> None:
        super().__init__(stored)
        self.arrive = threading.Event()

    def latestOffset(self, start, limit):
        return {"offsets": {"p": start["offsets"]["p"] + 1}} if self.arrive.is_set() else start


def idle_planner(interval_s: float, hold_s: float) -> tuple[GroupPlanner, IdleReader, str]:
    """A planner of one idle member, already pinned at its stored offsets; and the start Spark would hold."""
    group = FakeGroup()
    reader = IdleReader(stored=3)
    group._members.append(member("a", reader))
    planner = GroupPlanner(group, interval_s=interval_s, hold_s=hold_s)
    return planner, reader, planner.latestOffset(EMPTY, -1)  # the pinning round answers at once


def test_an_idle_trigger_goes_on_asking_at_the_interval_and_answers_unchanged_after_the_hold():
    planner, _, start = idle_planner(interval_s=0.05, hold_s=0.5)
    rounds, began = planner.rounds, time.monotonic()
    assert planner.latestOffset(start, -1) == start
    took = time.monotonic() - began
    assert 0.5 <= took < 2.0
    assert 6 <= planner.rounds - rounds <= 12  # one round per interval, not a busy loop


def test_a_record_arriving_during_a_hold_is_answered_at_the_next_round():
    planner, reader, start = idle_planner(interval_s=0.05, hold_s=30.0)
    threading.Timer(0.3, reader.arrive.set).start()
    began = time.monotonic()
    end = planner.latestOffset(start, -1)
    assert time.monotonic() - began < 2.0
    assert json.loads(end) == {"connectors": {"a": {"offsets": {"p": 4}}}}
    assert planner.pending == {"a"}


def test_release_answers_a_held_trigger_at_once_and_every_later_one_without_waiting():
    planner, _, start = idle_planner(interval_s=5.0, hold_s=30.0)
    threading.Timer(0.2, planner.release).start()
    began = time.monotonic()
    assert planner.latestOffset(start, -1) == start
    assert planner.latestOffset(start, -1) == start
    assert time.monotonic() - began < 2.0


def test_rounds_that_find_records_keep_the_interval_between_them():
    planner, reader, start = idle_planner(interval_s=0.2, hold_s=30.0)
    reader.arrive.set()
    began = time.monotonic()
    for _ in range(4):
        start = planner.latestOffset(start, -1)  # Spark asks again at once after each batch (trigger 0)
    assert time.monotonic() - began >= 0.6  # the first at once (the pinning round was an interval ago, at most)
    assert json.loads(start)["connectors"]["a"] == {"offsets": {"p": 7}}


class CountingReader(IdleReader):
    def __init__(self, stored: int) -> None:
        super().__init__(stored)
        self.asked = 0

    def latestOffset(self, start, limit):
        self.asked += 1
        return super().latestOffset(start, limit)


def test_members_are_not_asked_again_within_a_trigger_while_their_group_says_nothing_changed():
    group = FakeGroup()
    changed = threading.Event()
    group.before_round = lambda members: changed.is_set()
    reader = CountingReader(stored=3)
    group._members.append(member("a", reader))
    planner = GroupPlanner(group, interval_s=0.02, hold_s=0.3)
    start = planner.latestOffset(EMPTY, -1)  # pinned: the first round of a trigger always asks
    assert planner.latestOffset(start, -1) == start
    assert reader.asked == 1 and planner.rounds > 5  # asked once in that trigger, then answered as before
    reader.arrive.set()
    changed.set()
    assert json.loads(planner.latestOffset(start, -1))["connectors"]["a"] == {"offsets": {"p": 4}}
