"""One connector on this driver, from its first start to its removal (Connect's ``WorkerConnector``).

A ``ConnectorLifecycle`` owns the connector's instance, the task configs it generated, its query,
its failures, its retries and its automatic restarts. Its state is two explicit machines:

- the instance (``InstanceState``): NONE -> STARTED, or FAILED (a typed ``Failure``) until restarted;
- the query (``QueryState``): NONE -> STARTING -> RUNNING -> STOPPING -> NONE. Starts and stops run off
  the herder thread (``QueryThreads``); until one is done the connector is left alone.

Transitions are methods, all called on the herder thread: ``apply`` (the target state of the config
log), ``restart`` / ``restart_task`` (requests), ``reload`` (a config provider's ttl ended), ``retire`` (deleted or replaced by a new config),
``release`` (this driver stops leading), ``on_query_ended`` (Spark ended the query), and the
``QueryThreads`` callbacks ``on_query_started`` / ``on_start_failed`` / ``on_query_stopped``. What follows
a stop is named by ``AfterStop``, not passed as a callable. Observed state leaves through the
``StatusReporter``; batches are accounted by ``BatchAccounting``. Starting the instance is
``connector_instance``'s; the transitions stay in this one class (about 460 lines) because they read
and change the same two state machines, and split across modules they would reach into each other's fields.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from enum import Enum
from functools import cached_property
from typing import Any

from sparkcat.api.connector import Connector
from sparkcat.config.connector import ConnectorSettings, connector_settings
from sparkcat.errors import StorageError
from sparkcat.model.config_state import ClusterConfigState, RestartRequest, TargetState
from sparkcat.model.status import State
from sparkcat.runtime.execution import fencing, plan_builder
from sparkcat.runtime.execution.batch_accounting import ConnectorBatches
from sparkcat.runtime.execution.connector_instance import TooManyTasksError, start_connector, task_configs
from sparkcat.runtime.execution.failures import Failure, FailureKind
from sparkcat.runtime.execution.plan_builder import EmbeddedSink
from sparkcat.runtime.execution.query_runner import RunningQuery
from sparkcat.runtime.execution.recovery import AutoRestart, Retries
from sparkcat.runtime.execution.services import ExecutionServices
from sparkcat.spark.query_plan import QueryPlan

log = logging.getLogger(__name__)


class InstanceState(str, Enum):
    NONE = "none"            # not started: new, stopped, or restarting
    STARTED = "started"      # started on the driver, its task configs generated
    FAILED = "failed"        # start, task configs or raise_error failed: until restarted


class QueryState(str, Enum):
    NONE = "none"
    STARTING = "starting"    # a starter thread is starting it
    RUNNING = "running"      # Spark runs it (or it ended and the herder has not seen it yet)
    STOPPING = "stopping"    # a thread of its own waits for its batch in flight, then stops it


class AfterStop(str, Enum):
    """What the lifecycle does once its query stopped (or at once, when it has none)."""

    NOTHING = "nothing"      # a restart or a new plan: a later pass starts the query again
    PAUSED = "paused"        # report PAUSED
    STOPPED = "stopped"      # Connect's STOPPED: no instance, empty task configs
    FAILED = "failed"        # report the instance's failure
    RETIRED = "retired"      # deleted or replaced: the reconciler takes it away
    RELEASED = "released"    # this driver no longer runs it: UNASSIGNED


class ConnectorLifecycle:
    """Driver-side life of one connector config; a changed config gets a new lifecycle (herder thread only)."""

    def __init__(self, name: str, config: dict[str, str], services: ExecutionServices, batches: ConnectorBatches,
                 last_restart_offset: int = -1):
        self.name = name
        self.config = config
        self.services = services
        self.batches = batches
        self.instance: Connector | None = None
        self.instance_state = InstanceState.NONE
        self.failure: Failure | None = None              # the instance's, while FAILED
        self.failed_tasks: dict[int, Failure] = {}       # tasks FAILED until restarted (excluded from the query)
        self.desired_task_configs: list[dict[str, str]] | None = None
        self.sink: EmbeddedSink | None = None
        self.query: RunningQuery | None = None
        self.query_state = QueryState.NONE
        self.last_restart_offset = last_restart_offset
        self.retries = Retries()
        self.auto_restart = AutoRestart()
        self.retired = False             # deleted or replaced, its query stopped: the reconciler removes it
        self.deleted = False             # retired because the connector was deleted (not replaced)
        self._after_stop = AfterStop.NOTHING
        self._state: ClusterConfigState | None = None   # the config state of the last pass
        self._raised: Failure | None = None             # ConnectorContext.raise_error, from any thread
        # reported RESTARTING by an accepted request whose record the config log has not brought back yet:
        # their old failure is not reported again meanwhile (the connector: None)
        self._restarting: set[int | None] = set()
        self._batches_seen = 0
        self._plan_cache: tuple[Any, QueryPlan] | None = None  # (what it was built from, the plan): ``_plan``

    @cached_property
    def settings(self) -> ConnectorSettings:
        """The framework keys, parsed once from the config with its placeholders resolved (as it was validated)."""
        return connector_settings(self._resolved(self.config, ""))

    @property
    def busy(self) -> bool:
        """A start or stop of its query is in flight: left alone until it is done."""
        return self.query_state in (QueryState.STARTING, QueryState.STOPPING)

    @property
    def settled(self) -> bool:
        """Running with nothing on a clock (no retry backoff, no automatic restart to count down, no failure or
        restart to report): a pass with nothing new would change nothing, so the reconciler's steady passes skip it."""
        return (self.query_state == QueryState.RUNNING and self.instance_state == InstanceState.STARTED
                and not self.failed_tasks and self._raised is None and not self._restarting
                and self.retries.first_at is None and self.auto_restart.count == 0)

    # ------------------------------------------------------------------ the target

    def apply(self, state: ClusterConfigState) -> None:
        """Bring this connector in line with ``state``: restarts, then its target (STARTED, PAUSED, STOPPED)."""
        self._state = state
        self._take_restart(state)
        self._auto_restart()
        self._observe_batches()
        if self.busy:
            return  # a restart is stopping the query; it starts again on a later pass
        target = state.target_state(self.name)
        if target == TargetState.STOPPED:
            self.stop_query(AfterStop.STOPPED)
            return
        if self.instance_state == InstanceState.NONE:
            self._start_instance()
        elif self.instance_state == InstanceState.STARTED and self.services.reconfigurations.take(self.name):
            self._reconfigure()
        self._take_raised()
        if self.instance_state == InstanceState.FAILED:
            self.stop_query(AfterStop.FAILED)
            return
        if not self.services.task_configs.current(state, self.name, self.desired_task_configs or []):
            return
        if target == TargetState.PAUSED:
            self.stop_query(AfterStop.PAUSED)
        else:
            self._run(state)

    def _run(self, state: ClusterConfigState) -> None:
        plan = self._plan(state)
        task_ids = state.task_ids(self.name)
        if self.query_state == QueryState.RUNNING and self.query.is_active() and self.query.plan == plan:
            return
        if self.query is None and not self.retries.due():
            return  # a transient failure: the query starts again once its backoff is over
        if not self.stop_query():
            return  # the new query starts once the old one stopped: they share the checkpoint
        self._report(State.RUNNING)
        if plan.live_tasks:
            prepare = self._prepare(state, plan)
            self.query = self.services.threads.start(self, plan, self.instance, prepare)
            self.query_state = QueryState.STARTING
        else:
            self._report_tasks(task_ids)

    def _plan(self, state: ClusterConfigState) -> QueryPlan:
        """The query's plan for ``state``, built again only when what it is made of changed: every tick asks, and
        building one (configs serialised with the worker's policy) was the idle driver's largest cost at 200."""
        key = (state.offset, id(self.instance), id(self.sink), frozenset(self.failed_tasks))
        if self._plan_cache is None or self._plan_cache[0] != key:
            self._plan_cache = (key, plan_builder.query_plan(state, self, self.services.worker, self.services.policy))
        return self._plan_cache[1]

    def _prepare(self, state: ClusterConfigState, plan: QueryPlan) -> Callable[[], None]:
        """What runs on the starter thread before ``plan``'s query starts: fence the earlier tasks of an exactly-once
        source or sink (none commits more, no transaction of theirs holds back reads of the offsets topic), then
        drop the checkpoint if the cluster committed past it (``resume.py``: leadership came back)."""
        transactional = plan.exactly_once or (plan.connector_type == "sink" and self.settings.exactly_once_required)
        fence = fencing.zombie_fencing(self.services.stores.config, plan, state) if transactional else None
        runner, offsets = self.services.runner, self.services.stores.offsets

        def prepare() -> None:
            if fence is not None:
                fence()
            runner.align_checkpoint(offsets, plan)

        return prepare

    # ------------------------------------------------------------------ the instance

    def _start_instance(self) -> None:
        try:
            started = start_connector(self.name, self.config, self.settings, self.services,
                                      self.services.reconfigurations.context(self.name, self._raise_error))
        except Exception as e:
            self._instance_failed(Failure.of_connector(e))
            return
        self.instance, self.desired_task_configs, self.sink = started.instance, started.task_configs, started.sink
        self.instance_state = InstanceState.STARTED
        self._report(State.RUNNING)
        log.info("Connector %s started on the driver with %d task config(s)", self.name,
                 len(self.desired_task_configs))

    def _reconfigure(self) -> None:
        """The task configs the connector asks for now; more of them than tasks.max fail it (KIP-1004)."""
        try:
            self.desired_task_configs = task_configs(self.name, self.instance, self.config,
                                                     self._resolved(self.config, "", reload=True), self.settings)
        except TooManyTasksError as e:
            self._raise_error(e)

    def _raise_error(self, error: BaseException) -> None:
        """``ConnectorContext.raise_error``, from any thread: one assignment, taken by the next pass, which stops
        the query and reports the connector FAILED."""
        self._raised = Failure.of_connector(error)
        self.services.threads.wakeup.set()  # a pass now: the reconciler's steady passes are seconds apart

    def _take_raised(self) -> None:
        raised, self._raised = self._raised, None
        if raised is not None and self.instance_state != InstanceState.FAILED:
            log.error("Connector %s raised an error: %s", self.name, raised.reason)
            self.failure, self.instance_state = raised, InstanceState.FAILED

    def _instance_failed(self, failure: Failure) -> None:
        try:
            self._stop_instance()
        finally:
            self.failure, self.instance_state = failure, InstanceState.FAILED

    def _resolved(self, config: dict[str, str], part: str, reload: bool = False) -> dict[str, str]:
        """``config`` resolved; ``reload``: its ttls schedule a reload (as the instance's start does, not the
        settings read before it)."""
        return self.services.resolved_config(config, f"connector {self.name}{part}", self.name if reload else None)

    def _stop_instance(self) -> None:
        instance, self.instance, self.desired_task_configs = self.instance, None, None
        self.instance_state = InstanceState.NONE
        if instance is not None:
            instance.stop()

    # ------------------------------------------------------------------ restarts

    def _take_restart(self, state: ClusterConfigState) -> None:
        request: RestartRequest | None = state.restart_requests.get(self.name)
        if request is None or request.offset <= self.last_restart_offset:
            return
        self.last_restart_offset = request.offset
        self.restart(request.include_tasks, request.only_failed, state.task_ids(self.name))
        if request.include_tasks and not request.only_failed:
            self.stop_query()

    def _auto_restart(self) -> None:
        """Strimzi's auto-restart of a FAILED connector or FAILED tasks, on its schedule (``recovery.AutoRestart``)."""
        policy = self.services.worker.auto_restart
        failing = self.instance_state == InstanceState.FAILED or bool(self.failed_tasks)
        if not self.auto_restart.due(policy, failing):
            return
        self.auto_restart.restarted()
        tasks = sorted(self.failed_tasks)
        log.info("Connector %s: automatic restart %d of the failed %s (the next one no sooner than %.0f s from now)",
                 self.name, self.auto_restart.count, f"tasks {tasks}" if tasks else "connector",
                 policy.backoff_s(self.auto_restart.count))
        self.restart(include_tasks=True, only_failed=True, task_ids=tasks)

    def restart(self, include_tasks: bool, only_failed: bool, task_ids: list[int]) -> list[int]:
        """A restart request (Connect's ``RestartPlan``): what it restarts is reported RESTARTING and its failures
        cleared; the next passes start the instance and the query again. Returns the task ids it restarts."""
        tasks = self.report_restarting(include_tasks, only_failed, task_ids)
        if not only_failed or self.instance_state == InstanceState.FAILED:
            self._stop_instance()
            self.failure = None
        for t in tasks:
            self.failed_tasks.pop(t, None)
        self._restarting.clear()  # the failures it restarts are gone: nothing left to hold back
        return tasks

    def report_restarting(self, include_tasks: bool, only_failed: bool, task_ids: list[int]) -> list[int]:
        """The connector restarts unless ``only_failed`` and it did not fail; with ``include_tasks`` its tasks do
        (only the FAILED ones if ``only_failed``). Those are reported RESTARTING; their ids are returned."""
        if not only_failed or self.instance_state == InstanceState.FAILED:
            self._report(State.RESTARTING)
            self._restarting.add(None)
        tasks = (sorted(self.failed_tasks) if only_failed else list(task_ids)) if include_tasks else []
        for t in tasks:
            self.services.reporter.task(self.name, t, State.RESTARTING)
        self._restarting.update(tasks)
        return tasks

    def reload(self) -> None:
        """A config provider value's ttl ended (``config_reloads``): the connector and its tasks restart, and
        resolve their placeholders again as they start."""
        task_ids = self._state.task_ids(self.name) if self._state is not None else []
        self.restart(include_tasks=True, only_failed=False, task_ids=task_ids)
        self.stop_query()

    def restart_task(self, task: int) -> None:
        """``POST /connectors/NAME/tasks/N/restart``: its failure cleared, the query restarted with it."""
        self.services.reporter.task(self.name, task, State.RESTARTING)
        self.failed_tasks.pop(task, None)
        self.stop_query()

    # ------------------------------------------------------------------ failures

    def on_query_ended(self, failure: Failure | None) -> None:
        """Spark ended the query: by our stop (``failure`` None), a transient error (retried after backoff), or a
        failure of its tasks (FAILED until restarted; the others run on in the next query)."""
        self._observe_batches()  # batches committed before it ended do not end the run of failures it starts
        self.query, self.query_state = None, QueryState.NONE
        if failure is None or self._retry(failure):
            return
        self.tasks_failed(failure)

    def on_error(self, error: BaseException) -> None:
        """An action of this connector raised on the herder thread: retried when transient, else it FAILED."""
        failure = Failure.of_exception(self.name, error)
        if self._retry(failure):
            return  # e.g. Kafka unreachable while its query started: started again after backoff
        log.error("Connector %s failed: %s", self.name, failure.trace)
        self._report(State.FAILED, failure)

    def _retry(self, failure: Failure) -> bool:
        """Whether ``failure`` is retried after backoff (``recovery.Retries``): transient, and retries left."""
        if not failure.transient:
            return False
        try:
            settings = self.settings
        except Exception as e:  # noqa: BLE001 - a config whose placeholders no longer resolve: not retried
            log.error("Connector %s: its error settings cannot be read (%s); the failure is not retried", self.name, e)
            return False
        return self.retries.retry(self.name, failure, settings)

    def tasks_failed(self, failure: Failure) -> None:
        ids = failure.tasks or tuple(range(len(self.desired_task_configs or [])))
        for t in ids:
            self.failed_tasks[t] = failure
            self.batches.progress.task_failed(t, failure)
            self.services.reporter.task(self.name, t, State.FAILED, trace=failure.trace)

    def _observe_batches(self) -> None:
        """A batch committed since the last pass ends a run of transient failures."""
        committed = self.batches.progress.batches
        if committed != self._batches_seen:
            self._batches_seen = committed
            self.retries.succeeded(self.name)

    # ------------------------------------------------------------------ the query

    def stop_query(self, after: AfterStop = AfterStop.NOTHING, graceful: bool = True) -> bool:
        """Stop the query off the herder thread, then do ``after`` on it; True when there was none (done at once)."""
        if self.busy:
            return False
        if self.query is None:
            self._after_stopped(after)
            return True
        self.services.threads.stop(self, self.query, graceful)
        self.query_state, self._after_stop = QueryState.STOPPING, after
        return False

    def retire(self) -> bool:
        """Deleted, or replaced by a new config: the query stops, the instance goes, its reloads are cancelled
        (a new config schedules its own as it starts); True once retired."""
        self.services.reloads.cancel(self.name)
        self.stop_query(AfterStop.RETIRED)
        return self.retired

    def release(self, graceful: bool = True) -> None:
        """This driver no longer runs it (shutdown, or another driver leads): once its query stopped, the instance
        stops and its statuses say nobody runs it."""
        if self.query is not None:
            self.stop_query(AfterStop.RELEASED, graceful)

    def _after_stopped(self, after: AfterStop) -> None:
        if after == AfterStop.PAUSED:
            self._report_paused()
        elif after == AfterStop.STOPPED:
            self._report_stopped()
        elif after == AfterStop.FAILED and None not in self._restarting:
            self._report(State.FAILED, self.failure)
        elif after == AfterStop.RETIRED:
            self.close()
            self.retired = True
        elif after == AfterStop.RELEASED:
            self._report_unassigned()

    def on_query_started(self, query: RunningQuery) -> None:
        self.query, self.query_state = query, QueryState.RUNNING
        log.info("Connector %s: query %r started with %d task(s) (checkpoint %s)", self.name, query.plan.query_name,
                 len(query.plan.live_tasks), query.plan.checkpoint_dir)
        self._report_tasks(list(range(len(query.plan.task_configs))), query.placement)

    def on_start_failed(self, plan: QueryPlan, error: BaseException) -> None:
        """The query could not start: transient errors are retried; else its tasks FAILED, as a Connect task whose
        start failed, until a restart or a new config."""
        self._observe_batches()
        self.query, self.query_state = None, QueryState.NONE
        failure = Failure.of_exception(self.name, error, plan.live_tasks)
        if self._retry(failure):
            return
        if failure.kind != FailureKind.TASKS:  # transient, but its retries ran out: the tasks fail
            failure = replace(failure, kind=FailureKind.TASKS)
        log.error("Connector %s: task(s) %s failed to start: %s", self.name, list(failure.tasks), failure.reason)
        self.tasks_failed(failure)

    def on_query_stopped(self, query: RunningQuery) -> None:
        if self.query is query:
            self.query = None
        self.query_state = QueryState.RUNNING if self.query is not None else QueryState.NONE
        after, self._after_stop = self._after_stop, AfterStop.NOTHING
        self._after_stopped(after)

    def on_stop_failed(self, error: BaseException) -> None:
        """Stopping raised: the query is kept (a later pass stops it again) and the connector reported FAILED."""
        self.query_state = QueryState.RUNNING if self.query is not None else QueryState.NONE
        self._after_stop = AfterStop.NOTHING
        self.on_error(error)

    # ------------------------------------------------------------------ statuses

    def _report(self, state: State, failure: Failure | None = None) -> None:
        self.services.reporter.connector(self.name, state, None if failure is None else failure.trace)

    def _report_tasks(self, task_ids: list[int], placement: str | None = None) -> None:
        """FAILED tasks as such; the others RUNNING on their executor: the query's ``placement`` (known as it
        started), else the one that ran the task's last batch, else none yet (UNASSIGNED until a batch names it)."""
        for t in task_ids:
            worker = placement or self.batches.task_workers.get(t)
            if t in self.failed_tasks:
                if t not in self._restarting:  # else RESTARTING stays until the restart is applied
                    self.services.reporter.task(self.name, t, State.FAILED, trace=self.failed_tasks[t].trace)
            elif worker:
                self.services.reporter.task(self.name, t, State.RUNNING, worker)
            else:
                self.services.reporter.unplaced(self.name, t)
        self.services.reporter.remove_tasks_from(self.name, len(task_ids))

    def _report_paused(self) -> None:
        self._report(State.PAUSED)
        for t in self._state.task_ids(self.name):
            self.services.reporter.task(self.name, t, State.PAUSED)

    def _report_stopped(self) -> None:
        """Connect's STOPPED: no query, no instance (nor a reload of it), and an empty set of task configs."""
        state = self._state
        self._stop_instance()
        self.services.reloads.cancel(self.name)
        self.failure = None
        self.failed_tasks.clear()
        if state.task_counts.get(self.name, 0) > 0 or self.name in state.inconsistent:
            self.services.task_configs.write(state, self.name, [])
        self._report(State.STOPPED)
        self.services.reporter.remove_tasks_from(self.name, 0)

    def _report_unassigned(self) -> None:
        tasks = [t for t in range(len(self.desired_task_configs or [])) if t not in self.failed_tasks]
        self._stop_instance()
        try:
            self._report(State.UNASSIGNED)
            for t in tasks:
                self.services.reporter.task(self.name, t, State.UNASSIGNED)
        except StorageError as e:  # shutting down while the status store is unreachable: stop all the same
            log.warning("Connector %s stopped, but its UNASSIGNED status could not be written: %s", self.name, e)

    def close(self) -> None:
        """The instance stops (the lifecycle ends: retired, or released)."""
        self._stop_instance()
