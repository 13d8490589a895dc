"""Makes what runs match what the config log asks for, one connector at a time.

Runs on the herder thread only (``on_batch`` is the exception: it runs on a query's
thread and touches only statuses, offsets and counters).

Queries are started and stopped off the herder thread (``sparkcat.runtime.execution.query_threads``);
until one is done, that connector is left alone. Query plans are built in
``sparkcat.runtime.execution.plan_builder``. Over 400 lines: the split planned (issue 27) moves the restart and
failure handling and ``release_all`` out with the typed connector config, not before it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from sparkcat import plugins, redact
from sparkcat.errors import StorageError
from sparkcat.model.config_state import ClusterConfigState, TargetState
from sparkcat.model.status import State
from sparkcat.policy.config_providers import reverse_transform
from sparkcat.policy.input_policy import InputPolicy
from sparkcat.runtime.execution import fencing
from sparkcat.runtime.execution import plan_builder as plans
from sparkcat.runtime.execution.lifecycle import ConnectorRuntime
from sparkcat.runtime.execution.plan_builder import class_path
from sparkcat.runtime.execution import active_topics
from sparkcat.runtime.execution import sink_groups
from sparkcat.runtime.execution.query_threads import QueryThreads
from sparkcat.runtime.execution.query_runner import QueryRunner
from sparkcat.runtime.execution.reconfiguration import Reconfigurations, with_task_class
from sparkcat.config.sink_guarantees import exactly_once_required
from sparkcat.runtime.execution.recovery import RetryPolicy, auto_restart, report_restarting, restart
from sparkcat.runtime.execution.status_reporter import StatusReporter, format_trace
from sparkcat.config.validation import embedded_sink_config, secret_keys, validate_connector_config
from sparkcat.config.worker import WorkerConfig
from sparkcat.spark.query_plan import BatchResult, QueryPlan, failed_task_ids
from sparkcat.storage.factory import Stores

log = logging.getLogger("sparkcat.herder")


class Reconciler:
    """Starts, pauses, stops and restarts connectors and their queries to match the target state."""

    def __init__(self, stores: Stores, reporter: StatusReporter, runner: QueryRunner, worker: WorkerConfig):
        self.stores = stores
        self.reporter = reporter
        self.runner = runner
        self.worker = worker
        self.policy = InputPolicy.of(worker)
        self.runtimes: dict[str, ConnectorRuntime] = {}
        self._restart_floor = 0
        self._moves_task_writes: dict[str, int] = {}
        self._moves = QueryThreads(runner, self._guarded)
        self.reconfigurations = Reconfigurations()
        self.group_mirror = sink_groups.GroupMirror()  # sinks' positions to their connect-NAME groups

    @property
    def wake(self) -> Callable[[], None]:
        """The herder's: reconcile again once a query started or stopped."""
        return self._moves.wake

    @wake.setter
    def wake(self, wake: Callable[[], None]) -> None:
        self._moves.wake = wake
        self.reconfigurations.wake = wake

    def ignore_restarts_before(self, offset: int) -> None:
        """Restart requests already in the log at start-up were handled by an earlier driver (Connect's rule)."""
        self._restart_floor = offset

    # ------------------------------------------------------------------ the loop

    def reconcile(self, state: ClusterConfigState) -> None:
        """One pass: finish started and stopped queries, then bring every other connector in line."""
        self.finish_pending()
        self._check_queries()
        for name in state.connectors():
            if name not in self._moves:  # else reconciled on a pass after its query started or stopped
                self._guarded(name, lambda n=name: self._reconcile_one(state, n))
        for name in [n for n in self.runtimes if not state.contains(n) and n not in self._moves]:
            self._guarded(name, lambda n=name: self._remove(n))

    def _guarded(self, name: str, action: Callable[[], None]) -> None:
        try:
            action()
        except StorageError:
            raise  # the cluster's stores, not this connector: the herder loop retries the pass (its outage)
        except Exception as e:  # one connector's trouble must not stop the others
            rt = self.runtimes.get(name)
            trace = format_trace(e)
            if rt is not None and rt.retries.retry(name, trace, RetryPolicy.of(rt.config)):
                return  # e.g. Kafka unreachable while its query started: started again after backoff
            tasks = failed_task_ids(name, trace) if rt is not None else []
            if tasks:  # its tasks could not start (e.g. a native sink's query): they are FAILED until restarted
                log.error("Connector %s: task(s) %s failed to start: %s", name, tasks, trace.splitlines()[0])
                for t in tasks:
                    rt.failed_tasks[t] = trace
                    self.reporter.task(name, t, State.FAILED, trace=trace)
                return
            log.exception("Reconciling connector %s failed", name)
            self.reporter.connector(name, State.FAILED, trace)

    def _reconcile_one(self, state: ClusterConfigState, name: str) -> None:
        rt = self._runtime(state, name)
        if rt is None:
            return  # the old config's query is stopping; the new config is taken up once it stopped
        self._handle_restart(state, rt)
        auto_restart(rt, self.reporter, self.worker.auto_restart)  # Strimzi's, for FAILED ones, on its schedule
        if name in self._moves:
            return  # a restart is stopping the query; it starts again on a later pass
        target = state.target_state(name)
        if target == TargetState.STOPPED:
            self._stopped(state, rt)
            return
        if rt.instance is None and rt.failed is None:
            self._start_instance(rt)
        elif rt.instance is not None and self.reconfigurations.take(name):
            rt.desired_task_configs = self._generate(rt, rt.instance, self.resolved_config(rt.config, f"connector {name}"))
        if rt.failed is not None:
            failed = rt.failed
            self._stop_query(rt, then=lambda: self.reporter.connector(name, State.FAILED, failed))
            return
        if not self._task_configs_current(state, rt):
            return
        if target == TargetState.PAUSED:
            self._paused(state, rt)
        else:
            self._running(state, rt)

    def _runtime(self, state: ClusterConfigState, name: str) -> ConnectorRuntime | None:
        """The runtime for the connector's current config; None while the old config's query stops."""
        config = {**state.connector_config(name), "name": name}  # Connect configs always carry their name
        rt = self.runtimes.get(name)
        if rt is None:
            rt = ConnectorRuntime(name, dict(config), last_restart_offset=self._restart_floor - 1)
            self.runtimes[name] = rt
            return rt
        if rt.config == config:
            return rt
        log.info("Connector %s config changed; restarting it", name)
        if not self._stop_query(rt, then=lambda: self._replace_runtime(rt, config)):
            return None
        return self.runtimes[name]

    def _replace_runtime(self, old: ConnectorRuntime, config: dict[str, str]) -> None:
        """After a config change: the old instance goes, a fresh runtime keeps the restart bookkeeping."""
        old.stop_instance()
        if self.runtimes.get(old.name) is old:
            self.runtimes[old.name] = ConnectorRuntime(old.name, dict(config),
                                                       last_restart_offset=old.last_restart_offset)

    # ------------------------------------------------------------------ connector instance

    def _start_instance(self, rt: ConnectorRuntime) -> None:
        try:
            validate_connector_config(rt.config, self.policy).raise_if_invalid(f"connector {rt.name}")
            cls = plugins.connector_class(rt.config["connector.class"], self.policy.plugin_packages)
            resolved = self.resolved_config(rt.config, f"connector {rt.name}")
            instance = cls()
            instance.initialize(self.reconfigurations.context(rt.name, lambda e: setattr(rt, "failed", format_trace(e))))
            instance.start(dict(resolved))
            rt.desired_task_configs = self._generate(rt, instance, resolved)
            rt.instance = instance
            self._start_sink_instance(rt)
            self._check_output(rt)
        except Exception as e:
            rt.failed = format_trace(e)
            rt.stop_instance()
            return
        self.reporter.connector(rt.name, State.RUNNING)
        log.info("Connector %s started on the driver with %d task config(s)", rt.name,
                 len(rt.desired_task_configs))

    def _generate(self, rt: ConnectorRuntime, instance: object, resolved: dict[str, str]) -> list[dict[str, str]]:
        """The connector's task configs now, completed as Connect's Worker does, secrets back as placeholders."""
        max_tasks = rt.settings.tasks_max
        generated = [with_task_class(c, instance, rt.config) for c in instance.task_configs(max_tasks)][:max_tasks]
        return reverse_transform(generated, rt.config, resolved)

    def _start_sink_instance(self, rt: ConnectorRuntime) -> None:
        """For a source with ``sink.*`` keys: the embedded sink's task configs, generated once."""
        sink_config = embedded_sink_config(rt.config)
        if sink_config is None:
            rt.sink = None
            return
        cls = plugins.connector_class(sink_config["connector.class"], self.policy.plugin_packages)
        resolved = self.resolved_config(sink_config, f"connector {rt.name}'s sink")
        sink = cls()
        sink.start(dict(resolved))
        configs = [dict(c) for c in sink.task_configs(max(1, len(rt.desired_task_configs)))]
        rt.sink = (class_path(cls), class_path(sink.task_class()), reverse_transform(configs, sink_config, resolved))
        sink.stop()

    def resolved_config(self, config: dict[str, str], where: str) -> dict[str, str]:
        """``config`` with its provider placeholders resolved, every secret in it remembered for scrubbing."""
        resolved = self.policy.config_providers.resolved(config, where)
        redact.remember_config_secrets(resolved, secret_keys(config, self.policy))
        return resolved

    def _check_output(self, rt: ConnectorRuntime) -> None:
        if plugins.connector_type(type(rt.instance)) == "source" and rt.sink is None \
                and not self.worker.uses_kafka:
            raise RuntimeError(f"connector {rt.name} writes to Kafka but no bootstrap.servers is configured; "
                               f"set bootstrap.servers or name a sink with sink.connector.class")

    # ------------------------------------------------------------------ task configs

    def _task_configs_current(self, state: ClusterConfigState, rt: ConnectorRuntime) -> bool:
        """True when the committed task configs are the ones the connector generated; else write them."""
        desired = rt.desired_task_configs or []
        if rt.name not in state.inconsistent and state.all_task_configs(rt.name) == desired \
                and state.task_counts.get(rt.name) == len(desired):
            self._moves_task_writes.pop(rt.name, None)
            return True
        self._write_task_configs(state, rt.name, desired)
        return False

    def _write_task_configs(self, state: ClusterConfigState, name: str, configs: list[dict[str, str]]) -> None:
        pending = self._moves_task_writes.get(name)
        if pending is not None and state.offset < pending:
            return  # our last write has not come back through the stream yet
        self.stores.config.put_task_configs(name, configs)
        self._moves_task_writes[name] = self.stores.config.last_written_offset()
        log.info("Connector %s: committed %d task config(s)", name, len(configs))

    # ------------------------------------------------------------------ target states

    def _running(self, state: ClusterConfigState, rt: ConnectorRuntime) -> None:
        plan = self._plan(state, rt)
        task_ids = state.task_ids(rt.name)
        if rt.query is not None and rt.query.is_active() and rt.query.plan == plan:
            return
        if rt.query is None and not rt.retries.due():
            return  # a transient failure: the query starts again once its backoff is over
        if not self._stop_query(rt):
            return  # the new query starts once the old one stopped: they share the checkpoint
        self.reporter.connector(rt.name, State.RUNNING)
        live = [t for t in task_ids if t not in rt.failed_tasks]
        if live:
            self._moves.start(rt, plan, lambda: self._report_started(rt, plan, task_ids, len(live)),
                              self._prepare(state, plan))
        else:
            self._report_tasks(rt, task_ids)

    def _prepare(self, state: ClusterConfigState, plan: QueryPlan) -> Callable[[], None]:
        """What runs on the starter thread before ``plan``'s query starts: fence the earlier tasks of an exactly-once
        source or sink (so none commits more, and no transaction of theirs holds back reads of the offsets topic),
        then resume from the cluster's committed positions if they are past this driver's checkpoint
        (``runtime/resume.py``: leadership came back from another driver)."""
        transactional = plan.exactly_once or (plan.connector_type == "sink"
                                              and exactly_once_required(plan.connector_config))
        fence = fencing.zombie_fencing(self.stores.config, plan, state) if transactional else None

        def prepare() -> None:
            if fence is not None:
                fence()
            self.runner.align_checkpoint(self.stores.offsets, plan)

        return prepare

    def _report_started(self, rt: ConnectorRuntime, plan: QueryPlan, task_ids: list[int], live: int) -> None:
        log.info("Connector %s: query %r started with %d task(s) (checkpoint %s)",
                 rt.name, plan.query_name, live, plan.checkpoint_dir)
        self._report_tasks(rt, task_ids)

    def _report_tasks(self, rt: ConnectorRuntime, task_ids: list[int]) -> None:
        for t in task_ids:
            if t in rt.failed_tasks:
                self.reporter.task(rt.name, t, State.FAILED, trace=rt.failed_tasks[t])
            else:
                self.reporter.task(rt.name, t, State.RUNNING, rt.task_workers.get(t))
        self.reporter.remove_tasks_from(rt.name, len(task_ids))

    def _paused(self, state: ClusterConfigState, rt: ConnectorRuntime) -> None:
        self._stop_query(rt, then=lambda: self._report_paused(state, rt))

    def _report_paused(self, state: ClusterConfigState, rt: ConnectorRuntime) -> None:
        self.reporter.connector(rt.name, State.PAUSED)
        for t in state.task_ids(rt.name):
            self.reporter.task(rt.name, t, State.PAUSED)

    def _stopped(self, state: ClusterConfigState, rt: ConnectorRuntime) -> None:
        """Connect's STOPPED: no query, no connector instance, and an empty set of task configs."""
        self._stop_query(rt, then=lambda: self._report_stopped(state, rt))

    def _report_stopped(self, state: ClusterConfigState, rt: ConnectorRuntime) -> None:
        rt.stop_instance()
        rt.failed = None
        rt.failed_tasks.clear()
        if state.task_counts.get(rt.name, 0) > 0 or rt.name in state.inconsistent:
            self._write_task_configs(state, rt.name, [])
        self.reporter.connector(rt.name, State.STOPPED)
        self.reporter.remove_tasks_from(rt.name, 0)

    def _remove(self, name: str) -> None:
        rt = self.runtimes[name]
        self._stop_query(rt, then=lambda: self._forget(rt))

    def _forget(self, rt: ConnectorRuntime) -> None:
        """A deleted connector, its query stopped: its instance, status and checkpoint go."""
        if self.runtimes.get(rt.name) is rt:
            del self.runtimes[rt.name]
        rt.stop_instance()
        self.reporter.remove(rt.name)
        self.runner.delete_checkpoint(self.checkpoint_dir(rt.name))

    # ------------------------------------------------------------------ restarts and failures

    def _handle_restart(self, state: ClusterConfigState, rt: ConnectorRuntime) -> None:
        request = state.restart_requests.get(rt.name)
        if request is None or request.offset <= rt.last_restart_offset:
            return
        rt.last_restart_offset = request.offset
        restart(rt, self.reporter, request.include_tasks, request.only_failed, state.task_ids(rt.name))
        if request.include_tasks and not request.only_failed:
            self._stop_query(rt)

    def report_restarting(self, name: str, include_tasks: bool, only_failed: bool, task_ids: list[int]) -> None:
        """Called by the herder as it accepts a restart request, so a status read after the 202 shows the
        restart (until the restarted query reports RUNNING), not the state from before it."""
        rt = self.runtimes.get(name)
        if rt is not None:
            report_restarting(rt, self.reporter, include_tasks, only_failed, task_ids)

    def restart_task(self, name: str, task: int) -> None:
        """POST /connectors/NAME/tasks/N/restart: clear its failure and restart the query."""
        rt = self.runtimes.get(name)
        if rt is None:
            return
        self.reporter.task(name, task, State.RESTARTING)
        rt.failed_tasks.pop(task, None)
        self._stop_query(rt)

    def _check_queries(self) -> None:
        for rt in self.runtimes.values():
            if rt.query is None or rt.name in self._moves or rt.query.is_active():
                continue
            failure = rt.query.failure()
            rt.query = None
            if failure is None or rt.retries.retry(rt.name, failure, RetryPolicy.of(rt.config)):
                continue  # stopped by us, or a transient error: started again after backoff (_running)
            ids = failed_task_ids(rt.name, failure) or list(range(len(rt.desired_task_configs or [])))
            for t in ids:
                rt.failed_tasks[t] = failure
                rt.progress.task_failed(t, failure)
                self.reporter.task(rt.name, t, State.FAILED, trace=failure)

    # ------------------------------------------------------------------ starting and stopping queries

    def _stop_query(self, rt: ConnectorRuntime, then: Callable[[], None] | None = None,
                    graceful: bool = True) -> bool:
        """``QueryThreads.stop``: True when there was no query (``then`` has run), else False."""
        return self._moves.stop(rt, then, graceful)

    def finish_pending(self, wait: bool = False) -> None:
        """Run what waited for each query start or stop that is done (herder thread); ``wait``: for all."""
        self._moves.finish(wait)

    def stop_all(self) -> None:
        """Driver shutdown: ``release_all``, and no query starts after it."""
        self.release_all()
        self._moves.shutdown()
        self.runner.close()
        self.group_mirror.close()

    def release_all(self, graceful: bool = True) -> None:
        """All queries stop at once, each after its batch (``graceful=False``: now); statuses say nobody runs
        them now; every connector is forgotten (this driver stops leading: started again from the config state
        if it leads again).

        Twice: a query whose start was in flight is stopped once it has started.
        """
        for _ in range(2):
            for rt in list(self.runtimes.values()):
                if rt.query is not None and rt.name not in self._moves:
                    tasks = [t for t in range(len(rt.desired_task_configs or [])) if t not in rt.failed_tasks]
                    self._stop_query(rt, then=lambda rt=rt, tasks=tasks: self._unassigned(rt, tasks), graceful=graceful)
            self.finish_pending(wait=True)
        for rt in self.runtimes.values():
            rt.stop_instance()
        self.runtimes.clear()

    def _unassigned(self, rt: ConnectorRuntime, tasks: list[int]) -> None:
        rt.stop_instance()
        try:
            self.reporter.connector(rt.name, State.UNASSIGNED)
            for t in tasks:
                self.reporter.task(rt.name, t, State.UNASSIGNED)
        except StorageError as e:  # shutting down while the status store is unreachable: stop all the same
            log.warning("Connector %s stopped, but its UNASSIGNED status could not be written: %s", rt.name, e)

    # ------------------------------------------------------------------ plans and batches

    def checkpoint_dir(self, name: str) -> str:
        """The connector's query checkpoint: under ``state/checkpoints``, never derived from the raw name."""
        return plans.checkpoint_dir(self.worker, name)

    def _plan(self, state: ClusterConfigState, rt: ConnectorRuntime) -> QueryPlan:
        return plans.query_plan(state, rt, self.worker, self.policy)

    def on_batch(self, plan: QueryPlan, result: BatchResult) -> None:
        """A batch was written by the sink: record offsets, executors and counters (query thread)."""
        rt = self.runtimes.get(plan.connector)
        offsets = [o for t in result.tasks.values() for o in t.offsets]
        if offsets and not plan.exactly_once and not result.positions_stored:  # else in each task's transaction
            # Written before returning: the batch is not committed by Spark until then, and a
            # reader planning around a failed task reads these. Sink connectors' positions go
            # here too ({"kafka_topic","kafka_partition"} -> {"kafka_offset"}), so the offsets
            # API and a fresh checkpoint both see them after a driver restart.
            self.stores.offsets.put(plan.connector, offsets)
        if offsets and plan.connector_type == "sink":
            self.group_mirror.submit(plan, offsets)
            active_topics.record_sink_topics(self.stores.status, result)
        if rt is not None:
            rt.retries.succeeded(plan.connector)
            rt.progress.add(result)
            if plan.connector_type == "sink":
                for partition, offset in offsets:
                    rt.set_sink_offset(partition, offset)
        for t in result.tasks.values():
            if rt is not None and rt.task_workers.get(t.task) != t.worker_id:
                rt.task_workers[t.task] = t.worker_id
                self.reporter.task(plan.connector, t.task, State.RUNNING, t.worker_id)
        txn = "" if result.transaction_ms is None else \
            f" (exactly once: {result.transaction_ms:.0f} ms of transactions)"
        log.info("Connector %s: batch %d committed with %d record(s) in %.2f s%s", plan.connector,
                 result.batch_id, result.records, result.duration_s, txn)

