"""The leader group's join rounds as Connect's connect-worker-rebalance-metrics: what a round is, its timings."""

from __future__ import annotations

import math

from sparkcat.runtime.control.rebalances import RebalanceLog


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_before_any_round_nothing_completed_and_the_time_since_is_infinite_as_in_connect():
    v = RebalanceLog(clock=Clock()).view(None)
    assert (v.epoch, v.rebalancing, v.completed_total) == (None, False, 0)
    assert math.isnan(v.avg_time_ms) and math.isnan(v.max_time_ms) and v.time_since_last_ms == math.inf


def test_a_round_runs_from_revoke_to_assignment_and_its_generation_is_the_epoch():
    clock = Clock()
    log = RebalanceLog(clock=clock)
    log.started()  # the first join
    clock.now += 0.4
    assert log.view("http://a").rebalancing
    log.completed(1)
    clock.now += 2.0
    log.started()  # a driver joined: every member revokes
    clock.now += 0.1
    log.started()  # a second revoke in the same round keeps the round's start
    clock.now += 0.1
    log.completed(2)
    clock.now += 1.0
    v = log.view("http://a")
    assert (v.leader_name, v.epoch, v.rebalancing, v.completed_total) == ("http://a", 2, False, 2)
    assert math.isclose(v.max_time_ms, 400.0) and math.isclose(v.avg_time_ms, 300.0)
    assert math.isclose(v.time_since_last_ms, 1000.0)


def test_avg_and_max_cover_only_the_rounds_of_the_last_window_as_connect_s_windowed_stats():
    clock = Clock()
    log = RebalanceLog(window_s=30.0, clock=clock)
    log.started()
    clock.now += 1.0
    log.completed(5)
    clock.now += 31.0
    v = log.view(None)
    assert v.completed_total == 1 and math.isnan(v.avg_time_ms) and math.isnan(v.max_time_ms)
    assert v.epoch == 5  # the generation stays until the next round


def test_an_unknown_generation_keeps_the_last_known_epoch():
    log = RebalanceLog(clock=Clock())
    log.completed(3)
    log.completed(None)
    assert log.view(None).epoch == 3 and log.view(None).completed_total == 2
