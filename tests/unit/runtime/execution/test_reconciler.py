"""Reconciler state machine with memory stores and a fake query runner (pure logic, no Spark)."""

from __future__ import annotations

from dataclasses import dataclass, field

from sparkcat.model.config_state import TargetState
from sparkcat.runtime.execution.failures import failed_task_ids
from sparkcat.spark.query_plan import BatchResult, QueryPlan, TaskBatchResult, task_failure_message
from tests.unit.runtime.execution.reconciler_helpers import INC, reconciler_on_memory, settle, status



@dataclass
class FakeQuery:
    plan: QueryPlan
    active: bool = True
    error: str | None = None
    stopping: bool = False
    placement: str | None = "fake-host:driver"  # as on a local master: every task runs on the driver

    def is_active(self) -> bool:
        return self.active

    def failure(self) -> str | None:
        return None if self.active or self.stopping else self.error


@dataclass
class FakeRunner:
    started: list[QueryPlan] = field(default_factory=list)
    stopped: list[QueryPlan] = field(default_factory=list)
    hard_stops: list[str] = field(default_factory=list)
    deleted_checkpoints: list[str] = field(default_factory=list)
    placement: str | None = "fake-host:driver"  # None: a cluster, where each task's first batch names its executor

    def start(self, plan: QueryPlan, connector=None) -> FakeQuery:
        self.started.append(plan)
        return FakeQuery(plan, placement=self.placement)

    def stop(self, query: FakeQuery, graceful: bool = True) -> None:
        query.stopping, query.active = True, False
        self.stopped.append(query.plan)
        if not graceful:
            self.hard_stops.append(query.plan.connector)

    def delete_checkpoint(self, path: str) -> None:
        self.deleted_checkpoints.append(path)

    def align_checkpoint(self, offsets, plan: QueryPlan) -> bool:
        return False  # no Spark, no checkpoint

    def close(self) -> None:
        pass  # no Spark: no progress feed to close


def setup(tmp_path):
    runner = FakeRunner()
    stores, reconciler = reconciler_on_memory(tmp_path, runner)
    return stores, runner, reconciler


def test_started_connector_commits_task_configs_then_starts_one_query(tmp_path):
    stores, runner, reconciler = setup(tmp_path)
    stores.config.put_connector_config("inc", INC)
    settle(stores, reconciler)
    state = stores.config.snapshot()
    assert [c["increments"] for c in state.all_task_configs("inc")] == ["1", "100"]
    # Connect's Worker adds task.class: a Python connector with no Java twin names its sparkcat task class
    assert {c["task.class"] for c in state.all_task_configs("inc")} == {
        "sparkcat.connectors.increment:IncrementSourceTask"}
    assert len(runner.started) == 1 and runner.started[0].query_name == "inc"
    assert runner.started[0].sink_task_class.endswith("FileStreamSinkTask")
    assert status(stores, "inc") == ("RUNNING", ["RUNNING", "RUNNING"])


def test_pause_stops_query_and_resume_restarts_it(tmp_path):
    stores, runner, reconciler = setup(tmp_path)
    stores.config.put_connector_config("inc", INC)
    settle(stores, reconciler)
    stores.config.put_target_state("inc", TargetState.PAUSED)
    settle(stores, reconciler)
    assert len(runner.stopped) == 1
    assert status(stores, "inc") == ("PAUSED", ["PAUSED", "PAUSED"])
    stores.config.put_target_state("inc", TargetState.STARTED)
    settle(stores, reconciler)
    assert len(runner.started) == 2
    assert status(stores, "inc") == ("RUNNING", ["RUNNING", "RUNNING"])


def test_losing_the_leadership_cancels_batches_in_flight_while_a_shutdown_lets_them_commit(tmp_path):
    stores, runner, reconciler = setup(tmp_path)
    stores.config.put_connector_config("inc", INC)
    settle(stores, reconciler)
    reconciler.release_all(graceful=False)  # the herder's demotion: nothing of ours could commit any more
    assert runner.hard_stops == ["inc"] and "inc" not in reconciler.lifecycles
    assert status(stores, "inc") == ("UNASSIGNED", ["UNASSIGNED", "UNASSIGNED"])
    settle(stores, reconciler)
    reconciler.stop_all()  # a driver's shutdown: each batch in flight commits first
    assert len(runner.stopped) == 2 and runner.hard_stops == ["inc"]


def test_stop_empties_task_configs_and_task_statuses(tmp_path):
    stores, runner, reconciler = setup(tmp_path)
    stores.config.put_connector_config("inc", INC)
    settle(stores, reconciler)
    stores.config.put_target_state("inc", TargetState.STOPPED)
    settle(stores, reconciler)
    assert stores.config.snapshot().task_ids("inc") == []
    assert status(stores, "inc") == ("STOPPED", [])


def test_failed_task_is_excluded_and_others_keep_running_until_restart(tmp_path):
    stores, runner, reconciler = setup(tmp_path)
    stores.config.put_connector_config("inc", INC)
    settle(stores, reconciler)
    query = reconciler.lifecycles["inc"].query
    query.active, query.error = False, "Traceback...\nRuntimeError: " + task_failure_message(
        "inc", 1, ValueError("bad record at position 7"))
    settle(stores, reconciler)
    assert status(stores, "inc") == ("RUNNING", ["RUNNING", "FAILED"])
    assert "bad record at position 7" in stores.status.get_task("inc", 1).trace
    assert runner.started[-1].excluded_tasks == [1]
    stores.config.request_restart("inc", include_tasks=True, only_failed=True)
    settle(stores, reconciler)
    assert runner.started[-1].excluded_tasks == []
    assert status(stores, "inc") == ("RUNNING", ["RUNNING", "RUNNING"])


def test_an_accepted_only_failed_restart_is_not_followed_by_the_old_failure(tmp_path):
    """The herder's pass right after it accepted the request still has the config state from before the
    request came back from the config log: the tasks it restarts stay RESTARTING, not FAILED again."""
    stores, runner, reconciler = setup(tmp_path)
    stores.config.put_connector_config("inc", INC)
    settle(stores, reconciler)
    query = reconciler.lifecycles["inc"].query
    query.active, query.error = False, "Traceback...\nRuntimeError: " + "\n".join(
        task_failure_message("inc", t, ValueError("bad record")) for t in (0, 1))
    settle(stores, reconciler)
    assert status(stores, "inc") == ("RUNNING", ["FAILED", "FAILED"])
    before = stores.config.snapshot()
    stores.config.request_restart("inc", include_tasks=True, only_failed=True)
    reconciler.report_restarting("inc", include_tasks=True, only_failed=True, task_ids=[0, 1])
    writes = []
    stores.status.put = lambda s, put=stores.status.put: (writes.append((s.task, s.state.value)), put(s))[1]
    reconciler.reconcile(before)  # the request is not in this state yet
    reconciler.finish_pending(wait=True)
    assert status(stores, "inc") == ("RUNNING", ["RESTARTING", "RESTARTING"]) and writes == []
    settle(stores, reconciler)
    assert status(stores, "inc") == ("RUNNING", ["RUNNING", "RUNNING"])
    assert ("FAILED" not in [state for _t, state in writes]), writes


def test_config_change_regenerates_task_configs_and_restarts_query(tmp_path):
    stores, runner, reconciler = setup(tmp_path)
    stores.config.put_connector_config("inc", INC)
    settle(stores, reconciler)
    stores.config.put_connector_config("inc", {**INC, "tasks.max": "1"})
    settle(stores, reconciler)
    assert [c["increments"] for c in stores.config.snapshot().all_task_configs("inc")] == ["1,100"]
    assert len(runner.started[-1].task_configs) == 1
    assert status(stores, "inc") == ("RUNNING", ["RUNNING"])


def test_deletion_stops_query_and_clears_status(tmp_path):
    stores, runner, reconciler = setup(tmp_path)
    stores.config.put_connector_config("inc", INC)
    settle(stores, reconciler)
    stores.config.remove_connector_config("inc")
    settle(stores, reconciler)
    assert "inc" not in reconciler.lifecycles and runner.stopped
    assert status(stores, "inc") == (None, [])
    assert runner.deleted_checkpoints == [reconciler.checkpoint_dir("inc")], "the deleted connector's checkpoint goes"


def test_connector_that_cannot_start_is_failed_with_its_reason(tmp_path):
    stores, runner, reconciler = setup(tmp_path)
    stores.config.put_connector_config("to-kafka", {"connector.class": "increment", "increments": "1"})
    settle(stores, reconciler)
    c = stores.status.get("to-kafka")
    assert c.state.value == "FAILED" and "no bootstrap.servers" in c.trace
    assert runner.started == []


def test_restart_requests_from_before_start_are_ignored(tmp_path):
    stores, runner, reconciler = setup(tmp_path)
    stores.config.put_connector_config("inc", INC)
    stores.config.request_restart("inc", include_tasks=True, only_failed=False)
    reconciler.ignore_restarts_before(stores.config.backend.end_offset())
    settle(stores, reconciler)
    assert len(runner.started) == 1 and runner.stopped == []


def batch(batch_id: int, executors: tuple[str, str], position: int) -> BatchResult:
    """A batch of ``inc`` in which task 0 ran on ``executors[0]`` and task 1 on ``executors[1]``."""
    return BatchResult("inc", batch_id, {
        0: TaskBatchResult(0, executors[0], 3, [({"increment": 1}, {"position": position})]),
        1: TaskBatchResult(1, executors[1], 3, [({"increment": 100}, {"position": position})])}, 0.2)


def workers(stores) -> list[tuple[str, str]]:
    return [(t.state.value, t.worker_id) for t in stores.status.tasks("inc")]


def test_on_a_cluster_a_task_is_running_from_its_first_batch_on_that_batchs_executor_for_the_whole_run(tmp_path):
    stores, runner, reconciler = setup(tmp_path)
    runner.placement = None  # a cluster: Spark names each task's executor only once a batch ran it
    stores.config.put_connector_config("inc", INC)
    settle(stores, reconciler)
    # the query runs, no executor ran a task yet: UNASSIGNED, never RUNNING on the driver's REST address
    assert workers(stores) == [("UNASSIGNED", "driver:8083"), ("UNASSIGNED", "driver:8083")]
    plan = runner.started[-1]
    reconciler.accounting.on_batch(plan, batch(0, ("host-a:1", "host-b:2"), 3))
    assert stores.offsets.get("inc") == {'{"increment":1}': {"position": 3}, '{"increment":100}': {"position": 3}}
    assert workers(stores) == [("RUNNING", "host-a:1"), ("RUNNING", "host-b:2")]
    # Spark ran the next batch's tasks elsewhere, and a pass reported the tasks again: the run keeps its executors
    reconciler.accounting.on_batch(plan, batch(1, ("host-b:2", "host-c:3"), 6))
    settle(stores, reconciler)
    assert workers(stores) == [("RUNNING", "host-a:1"), ("RUNNING", "host-b:2")]
    # a restarted task begins a new run: on the executor that ran its last batch
    reconciler.restart_task("inc", 1)
    settle(stores, reconciler)
    assert workers(stores) == [("RUNNING", "host-a:1"), ("RUNNING", "host-c:3")]


def test_on_a_local_master_tasks_run_on_the_driver_from_the_start(tmp_path):
    stores, runner, reconciler = setup(tmp_path)
    stores.config.put_connector_config("inc", INC)
    settle(stores, reconciler)
    assert workers(stores) == [("RUNNING", "fake-host:driver"), ("RUNNING", "fake-host:driver")]
    reconciler.accounting.on_batch(runner.started[-1], batch(0, ("vm:driver", "vm:driver"), 3))
    assert workers(stores) == [("RUNNING", "fake-host:driver"), ("RUNNING", "fake-host:driver")]


def test_failed_task_ids_are_found_in_spark_exception_text():
    text = ("[STREAM_FAILED] ... PythonException: Traceback ...\nRuntimeError: sparkcat task failed: "
            "my-conn-2-10: ValueError: boom\n ... sparkcat task failed: other-1: x")
    assert failed_task_ids("my-conn-2", text) == [10]
    assert failed_task_ids("my-conn", text) == []


def test_java_named_connectors_get_connects_java_task_class_so_a_connect_worker_can_run_them(tmp_path):
    stores, runner, reconciler = setup(tmp_path)
    source = tmp_path / "in.txt"
    source.write_text("a\n")
    stores.config.put_connector_config("fs", {"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
                                              "file": str(source), "topic": "t", "sink.connector.class": "file-sink",
                                              "sink.file": str(tmp_path / "out.txt")})
    settle(stores, reconciler)
    configs = stores.config.snapshot().all_task_configs("fs")
    assert [c["task.class"] for c in configs] == ["org.apache.kafka.connect.file.FileStreamSourceTask"]


def test_request_task_reconfiguration_commits_the_connectors_new_task_configs_and_restarts_its_query(tmp_path):
    """ConnectorContext.request_task_reconfiguration: task_configs asked again, committed when changed."""
    stores, runner, reconciler = setup(tmp_path)
    stores.config.put_connector_config("inc", INC)
    settle(stores, reconciler)
    instance = reconciler.lifecycles["inc"].instance
    settle(stores, reconciler)
    assert len(runner.started) == 1
    reconciler.wakeup.clear()
    # the connector's inputs changed (as a new table or topic would change them): one increment now
    instance.task_configs = lambda max_tasks: [{"increments": "7"}]
    instance.context.request_task_reconfiguration()
    assert reconciler.wakeup.is_set()  # the herder is woken at once
    settle(stores, reconciler)
    assert [c["increments"] for c in stores.config.snapshot().all_task_configs("inc")] == ["7"]
    assert len(runner.started) == 2 and [c["increments"] for c in runner.started[-1].task_configs] == ["7"]
    settle(stores, reconciler)  # no further request: nothing changes
    assert len(runner.started) == 2


def test_an_accepted_restart_shows_restarting_at_once_and_running_once_restarted(tmp_path):
    stores, runner, reconciler = setup(tmp_path)
    stores.config.put_connector_config("inc", INC)
    settle(stores, reconciler)
    # what the herder does as it accepts POST /restart?includeTasks=true, before the request is read back:
    # a status read between the 202 and the restart must not show the state from before it
    stores.config.request_restart("inc", include_tasks=True, only_failed=False)
    reconciler.report_restarting("inc", include_tasks=True, only_failed=False, task_ids=[0, 1])
    assert status(stores, "inc") == ("RESTARTING", ["RESTARTING", "RESTARTING"])
    settle(stores, reconciler)
    assert len(runner.stopped) == 1 and len(runner.started) == 2
    assert status(stores, "inc") == ("RUNNING", ["RUNNING", "RUNNING"])
    # only failed ones, and none failed: nothing shows RESTARTING, nothing restarts
    reconciler.report_restarting("inc", include_tasks=True, only_failed=True, task_ids=[0, 1])
    assert status(stores, "inc") == ("RUNNING", ["RUNNING", "RUNNING"])


def test_a_steady_pass_leaves_settled_connectors_alone_and_brings_in_line_those_on_a_clock(tmp_path):
    import time
    from sparkcat.runtime.execution import reconciler as reconciler_module

    stores, runner, reconciler = setup(tmp_path)
    for name in ("a", "b"):
        stores.config.put_connector_config(name, INC)
    settle(stores, reconciler)
    applied: list[str] = []
    for lc in reconciler.lifecycles.values():
        lc.apply = lambda state, lc=lc, apply=lc.apply: (applied.append(lc.name), apply(state))[1]
    assert all(lc.settled for lc in reconciler.lifecycles.values())
    reconciler.lifecycles["b"].retries.first_at = time.monotonic()  # b recovers from a transient failure

    def steady_pass() -> None:
        offset, _ = reconciler._last_pass
        reconciler._last_pass = (offset, time.monotonic() - reconciler_module.STEADY_PASS_S)
        reconciler.reconcile(stores.config.snapshot(), woken=False)

    steady_pass()
    assert applied == ["b"]
    applied.clear()
    reconciler.reconcile(stores.config.snapshot(), woken=True)  # news: every connector is looked at
    assert sorted(applied) == ["a", "b"]
