"""A shared group's "is its query running": asked of Spark once per ``ALIVE_CACHE_S``, not once per member."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from sparkcat.spark.driver import shared_queries
from sparkcat.spark.driver.shared_queries import SharedGroup


class CountingQuery:
    """A StreamingQuery's ``isActive`` that counts how often Spark would be asked."""

    def __init__(self) -> None:
        self.active, self.asked = True, 0

    @property
    def isActive(self) -> bool:  # noqa: N802 - StreamingQuery's name
        self.asked += 1
        return self.active


class Group(SharedGroup):
    def _write_rows(self, df: Any, batch_id: int, members: list[Any]) -> list[Any]:
        return []


def group(query: CountingQuery) -> Group:
    planners = SimpleNamespace(remove=lambda planner_id: None)
    jvm = SimpleNamespace(org=SimpleNamespace(sparkcat=SimpleNamespace(source=SimpleNamespace(Planners=planners))))
    spark = SimpleNamespace(sparkContext=SimpleNamespace(defaultParallelism=2, _jvm=jvm))
    g = Group(SimpleNamespace(spark=spark), "g", "/tmp/unused", 1000)
    g.query = query
    return g


@pytest.fixture
def now(monkeypatch) -> list[float]:
    """The groups' clock, moved by hand: ``now[0]``."""
    clock = [100.0]
    monkeypatch.setattr(shared_queries.time, "monotonic", lambda: clock[0])
    return clock


def test_every_member_asking_at_one_tick_costs_one_question_to_spark():
    q = CountingQuery()
    g = group(q)
    assert all(g.alive() for _ in range(200))
    assert q.asked == 1


def test_a_query_that_has_not_planned_yet_is_asked_about_at_least_every_second(now):
    q = CountingQuery()
    g = group(q)
    assert g.alive()
    q.active = False  # e.g. its checkpoint could not be read: the stream ended before its source planned
    now[0] += shared_queries.STARTING_ALIVE_CACHE_S + 0.01
    assert not g.alive()


def test_a_planning_query_that_ends_is_seen_as_its_stream_stops_then_never_asked_again(now):
    q = CountingQuery()
    g = group(q)
    g.planner.triggers = 1  # it planned: a stream that ends from now on stops its source first
    assert g.alive()
    now[0] += shared_queries.STARTING_ALIVE_CACHE_S + 0.01
    assert g.alive() and q.asked == 1  # the long cache: no question at each tick
    g.planner_stopped()  # Spark's stopSources, before the query's state is TERMINATED
    assert g.alive() and q.asked == 2  # asked afresh: still active a moment
    q.active = False
    assert not g.alive() and q.asked == 3
    assert not g.alive() and q.asked == 3  # an ended query stays ended


def test_a_query_that_ended_is_seen_within_the_cache_time(now):
    q = CountingQuery()
    g = group(q)
    assert g.alive()
    q.active = False
    assert g.alive()  # still the answer of a moment ago
    now[0] += shared_queries.ALIVE_CACHE_S + 0.01
    assert not g.alive()


def test_joining_asks_spark_afresh():
    q = CountingQuery()
    g = group(q)
    assert g.alive()
    q.active = False
    assert not g.alive(fresh=True)
