"""Queries start and stop off the herder thread; what follows each start or stop waits for it (no Spark).

The fake runner's ``stop`` blocks like a real one waiting for the batch in flight,
until the test lets that batch "commit" (``release``); its ``start`` blocks while
the test holds starts (``starts_open`` cleared).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from sparkcat.model.config_state import TargetState
from sparkcat.runtime.execution.query_threads import STARTS_AT_ONCE
from sparkcat.spark.query_plan import QueryPlan
from tests.unit.runtime.execution.reconciler_helpers import INC, reconciler_on_memory, settle, status

WAIT_S = 10.0  # only a bound for a broken implementation; nothing here should take long


@dataclass
class SlowQuery:
    plan: QueryPlan
    active: bool = True
    stopping: bool = False
    committed: threading.Event = field(default_factory=threading.Event)  # the batch in flight
    placement: str | None = "fake-host:driver"  # as on a local master: every task runs on the driver

    def is_active(self) -> bool:
        return self.active

    def failure(self) -> str | None:
        return None


@dataclass
class SlowRunner:
    """``stop`` waits until the test commits the query's batch in flight; records what overlapped."""

    started: list[QueryPlan] = field(default_factory=list)
    queries: dict[str, SlowQuery] = field(default_factory=dict)
    events: list[tuple[str, str]] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    stopping_now: set[str] = field(default_factory=set)
    most_at_once: int = 0
    fail_stop: str | None = None
    fail_start: str | None = None
    starts_open: threading.Event = field(default_factory=threading.Event)
    starting_now: int = 0
    most_starting: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    entered: threading.Condition = field(default_factory=threading.Condition)

    def __post_init__(self) -> None:
        self.starts_open.set()

    def start(self, plan: QueryPlan, connector=None) -> SlowQuery:
        with self.entered:
            self.starting_now += 1
            self.most_starting = max(self.most_starting, self.starting_now)
            self.entered.notify_all()
        try:
            assert self.starts_open.wait(WAIT_S), "starts never let through"
            assert not self.queries.get(plan.connector, SlowQuery(plan, False)).active, \
                f"two queries of {plan.connector} at once (they share a checkpoint)"
            if self.fail_start == plan.connector:
                self.fail_start = None
                raise RuntimeError(f"starting {plan.connector} failed")
            self.started.append(plan)
            query = self.queries[plan.connector] = SlowQuery(plan)
            with self.lock:
                self.events.append(("start", plan.connector))
            return query
        finally:
            with self.entered:
                self.starting_now -= 1

    def delete_checkpoint(self, path: str) -> None:
        with self.lock:
            self.deleted.append(path)

    def align_checkpoint(self, offsets, plan: QueryPlan) -> bool:
        return False  # no Spark, no checkpoint

    def close(self) -> None:
        pass  # no Spark: no progress feed to close

    def stop(self, query: SlowQuery, graceful: bool = True) -> None:
        name = query.plan.connector
        with self.entered:
            self.stopping_now.add(name)
            self.most_at_once = max(self.most_at_once, len(self.stopping_now))
            self.entered.notify_all()
        query.stopping = True
        try:
            assert query.committed.wait(WAIT_S), f"batch of {name} never committed"
            if self.fail_stop == name:
                self.fail_stop = None
                raise RuntimeError(f"stopping {name} failed")
            query.active = False
            with self.lock:
                self.events.append(("stopped", name))
        finally:
            with self.entered:
                self.stopping_now.discard(name)

    def wait_starting(self, count: int = 1) -> None:
        with self.entered:
            assert self.entered.wait_for(lambda: self.starting_now >= count, WAIT_S), self.starting_now

    def wait_stopping(self, count: int) -> None:
        with self.entered:
            assert self.entered.wait_for(lambda: len(self.stopping_now) >= count, WAIT_S), self.stopping_now

    def release(self, *names: str) -> None:
        for name in names:
            self.queries[name].committed.set()


def setup(tmp_path: Path):
    runner = SlowRunner()
    stores, reconciler = reconciler_on_memory(tmp_path, runner)
    return stores, runner, reconciler


def reconcile(stores, reconciler, rounds: int = 4) -> None:
    """Passes of the herder thread without waiting for any stop."""
    for _ in range(rounds):
        reconciler.reconcile(stores.config.snapshot())


def reconcile_until(condition, stores, reconciler) -> None:
    """Passes until ``condition`` holds (the herder is woken by a finished stop; here we poll)."""
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, "condition never held"
        reconcile(stores, reconciler, rounds=1)
        time.sleep(0.01)


def running(stores, reconciler, names: list[str]) -> None:
    for name in names:
        stores.config.put_connector_config(name, INC)
    settle(stores, reconciler)
    assert all(status(stores, n) == ("RUNNING", ["RUNNING", "RUNNING"]) for n in names)


def test_deleting_many_stops_all_queries_at_once_and_clears_each_after_its_stop(tmp_path):
    stores, runner, reconciler = setup(tmp_path)
    names = ["a", "b", "c"]
    running(stores, reconciler, names)
    for name in names:
        stores.config.remove_connector_config(name)
    reconcile(stores, reconciler)  # returns although every batch is still in flight
    runner.wait_stopping(3)
    assert runner.most_at_once == 3
    for name in names:  # nothing that follows a stop has happened before it
        assert status(stores, name) == ("RUNNING", ["RUNNING", "RUNNING"])
        assert reconciler.checkpoint_dir(name) not in runner.deleted and name in reconciler.lifecycles

    runner.release("b")
    reconcile_until(lambda: "b" not in reconciler.lifecycles, stores, reconciler)
    assert status(stores, "b") == (None, []) and runner.deleted == [reconciler.checkpoint_dir("b")]
    assert status(stores, "a")[0] == "RUNNING" and "a" in reconciler.lifecycles

    runner.release("a", "c")
    settle(stores, reconciler)
    assert reconciler.lifecycles == {}
    assert all(status(stores, n) == (None, []) for n in names)
    assert sorted(runner.deleted) == sorted(reconciler.checkpoint_dir(n) for n in names)


def test_pausing_many_reports_paused_only_once_each_query_stopped(tmp_path):
    stores, runner, reconciler = setup(tmp_path)
    running(stores, reconciler, ["a", "b"])
    for name in ("a", "b"):
        stores.config.put_target_state(name, TargetState.PAUSED)
    reconcile(stores, reconciler)
    runner.wait_stopping(2)
    assert status(stores, "a") == ("RUNNING", ["RUNNING", "RUNNING"])
    runner.release("a", "b")
    settle(stores, reconciler)
    assert status(stores, "a") == status(stores, "b") == ("PAUSED", ["PAUSED", "PAUSED"])
    assert all(reconciler.lifecycles[n].query is None for n in ("a", "b"))


def test_query_being_stopped_counts_as_running_for_the_offsets_api(tmp_path):
    stores, runner, reconciler = setup(tmp_path)
    running(stores, reconciler, ["a"])
    stores.config.put_target_state("a", TargetState.STOPPED)
    reconcile(stores, reconciler)
    runner.wait_stopping(1)
    assert reconciler.lifecycles["a"].query is not None  # "still stopping; try again shortly"
    assert stores.config.snapshot().task_ids("a") == [0, 1]
    runner.release("a")
    settle(stores, reconciler)
    assert reconciler.lifecycles["a"].query is None
    assert stores.config.snapshot().task_ids("a") == [] and status(stores, "a") == ("STOPPED", [])


def test_connector_recreated_while_its_deletion_stops_the_query_starts_fresh_after_it(tmp_path):
    stores, runner, reconciler = setup(tmp_path)
    running(stores, reconciler, ["a"])
    old = reconciler.lifecycles["a"]
    stores.config.remove_connector_config("a")
    reconcile(stores, reconciler, rounds=1)
    runner.wait_stopping(1)
    stores.config.put_connector_config("a", {**INC, "tasks.max": "1"})
    reconcile(stores, reconciler)
    assert len(runner.started) == 1  # left alone while its old query stops
    runner.release("a")
    reconciler.finish_pending(wait=True)
    assert "a" not in reconciler.lifecycles and runner.deleted == [reconciler.checkpoint_dir("a")]
    settle(stores, reconciler)
    assert reconciler.lifecycles["a"] is not old and len(runner.started) == 2
    assert status(stores, "a") == ("RUNNING", ["RUNNING"])
    assert runner.events[-2:] == [("stopped", "a"), ("start", "a")]


def test_config_change_starts_the_new_query_only_after_the_old_one_stopped(tmp_path):
    stores, runner, reconciler = setup(tmp_path)
    running(stores, reconciler, ["a"])
    stores.config.put_connector_config("a", {**INC, "tasks.max": "1"})
    reconcile(stores, reconciler)
    runner.wait_stopping(1)
    assert len(runner.started) == 1
    runner.release("a")
    settle(stores, reconciler)
    assert len(runner.started) == 2 and len(runner.started[-1].task_configs) == 1
    assert runner.events[-2:] == [("stopped", "a"), ("start", "a")]
    assert status(stores, "a") == ("RUNNING", ["RUNNING"])


def test_failed_stop_fails_the_connector_and_a_later_pass_tries_again(tmp_path):
    stores, runner, reconciler = setup(tmp_path)
    running(stores, reconciler, ["a"])
    runner.fail_stop = "a"
    runner.release("a")
    stores.config.put_target_state("a", TargetState.PAUSED)
    reconcile(stores, reconciler, rounds=1)
    reconciler.finish_pending(wait=True)
    c = stores.status.get("a")
    assert c.state.value == "FAILED" and "stopping a failed" in c.trace
    settle(stores, reconciler)
    assert status(stores, "a") == ("PAUSED", ["PAUSED", "PAUSED"])


def test_shutdown_stops_all_queries_at_once_then_reports_them_unassigned(tmp_path):
    stores, runner, reconciler = setup(tmp_path)
    names = ["a", "b", "c"]
    running(stores, reconciler, names)
    stores.config.put_target_state("c", TargetState.PAUSED)
    reconcile(stores, reconciler, rounds=1)  # c's stop is in flight when the driver stops
    runner.wait_stopping(1)
    shutdown = threading.Thread(target=reconciler.stop_all)
    shutdown.start()
    runner.wait_stopping(3)
    assert status(stores, "a") == ("RUNNING", ["RUNNING", "RUNNING"])
    runner.release(*names)
    shutdown.join(WAIT_S)
    assert not shutdown.is_alive()
    assert runner.most_at_once == 3
    assert status(stores, "a") == status(stores, "b") == ("UNASSIGNED", ["UNASSIGNED", "UNASSIGNED"])
    assert status(stores, "c") == ("PAUSED", ["PAUSED", "PAUSED"])
    assert all(rt.instance is None for rt in reconciler.lifecycles.values())


def test_starts_run_off_the_herder_thread_a_few_at_a_time(tmp_path):
    stores, runner, reconciler = setup(tmp_path)
    runner.starts_open.clear()
    names = ["a", "b", "c"]
    for name in names:
        stores.config.put_connector_config(name, INC)
    reconcile(stores, reconciler)  # returns although Spark has not started any query yet
    runner.wait_starting(len(names))
    assert runner.started == [] and status(stores, "a") == ("RUNNING", [])
    assert reconciler.lifecycles["a"].query is not None  # a stand-in: the connector is not halted
    assert not reconciler.lifecycles["a"].query.is_active()
    runner.starts_open.set()
    settle(stores, reconciler)
    assert sorted(p.connector for p in runner.started) == names
    assert runner.most_starting == min(len(names), STARTS_AT_ONCE)
    assert all(status(stores, n) == ("RUNNING", ["RUNNING", "RUNNING"]) for n in names)
    assert all(reconciler.lifecycles[n].query is runner.queries[n] for n in names)


def test_connector_deleted_while_its_query_starts_is_stopped_once_started(tmp_path):
    stores, runner, reconciler = setup(tmp_path)
    runner.starts_open.clear()
    stores.config.put_connector_config("a", INC)
    reconcile(stores, reconciler)
    runner.wait_starting()
    stores.config.remove_connector_config("a")
    reconcile(stores, reconciler)
    assert "a" in reconciler.lifecycles
    runner.starts_open.set()
    reconcile_until(lambda: ("start", "a") in runner.events, stores, reconciler)
    runner.release("a")
    settle(stores, reconciler)
    assert runner.events == [("start", "a"), ("stopped", "a")]
    assert "a" not in reconciler.lifecycles and status(stores, "a") == (None, [])


def test_a_query_that_cannot_start_fails_its_tasks_until_they_are_restarted(tmp_path):
    stores, runner, reconciler = setup(tmp_path)
    runner.fail_start = "a"
    stores.config.put_connector_config("a", INC)
    for _ in range(2):  # task configs written; query started
        reconciler.reconcile(stores.config.snapshot())
        reconciler.finish_pending(wait=True)
    assert status(stores, "a") == ("RUNNING", ["FAILED", "FAILED"])  # Connect: the tasks failed to start
    assert "starting a failed" in stores.status.tasks("a")[0].trace
    assert reconciler.lifecycles["a"].query is None
    settle(stores, reconciler)  # later passes leave it FAILED, without trying again
    assert status(stores, "a") == ("RUNNING", ["FAILED", "FAILED"]) and runner.started == []
    stores.config.request_restart("a", include_tasks=True, only_failed=True)
    settle(stores, reconciler)
    assert status(stores, "a") == ("RUNNING", ["RUNNING", "RUNNING"]) and len(runner.started) == 1


def test_shutdown_stops_a_query_whose_start_was_in_flight(tmp_path):
    stores, runner, reconciler = setup(tmp_path)
    runner.starts_open.clear()
    stores.config.put_connector_config("a", INC)
    reconcile(stores, reconciler)
    runner.wait_starting()
    shutdown = threading.Thread(target=reconciler.stop_all)
    shutdown.start()
    runner.starts_open.set()
    runner.wait_stopping(1)
    runner.release("a")
    shutdown.join(WAIT_S)
    assert not shutdown.is_alive()
    assert runner.events == [("start", "a"), ("stopped", "a")]
    assert status(stores, "a") == ("UNASSIGNED", ["UNASSIGNED", "UNASSIGNED"])
