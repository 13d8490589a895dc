"""The herder: the only control surface of the cluster, and the loop that makes it so.

REST, CLI and YAML apply call the request methods; each is validated, queued, and
executed by the herder thread, which is the single writer of the config log. The
config log comes back through a follower thread (``on_config_records``) and every
change is reconciled: connectors started on the driver, task configs committed,
one streaming query per connector started, paused, stopped or restarted. The state read from the
config log is ``config_view.ConfigView``; the offsets API is ``offsets_api.ConnectorOffsets``; what
REST may call is ``herder_api.HerderApi``.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from sparkcat import redact
from sparkcat.errors import BadRequestError, ConflictError, FencedError, ForbiddenError, NotFoundError, NotLeaderError
from sparkcat.model.config_state import ClusterConfigState, TargetState
from sparkcat.policy.input_policy import InputPolicy
from sparkcat.runtime.control import status_view
from sparkcat.runtime.control.config_view import ConfigView
from sparkcat.runtime.control.herder_api import REQUEST_TIMEOUT_S
from sparkcat.runtime.control.leader_role import LeaderRole
from sparkcat.runtime.execution.progress import Progress
from sparkcat.runtime.control.logger_levels import ClusterLevels, LoggerLevels
from sparkcat.runtime.leadership import Leadership, Route, SoleLeader, WriteRoute
from sparkcat.config.names import check_connector_name
from sparkcat.runtime.control.offsets_api import ConnectorOffsets
from sparkcat.runtime.execution.reconciler import Reconciler
from sparkcat.runtime.supervision import Outage
from sparkcat.config.validation import java_connector_refusal, validate_connector_config
from sparkcat.storage.factory import Stores
from sparkcat.storage.log import LogRecord

log = logging.getLogger(__name__)

#: A pass when nothing woke the herder: it notices a query Spark ended and a due ttl reload. Each pass looks at
#: every query: at 0.5 s that was a fifth of an idle driver's Python time at 200 connectors.
TICK_S = 1.0


class Herder:
    """Owns the cluster: validates requests, writes the config log, reconciles what runs."""

    def __init__(self, stores: Stores, reconciler: Reconciler, driver_id: str,
                 leadership: Leadership | None = None, loggers: LoggerLevels | None = None):
        """``leadership``: whether this driver leads its cluster (default: alone, always the leader);
        ``loggers``: the driver's logger levels, which cluster-scoped levels in the config log set."""
        self.stores = stores
        self.loggers = loggers or LoggerLevels()
        self._role = LeaderRole(leadership or SoleLeader(), stores, reconciler, driver_id)
        self.reconciler = reconciler
        self.driver_id = driver_id
        self._config = ConfigView()  # the config log as the follower read it
        self._requests: queue.Queue[tuple[Callable[[], Any], Future]] = queue.Queue()
        self._wake = reconciler.wakeup  # set by a query start or stop ending off this thread, and by requests
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._start_offset = 0
        #: Whether the loop's last pass worked (``/health``); a failed pass is retried with backoff.
        self.outage = Outage("The herder")
        #: Called at the start of every pass, before anything that can fail (e.g. the config stream's watchdog).
        self.watches: list[Callable[[], None]] = []
        #: Connect's offsets API (KIP-875) and the active-topics reset, run through this herder.
        self.offsets = ConnectorOffsets(stores, reconciler, self)

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Start the herder thread; requests made before the first reconcile wait for it."""
        self._start_offset = self.stores.config.last_offset() + 1
        self.reconciler.ignore_restarts_before(self._start_offset)
        # logger-cluster- records written from now on set this driver's levels, REST or not (KIP-976)
        self.watches.append(ClusterLevels(self.stores.config.backend.end_offset,
                                          lambda: self.snapshot().logger_levels, self.loggers).apply_new)
        self._thread = threading.Thread(target=self._run, name="sparkcat-herder", daemon=True)
        self._thread.start()

    def wake(self) -> None:
        """Run a pass now rather than at the next tick (e.g. the group promoted or demoted this driver)."""
        self._wake.set()

    def wait_ready(self, timeout_s: float = 120.0) -> bool:
        """True once the config log was read up to where it stood at start."""
        return self._ready.wait(timeout_s)

    @property
    def ready(self) -> bool:
        return self._ready.is_set()

    @property
    def thread_ended(self) -> bool:
        """True when the herder thread ended without being stopped (it never should: see ``_run``)."""
        return self._thread is not None and not self._thread.is_alive() and not self._stop.is_set()

    def stop(self) -> None:
        """Stop every query gracefully (batches in flight finish), then the herder thread."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=120)
        try:
            self.reconciler.stop_all()
        except Exception:  # e.g. the status store is unreachable: the queries are stopped all the same
            log.exception("Stopping the connectors did not finish cleanly")

    def on_config_records(self, records: list[LogRecord]) -> None:
        """Called by the config log follower: apply in log order (``ConfigView``), then reconcile."""
        self._config.apply(records)
        self._wake.set()

    @property
    def rebuilding(self) -> bool:
        """True while a restarted config stream has not yet read as far as the state in use."""
        return self._config.rebuilding

    def config_log_read_to_end(self) -> None:
        """The restarted config stream has read the whole log as it is now (``ConfigView.read_to_end``)."""
        if self._config.read_to_end():
            self._wake.set()

    def rebuild_config_state(self, recreated: bool = False) -> None:
        """The config stream was restarted and reads the log from its beginning again; ``recreated``: the config
        topic was deleted and created again, so the new state replaces the old one only once all of it was read."""
        self._config.rebuild(recreated)

    def _run(self) -> None:
        """Tick until stopped; a pass that raises (a store or broker error) is retried with backoff."""
        pause = TICK_S
        while not self._stop.is_set():
            woken = self._wake.wait(pause)
            self._wake.clear()
            for watch in self.watches:
                try:
                    watch()
                except Exception:  # a watch keeps its own outage; this is a bug in it, not an outage
                    log.exception("A watch of the herder loop failed")
            try:
                self._tick(woken)
            except FencedError as e:  # e.g. a task-config write of the reconciler: a newer leader took over
                self._role.fenced(e)
            except Exception as e:  # noqa: BLE001 - whatever it is, the loop must go on (logged by Outage)
                pause = max(TICK_S, self.outage.failed(e))
            else:
                self.outage.recovered()
                pause = TICK_S

    def _tick(self, woken: bool = True) -> None:
        """``woken``: something happened since the last pass (else the tick's time ran out)."""
        self._role.follow_group(self._start_offset)
        self._drain_requests(self._role.publish(self._read_to()))
        state = self.snapshot()
        if state.offset + 1 >= self._start_offset:
            if self._role.leading and state.offset + 1 >= self._role.lead_from:
                self.reconciler.reconcile(state, woken)
            self._ready.set()

    def _read_to(self) -> int:
        """The next config log offset the herder's state will apply."""
        return self.snapshot().offset + 1

    # ------------------------------------------------------------------ leadership

    @property
    def leadership(self) -> Leadership:
        """The group's decision of who leads (``runtime.leadership``), which the herder follows."""
        return self._role.leadership

    @leadership.setter
    def leadership(self, leadership: Leadership) -> None:
        self._role.leadership = leadership

    @property
    def is_leader(self) -> bool:
        """Whether this driver leads: it alone writes the config log and runs connectors."""
        return self._role.leading

    @property
    def leader_url(self) -> str | None:
        """The leader's REST URL as the group reports it (None while nobody holds the leadership)."""
        return self.leadership.leader_url()

    def write_route(self) -> WriteRoute:
        """What a write made on this driver does now: runs here, goes to the leader, or waits (and why)."""
        return self._role.route(self._read_to())

    def wait_route(self, settled: Callable[[WriteRoute], bool], timeout_s: float) -> WriteRoute:
        """The route once ``settled`` by it (looked at after every pass), or as it is after ``timeout_s``."""
        return self._role.wait_route(self.write_route, settled, timeout_s)

    def wait_role(self, timeout_s: float) -> bool:
        """True once this driver knows whether it leads: it takes writes, or knows another driver that does."""
        return self._role.wait_known(timeout_s)

    def _drain_requests(self, route: WriteRoute) -> None:
        """Run the queued requests as ``route`` says; while it waits they stay queued (each bounds its own wait)."""
        while not route.waits:
            try:
                fn, future = self._requests.get_nowait()
            except queue.Empty:
                return
            if not future.set_running_or_notify_cancel():
                continue  # its caller gave up waiting
            if route.route is Route.FORWARD:
                future.set_exception(NotLeaderError(
                    f"Driver {self.driver_id} is not the leader; send the request to the leader ({route.leader_url})",
                    route.leader_url))
                continue
            try:
                future.set_result(fn())
            except FencedError as e:
                future.set_exception(e)
                self._role.fenced(e)
                route = self._role.route(self._read_to())
            except BaseException as e:  # handed to the caller, who reports it
                future.set_exception(e)

    def run_as_leader(self, fn: Callable[[], Any], timeout_s: float = REQUEST_TIMEOUT_S) -> Any:
        """Run ``fn`` on the herder thread (the single writer, as the leader) and wait for its writes to be read back.

        While no driver takes writes (the group is electing one, or this driver is taking up the leadership) the
        request waits, at most ``timeout_s``; NotLeaderError when another driver leads, or none did in time.
        """
        future: Future = Future()
        self._requests.put((fn, future))
        self._wake.set()
        try:
            result = future.result(timeout=timeout_s)
        except TimeoutError:
            if not future.cancel():  # running on the herder thread: its own outcome, not a missing leader
                raise
            route = self.write_route()
            raise NotLeaderError(f"Driver {self.driver_id} could not take the request within {timeout_s:g} s: "
                                 f"{route.reason or route.describe()}", route.leader_url) from None
        self._await_config_offset(self.stores.config.last_written_offset(), timeout_s)
        return result

    def _await_config_offset(self, offset: int, timeout_s: float) -> None:
        """Wait until the config stream has applied ``offset`` (a write of ours came back), at most ``timeout_s``."""
        self._config.wait_for_offset(offset, timeout_s)

    # ------------------------------------------------------------------ reads

    def snapshot(self) -> ClusterConfigState:
        return self._config.snapshot()

    def connectors(self) -> list[str]:
        return self.snapshot().connectors()

    def connector_config(self, name: str) -> dict[str, str]:
        config = self.snapshot().connector_config(name)
        if config is None:
            raise NotFoundError(f"Connector {name} not found")
        return dict(config)

    def task_configs(self, name: str) -> list[dict[str, str]]:
        state = self.snapshot()
        if not state.contains(name):
            raise NotFoundError(f"Connector {name} not found")
        return state.all_task_configs(name)

    def target_state(self, name: str) -> TargetState:
        state = self.snapshot().target_state(name)
        if state is None:
            raise NotFoundError(f"Connector {name} not found")
        return state

    @property
    def policy(self) -> InputPolicy:
        """The worker's limits on connector configs, as requests are validated against them."""
        return self.reconciler.policy

    def connector_status(self, name: str, state: ClusterConfigState | None = None) -> dict[str, Any]:
        """``GET /connectors/NAME/status``, from ``state`` (a snapshot already taken) or a fresh one."""
        status = status_view.connector_status(name, state or self.snapshot(), self.stores.status,
                                              self.reconciler.policy)
        lc = self.reconciler.lifecycles.get(name)
        auto = lc.auto_restart.status(name) if lc is not None else None
        if auto is not None:  # Strimzi's autoRestart status, a field Connect does not have
            status["autoRestart"] = auto
        return status

    def task_status(self, name: str, task: int) -> dict[str, Any]:
        """``GET /connectors/NAME/tasks/N/status``; 404 for an unknown connector or task."""
        if task not in self.require(name).task_ids(name):
            raise NotFoundError(f"No status found for task {name}-{task}")
        return status_view.task_status(name, task, self.stores.status)

    def active_topics(self, name: str) -> list[str]:
        """The topics the connector used (KIP-558); 403 as in Connect when the worker tracks none."""
        if not self.reconciler.worker.topic_tracking_enable:  # before the connector's 404, as in Connect
            raise ForbiddenError("Topic tracking is disabled.")
        self.require(name)
        return self.stores.status.topics(name)

    def running_connectors(self) -> list[str]:
        """The connectors whose streaming query runs on this driver now (none on a standby)."""
        return sorted(name for name, lc in list(self.reconciler.lifecycles.items())
                      if lc.query is not None and lc.query.is_active())

    def connector_progress(self) -> list[tuple[str, Progress]]:
        """(name, copy of its progress) of every connector this driver runs, by name."""
        lifecycles = sorted(list(self.reconciler.lifecycles.items()))
        return [(name, lc.batches.progress.snapshot(None if lc.query is None else lc.query.query))
                for name, lc in lifecycles]

    # ------------------------------------------------------------------ requests

    def put_connector_config(self, name: str, config: dict[str, str], *, allow_replace: bool = True,
                             initial_state: TargetState | None = None) -> bool:
        """Create or update a connector; True when created. Invalid configs and names never reach the log."""
        check_connector_name(name)
        config = {**{k: str(v) for k, v in config.items()}, "name": name}
        config = redact.keep_hidden_secrets(config, self.snapshot().connector_config(name) or {})
        validate_connector_config(config, self.reconciler.policy).raise_if_invalid(f"connector {name}")
        refusal = java_connector_refusal(config, self.reconciler.policy)
        if refusal is not None:
            raise BadRequestError(f"Connector {name}: {refusal}")

        def write() -> bool:
            exists = self.snapshot().contains(name)
            if exists and not allow_replace:
                raise ConflictError(f"Connector {name} already exists")
            self.stores.config.put_connector_config(name, config, None if exists else initial_state)
            log.info("Connector %s %s", name, "updated" if exists else "created")
            return not exists

        return self.run_as_leader(write)

    def delete_connector(self, name: str) -> None:
        def write() -> None:
            self.require(name)
            self.stores.config.remove_connector_config(name)
            log.info("Connector %s deletion requested", name)

        self.run_as_leader(write)

    def set_target_state(self, name: str, target: TargetState) -> None:
        """Pause, resume or stop (Connect's PUT /pause, /resume, /stop)."""
        def write() -> None:
            self.require(name)
            self.stores.config.put_target_state(name, target)
            log.info("Connector %s target state set to %s", name, target.value)

        self.run_as_leader(write)

    def restart_connector(self, name: str, include_tasks: bool = False, only_failed: bool = False) -> None:
        def write() -> None:
            state = self.require(name)
            self.stores.config.request_restart(name, include_tasks, only_failed)
            self.reconciler.report_restarting(name, include_tasks, only_failed, state.task_ids(name))
            log.info("Restart of %s requested (include tasks: %s, only failed: %s)",
                     name, include_tasks, only_failed)

        self.run_as_leader(write)

    def restart_task(self, name: str, task: int) -> None:
        def act() -> None:
            state = self.require(name)
            if task not in state.task_ids(name):
                raise NotFoundError(f"Task {name}-{task} not found")
            self.reconciler.restart_task(name, task)

        self.run_as_leader(act)

    def connector_offsets(self, name: str) -> list[tuple[dict[str, Any], Any]]:
        return self.offsets.connector_offsets(name)

    def alter_connector_offsets(self, name: str, offsets: list[tuple[Any, Any]]) -> None:
        self.offsets.alter_connector_offsets(name, offsets)

    def reset_connector_offsets(self, name: str) -> None:
        self.offsets.reset_connector_offsets(name)

    def reset_connector_active_topics(self, name: str) -> None:
        """``PUT /connectors/NAME/topics/reset``; 403 as in Connect when the worker tracks none or allows no reset."""
        worker = self.reconciler.worker
        if not worker.topic_tracking_enable:
            raise ForbiddenError("Topic tracking is disabled.")
        if not worker.topic_tracking_allow_reset:
            raise ForbiddenError("Topic tracking reset is disabled.")
        self.offsets.reset_connector_active_topics(name)

    def set_cluster_logger_level(self, namespace: str, level: str) -> None:
        """``PUT /admin/loggers/NAME?scope=cluster``: a ``logger-cluster-`` record every driver on this config log applies."""
        self.stores.config.put_logger_level(namespace, level)

    def require(self, name: str) -> ClusterConfigState:
        """The config state, which holds ``name`` (else NotFoundError)."""
        state = self.snapshot()
        if not state.contains(name):
            raise NotFoundError(f"Connector {name} not found")
        return state

