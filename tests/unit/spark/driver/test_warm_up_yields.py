"""A leader's warm-up gives way to starting connectors (pure logic: the steps are stand-ins that record calls)."""

from __future__ import annotations

import threading

import pytest

from sparkcat.runtime.execution.query_runner import FirstBatches
from sparkcat.spark.driver import warm_up as warm


@pytest.fixture
def steps(monkeypatch):
    """Each step records (name, whether busy() held when it began) and can be told to turn ``busy`` on."""
    calls: list[tuple[str, bool]] = []
    state = {"busy": False, "busy_during": set()}

    def run(spark, places, step, stopping):
        calls.append((step, state["busy"]))
        if step in state["busy_during"]:
            state["busy_during"].discard(step)
            state["busy"] = True  # a connector starts while this step runs: the step's query ends early
            threading.Timer(0.3, lambda: state.update(busy=False)).start()  # its first batch is done later
            stopping()  # the step's query polls and ends
        return True
    monkeypatch.setattr(warm, "_run_step", run)
    return calls, state


PLACES = warm.WarmUpPlaces("q", "/ck", "/scratch")


def test_no_step_starts_while_a_connector_waits_for_its_first_batch(steps):
    calls, state = steps
    state["busy"] = True
    threading.Timer(0.3, lambda: state.update(busy=False)).start()
    took = warm.warm_up(None, PLACES, ("python_workers", "delta"), busy=lambda: state["busy"])
    assert calls == [("python_workers", False), ("delta", False)]
    assert set(took) == {"python_workers", "delta"}


def test_a_step_a_connector_started_during_runs_again_after_it(steps):
    calls, state = steps
    state["busy_during"] = {"kafka_stream"}
    took = warm.warm_up(None, PLACES, ("kafka_stream", "delta"), busy=lambda: state["busy"])
    assert [c for c, _ in calls] == ["kafka_stream", "kafka_stream", "delta"]
    assert all(not busy for _, busy in calls)
    assert set(took) == {"kafka_stream", "delta"}


def test_a_driver_stopping_ends_the_wait(steps):
    calls, state = steps
    state["busy"] = True
    stop = threading.Event()
    threading.Timer(0.3, stop.set).start()
    assert warm.warm_up(None, PLACES, ("delta",), stopping=stop.is_set, busy=lambda: state["busy"]) == {}
    assert calls == []


def test_first_batches_wait_until_heard_or_bounded(monkeypatch):
    first = FirstBatches()
    assert not first.waiting()
    first.started("a")
    first.started("b")
    first.heard("a")
    assert first.waiting()
    first.heard("b")
    assert not first.waiting()
    monkeypatch.setattr(FirstBatches, "BOUND_S", 0.0)  # a connector with nothing to read reports no batch
    first.started("idle")
    assert not first.waiting()


def test_a_step_that_gave_way_three_times_then_runs_whatever_happens(monkeypatch):
    calls: list[bool] = []

    def run(spark, places, step, stopping):  # a step's query polls ``stopping`` while it runs
        calls.append(stopping())
        return True
    monkeypatch.setattr(warm, "_run_step", run)
    monkeypatch.setattr(warm, "_wait_while", lambda busy, stopping: not stopping())  # no waiting in this test
    took = warm.warm_up(None, PLACES, ("delta",), busy=lambda: True)  # connectors keep starting
    assert calls == [True] * warm._YIELDS + [False]
    assert set(took) == {"delta"}


def test_a_step_cut_short_is_run_again_even_when_the_connector_finished_before_it_returned(monkeypatch):
    state = {"busy": True}
    calls: list[bool] = []

    def run(spark, places, step, stopping):
        ended = stopping()
        calls.append(ended)
        state["busy"] = False  # the connector's first batch is done by the time the step returns
        return True
    monkeypatch.setattr(warm, "_run_step", run)
    monkeypatch.setattr(warm, "_wait_while", lambda busy, stopping: not stopping())
    warm.warm_up(None, PLACES, ("kafka_stream",), busy=lambda: state["busy"])
    assert calls == [True, False]
