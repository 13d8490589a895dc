"""Makes what runs match what the config log asks for: a loop over one ``ConnectorLifecycle`` per connector.

Runs on the herder thread. Each pass first delivers the query starts and stops that ended off the
herder thread (``QueryThreads``) and the queries Spark ended, then hands every connector's lifecycle
the config state (``apply``). The reconciler itself only creates lifecycles, retires them (a deleted
connector, a changed config), takes away the retired ones, and releases them all when this driver
stops leading.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from sparkcat.config.worker import WorkerConfig
from sparkcat.errors import ConflictError, StorageError
from sparkcat.kafka.sink_groups import sink_group_id
from sparkcat.model.config_state import ClusterConfigState
from sparkcat.model.status import State
from sparkcat.plugins import JavaPluginCatalog
from sparkcat.policy.input_policy import InputPolicy
from sparkcat.runtime.execution import plan_builder
from sparkcat.runtime.execution.batch_accounting import BatchAccounting
from sparkcat.runtime.execution.failures import Failure, format_trace
from sparkcat.runtime.execution.lifecycle import ConnectorLifecycle
from sparkcat.runtime.execution.query_runner import QueryRunner
from sparkcat.runtime.execution.query_threads import QueryThreads
from sparkcat.runtime.execution.reconfiguration import Reconfigurations
from sparkcat.runtime.execution.services import ExecutionServices
from sparkcat.runtime.execution.status_reporter import StatusReporter
from sparkcat.runtime.execution.task_configs import TaskConfigWrites
from sparkcat.storage.factory import Stores

log = logging.getLogger(__name__)

#: With nothing new (no config record, request, query start, stop or end, connector event), every connector is
#: brought in line this often rather than at every tick: what is left to notice then runs on clocks (a retry's
#: backoff, an automatic restart), and a pass over hundreds of steady connectors was most of an idle driver's
#: Python time. Such a pass skips the settled ones (``ConnectorLifecycle.settled``: nothing on a clock). The
#: queries' ends are still looked at on every tick.
STEADY_PASS_S = 2.0


class Reconciler:
    """Starts, pauses, stops and restarts connectors and their queries to match the target state.

    ``wakeup`` is set whenever a pass should run without waiting for the herder's tick (a query started or
    stopped, a connector asked for new task configs); the herder loop waits on it. ``accounting`` must be the
    one ``runner`` reports batches to (by default a new one, for a runner that reports none); ``java_plugins``: the
    Java connectors on the worker's plugin.path, if it has one.
    """

    def __init__(self, stores: Stores, reporter: StatusReporter, runner: QueryRunner, worker: WorkerConfig,
                 accounting: BatchAccounting | None = None, wakeup: threading.Event | None = None,
                 java_plugins: JavaPluginCatalog | None = None):
        self.wakeup = wakeup or threading.Event()
        self.accounting = accounting or BatchAccounting(stores, reporter)
        self.services = ExecutionServices(stores, reporter, runner, QueryThreads(runner, self.wakeup), worker,
                                          InputPolicy.of(worker, java_plugins), Reconfigurations(self.wakeup),
                                          TaskConfigWrites(stores.config))
        self.lifecycles: dict[str, ConnectorLifecycle] = {}
        self._restart_floor = 0
        self._restart_offsets: dict[str, int] = {}  # of a replaced config's lifecycle, for its successor
        self._last_pass: tuple[int, float] | None = None  # (config state offset, monotonic time) of the last pass

    @property
    def worker(self) -> WorkerConfig:
        return self.services.worker

    @worker.setter
    def worker(self, worker: WorkerConfig) -> None:
        self.services.worker = worker

    @property
    def policy(self) -> InputPolicy:
        return self.services.policy

    @property
    def reporter(self) -> StatusReporter:
        return self.services.reporter

    @property
    def runner(self) -> QueryRunner:
        return self.services.runner

    def ignore_restarts_before(self, offset: int) -> None:
        """Restart requests already in the log at start-up were handled by an earlier driver (Connect's rule)."""
        self._restart_floor = offset

    def promoted(self) -> None:
        """This driver leads from now on: its statuses take a generation newer than any stored."""
        self.reporter.next_generation()

    # ------------------------------------------------------------------ the loop

    def reconcile(self, state: ClusterConfigState, woken: bool = True) -> None:
        """One pass: deliver ended starts, stops and queries, then bring every connector in line; ``woken=False``
        (the herder's tick ran out with nothing new) does the latter only every ``STEADY_PASS_S``."""
        moved = self.finish_pending()
        ended = self._check_queries()
        moved += self._fire_reloads()
        now = time.monotonic()
        news = woken or moved or ended or self._last_pass is None or self._last_pass[0] != state.offset
        if not (news or now - self._last_pass[1] >= STEADY_PASS_S):
            return
        for name in state.connectors():
            lc = self.lifecycles.get(name)
            # a busy one is reconciled on a pass after its query started or stopped; a settled one waits for news
            if lc is None or not (lc.busy or (not news and lc.settled)):
                self._guarded(name, lambda n=name: self._reconcile_one(state, n))
        for name in [n for n, lc in self.lifecycles.items() if not state.contains(n) and not lc.busy]:
            self._guarded(name, lambda n=name: self._retire(self.lifecycles[n], deleted=True))
        self._last_pass = (state.offset, now)  # not when a store failed the pass: the next tick does it again

    def _fire_reloads(self) -> int:
        """Restart each connector whose config provider ttl ended (``config_reloads``); how many. One whose query
        is starting or stopping is restarted on a later tick; one not run here has its reloads dropped."""
        fired = 0
        for name, paths in self.services.reloads.due().items():
            lc = self.lifecycles.get(name)
            if lc is None:
                self.services.reloads.cancel(name)
            elif not lc.busy:
                self.services.reloads.fired(name, paths)
                self._guarded(name, lc.reload)
                fired += 1
        return fired

    def _guarded(self, name: str, action: Callable[[], Any]) -> None:
        try:
            action()
        except StorageError:
            raise  # the cluster's stores, not this connector: the herder loop retries the pass (its outage)
        except Exception as e:  # one connector's trouble must not stop the others
            lc = self.lifecycles.get(name)
            if lc is not None:
                lc.on_error(e)
                return
            log.exception("Reconciling connector %s failed", name)
            self.reporter.connector(name, State.FAILED, format_trace(e))

    def _reconcile_one(self, state: ClusterConfigState, name: str) -> None:
        lc = self._lifecycle(state, name)
        if lc is not None:  # else the old config's query is stopping; the new config is taken up once it stopped
            lc.apply(state)

    def _lifecycle(self, state: ClusterConfigState, name: str) -> ConnectorLifecycle | None:
        """The lifecycle of the connector's current config; None while the old config's query stops."""
        config = {**state.connector_config(name), "name": name}  # Connect configs always carry their name
        config = self.policy.with_worker_converters(config)  # what it runs with: the worker's converters
        lc = self.lifecycles.get(name)
        if lc is not None and lc.config != config:
            log.info("Connector %s config changed; restarting it", name)
            if not self._retire(lc, deleted=False):
                return None  # its query stops first; the new config is taken up on a pass after that
            lc = None
        if lc is None:
            offset = self._restart_offsets.pop(name, self._restart_floor - 1)  # a replaced one's restarts stay done
            lc = self.lifecycles[name] = ConnectorLifecycle(name, dict(config), self.services,
                                                            self.accounting.track(name), last_restart_offset=offset)
        return lc

    def _retire(self, lc: ConnectorLifecycle, deleted: bool) -> bool:
        """Retire ``lc`` (its query stops first) and take it away once retired; True when it is gone."""
        lc.deleted = lc.deleted or deleted
        if lc.retire():
            self._take_away(lc)
        return lc.retired

    def _take_away(self, lc: ConnectorLifecycle) -> None:
        """A retired lifecycle goes; a deleted connector's status and checkpoint go with it."""
        if self.lifecycles.get(lc.name) is lc:
            del self.lifecycles[lc.name]
        self.accounting.forget(lc.name, lc.batches)
        if lc.deleted:
            self.reporter.remove(lc.name)
            if self.worker.uses_kafka:
                self.accounting.group_mirror.forget(sink_group_id(lc.name, lc.config))
            self.services.runner.delete_checkpoint(self.checkpoint_dir(lc.name))
        else:
            self._restart_offsets[lc.name] = lc.last_restart_offset

    def _check_queries(self) -> int:
        """Queries Spark ended since the last pass: each failure read from Spark's text once, here; how many."""
        ended = 0
        for lc in list(self.lifecycles.values()):
            query = lc.query
            if query is None or lc.busy or query.is_active():
                continue
            text = query.failure()
            lc.on_query_ended(None if text is None else Failure.of_query(lc.name, text, query.plan.live_tasks))
            ended += 1
        return ended

    def finish_pending(self, wait: bool = False) -> int:
        """Deliver each query start or stop that ended (herder thread); ``wait``: for all in flight; how many."""
        moved = 0
        while (move := self.services.threads.next_done(wait)) is not None:
            self._guarded(move.owner.name, move.deliver)
            moved += 1
            lc = move.owner
            if isinstance(lc, ConnectorLifecycle) and lc.retired:
                self._take_away(lc)
        return moved

    # ------------------------------------------------------------------ requests

    def report_restarting(self, name: str, include_tasks: bool, only_failed: bool, task_ids: list[int]) -> None:
        """Called by the herder as it accepts a restart request, so a status read after the 202 shows the
        restart (until the restarted query reports RUNNING), not the state from before it."""
        lc = self.lifecycles.get(name)
        if lc is not None:
            lc.report_restarting(include_tasks, only_failed, task_ids)

    def restart_task(self, name: str, task: int) -> None:
        """POST /connectors/NAME/tasks/N/restart: clear its failure and restart the query."""
        lc = self.lifecycles.get(name)
        if lc is not None:
            lc.restart_task(task)

    # ------------------------------------------------------------------ what the offsets API needs

    def halt(self, name: str, state: ClusterConfigState) -> None:
        """Make sure a STOPPED connector's query is gone before its offsets change (ConflictError while it stops)."""
        self.finish_pending()
        self._check_queries()
        lc = self.lifecycles.get(name)
        if lc is not None and not lc.busy:
            self._guarded(name, lambda: self._reconcile_one(state, name))
        lc = self.lifecycles.get(name)
        if lc is not None and lc.query is not None:
            raise ConflictError(f"Connector {name} is still stopping; try again shortly")

    def sink_positions(self, name: str) -> list[tuple[dict, Any]]:
        """The positions the sink's queries committed while this driver ran them."""
        batches = self.accounting.of(name)
        return [] if batches is None else list(batches.sink_offsets.values())

    def positions_replaced(self, name: str, positions: list[tuple[dict, Any]] | None) -> None:
        """An offsets request altered (``positions``) or reset (None) a stopped sink's positions."""
        batches = self.accounting.of(name)
        if batches is None:
            return
        if positions is None:
            batches.sink_offsets.clear()
        for partition, offset in positions or []:
            batches.set_sink_offset(partition, offset)

    def discard_group_commits(self, group: str) -> None:
        """No late batch commit may reach the sink's group after an offsets request rewrote it."""
        self.accounting.group_mirror.discard(group)

    def resolved_config(self, config: dict[str, str], where: str) -> dict[str, str]:
        return self.services.resolved_config(config, where)

    def drop_checkpoint(self, name: str) -> None:
        self.services.runner.delete_checkpoint(self.checkpoint_dir(name))

    def checkpoint_dir(self, name: str) -> str:
        """The connector's query checkpoint: under ``state/checkpoints``, never derived from the raw name."""
        return plan_builder.checkpoint_dir(self.worker, name)

    # ------------------------------------------------------------------ shutdown and demotion

    def stop_all(self) -> None:
        """Driver shutdown: ``release_all``, and no query starts after it."""
        self.release_all()
        self.services.threads.shutdown()
        self.services.runner.close()
        self.accounting.close()

    def release_all(self, graceful: bool = True) -> None:
        """All queries stop at once, each after its batch (``graceful=False``: now); statuses say nobody runs
        them now; every connector is forgotten (this driver stops leading: started again from the config state
        if it leads again).

        Twice: a query whose start was in flight is stopped once it has started.
        """
        for _ in range(2):
            for lc in list(self.lifecycles.values()):
                if not lc.busy:
                    lc.release(graceful)
            self.finish_pending(wait=True)
        for lc in self.lifecycles.values():
            lc.close()
            self.accounting.forget(lc.name, lc.batches)
        self.lifecycles.clear()
        self.services.reloads.clear()  # another driver leads: its own starts schedule them again
