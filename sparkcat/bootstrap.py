"""Wires the driver together once: stores, herder, config stream, pipelines, REST.

``jobs/connect.py`` calls ``main``; everything below receives what it needs as
arguments, so tests can build a ``Driver`` on their own Spark session and worker config.
"""

from __future__ import annotations

import argparse
import faulthandler
import logging
import os
import signal
import socket
import threading
from collections.abc import Iterable
from pathlib import Path

from sparkcat.errors import ConfigError, StorageError
from sparkcat.redact import SPARK_REDACTION_REGEX
from sparkcat.runtime.control.herder import Herder
from sparkcat.runtime.control.logger_levels import LoggerLevels
from sparkcat.runtime.control.membership import GroupMembership, GroupSettings, StateDirLock
from sparkcat.runtime.leadership import SoleLeader
from sparkcat.runtime.control.config_follower import ConfigFollower
from sparkcat.runtime.control.pipelines import PipelineWatcher
from sparkcat.runtime.execution.batch_accounting import BatchAccounting
from sparkcat.runtime.execution.query_runner import QueryRunner
from sparkcat.runtime.execution.reconciler import Reconciler
from sparkcat.config.rest import check_exposure
from sparkcat.runtime.execution.status_reporter import new_status_reporter
from sparkcat.config.worker import WorkerConfig, load_worker_config
from sparkcat.config.stores import open_stores
from sparkcat.runtime.supervision import install_thread_excepthook, unhealthy_reason
from sparkcat.kafka.admins import drop_admins
from sparkcat.kafka.sink_groups import COMMITTERS
from sparkcat.storage.factory import Stores

log = logging.getLogger("sparkcat.driver")



class Driver:
    """One sparkcat driver: the herder and everything that feeds it."""

    def __init__(self, spark, worker: WorkerConfig, *, rest: bool = True, watch_pipelines: bool = True,
                 stores: Stores | None = None, warm_up: Iterable[str] | None = None):
        """``stores``: the cluster's stores (default: opened from ``worker`` at start; the bench passes its own).
        ``warm_up``: the warm-up's steps (``spark/driver/warm_up.py``; default: ``STANDBY_STEPS`` on a standby,
        ``LEADER_STEPS`` on a leader; the bench picks some to measure what each buys)."""
        from sparkcat.spark.driver.warm_up import check_steps
        self.spark = spark
        self._warm_up_steps = None if warm_up is None else check_steps(warm_up)
        self._leader_warm_up = None  # BackgroundWarmUp: a leader's warm-up thread
        self._given_stores = stores
        self.worker = worker
        self.rest_enabled = rest
        self.watch_pipelines = watch_pipelines
        self.driver_id = f"{socket.gethostname()}:{worker.rest_listeners[0].port}"  # Connect: host:rest port
        self.stores: Stores | None = None
        self.herder: Herder | None = None
        #: Logger levels (``/admin/loggers``); the herder applies cluster-scoped ones from the config log.
        self.loggers = LoggerLevels()
        self.reconciler: Reconciler | None = None
        self.config_follower: ConfigFollower | None = None
        self._watcher: PipelineWatcher | None = None
        self._keep_warm = None  # KeepWarm: a standby's Python workers, run every 30 s
        self.rest_server = None
        self.membership: GroupMembership | None = None
        self._state_lock: StateDirLock | None = None
        #: Set by ``cancel_start``: a driver waiting for the state directory's lock gives up.
        self.start_cancelled = threading.Event()

    def start(self) -> None:
        install_thread_excepthook()  # no thread's exception is lost: logged with its trace
        leadership = self._leadership()
        self.stores = self._given_stores or open_stores(self.worker)
        reporter = new_status_reporter(self.stores, self.driver_id)
        accounting = BatchAccounting(self.stores, reporter, self.worker.topic_tracking_enable)
        runner = QueryRunner(self.spark, accounting, leadership, self.stores.offsets)
        self.reconciler = Reconciler(self.stores, reporter, runner, self.worker, accounting,
                                     java_plugins=self._java_plugins())
        self.herder = Herder(self.stores, self.reconciler, self.driver_id, leadership, self.loggers)
        if self.membership is not None:
            herder = self.herder
            # promoted or demoted: the herder acts at once, and the JVM writers' lease follows
            self.membership.on_change = lambda: (herder.wake(), runner.publish_lease())
            self.membership.start()
        self.herder.start()
        self.config_follower = ConfigFollower(self.worker, self.herder, appended=self.stores.config.appended)
        self.config_follower.start()
        self.herder.watches.append(self.config_follower.check)  # restarted with backoff whenever it ends
        log.info("Driver %s started (stores: %s)", self.driver_id,
                 self.worker.bootstrap_servers or f"local directory {Path(self.worker.state_dir).resolve()}")
        if self.rest_enabled:
            self._start_rest()
        if not self.herder.wait_ready():
            log.warning("The config log was not read within the start-up timeout; continuing")
        if not self.herder.wait_role(self.worker.session_timeout_ms / 1000 + 30):
            log.warning("The group chose no leader within the start-up timeout; continuing as a standby")
        if self.spark is not None:
            self._warm_up()
            from sparkcat.spark.driver.warm_up import KeepWarm
            reconciler = self.reconciler
            # Python workers idle for a minute end: kept while standing by, or leading no connector yet
            self._keep_warm = KeepWarm(self.spark, lambda: not self.herder.is_leader or not reconciler.lifecycles)
            self._keep_warm.start()
        if self.watch_pipelines:
            variables = {"state.dir": str(Path(self.worker.state_dir).resolve())}
            self._watcher = PipelineWatcher(self.herder, self.worker.pipelines_dir, variables=variables)
            self._watcher.start()

    def _java_plugins(self):
        """Kafka Connect's Java plugins on the worker's plugin.path, scanned from now on (None without one)."""
        if not self.worker.plugin_path or self.spark is None:
            return None
        from sparkcat.spark.driver.connect_host import JavaPlugins
        return JavaPlugins(self.spark, self.worker.plugin_path, self.worker.plugin_discovery,
                           topic_creation=self.worker.topic_creation_enable)

    def _warm_up(self) -> None:
        """Ready what a first connector would otherwise wait for (``spark/driver/warm_up.py``), writing nowhere
        a user sees. A standby runs it before it stands by, and starts the status store's producer (a promoted
        driver's first status write, 0.7 s measured, is on the way to its first query start); a leader runs
        its part in the background, so ``/health`` and the first POST do not wait for it."""
        from sparkcat.spark.driver.warm_up import (LEADER_STEPS, STANDBY_STEPS, BackgroundWarmUp, describe,
                                                   warm_up)

        places, chosen = self._warm_up_places(), self._warm_up_steps
        if self.herder.is_leader:
            self._leader_warm_up = BackgroundWarmUp(self.spark, places, LEADER_STEPS if chosen is None else chosen,
                                                    busy=self.reconciler.services.runner.first_batches.waiting)
            self._leader_warm_up.start()
            return
        try:
            took = warm_up(self.spark, places, STANDBY_STEPS if chosen is None else chosen)
            start_writer = getattr(self.stores.status.backend, "start_writer", None)
            if start_writer is not None:
                start_writer()
            log.info("Standby warmed up in %s and the status producer", describe(took))
        except Exception as e:  # noqa: BLE001 - only slower failover; the standby works without it
            log.warning("Warming up the standby failed: %s", e)

    def wait_warmed_up(self, timeout_s: float) -> bool:
        """Wait until a leader's background warm-up has ended (true at once on a standby, which warms up before it
        stands by); False if it still ran after ``timeout_s``. Benchmarks wait so that what they time is not it."""
        warm = self._leader_warm_up
        return warm is None or warm.done.wait(timeout_s)

    def _warm_up_places(self):
        """The warm-up's query checkpoint and scratch Delta table: reserved names under the checkpoint root."""
        from sparkcat.config.names import WARM_UP_QUERY, dir_name
        from sparkcat.policy import paths
        from sparkcat.spark.driver.warm_up import WarmUpPlaces

        own = f"_{WARM_UP_QUERY}-{dir_name(self.driver_id)}"
        return WarmUpPlaces(WARM_UP_QUERY, str(paths.child_path(self.worker.checkpoint_root, own)),
                            str(paths.child_path(self.worker.checkpoint_root, f"{own}-delta")),
                            self.worker.bootstrap_servers or "", self.worker.config_topic or "")

    @property
    def url(self) -> str:
        """This driver's REST URL as other drivers reach it (a wildcard host is advertised as the host name)."""
        listener = self.worker.rest_listeners[0]
        host = listener.host if listener.host not in ("", "0.0.0.0", "::") else socket.gethostname()
        return f"{listener.scheme}://{host}:{listener.port}"

    def _leadership(self):
        """Kafka stores: a member of the cluster's group. Local stores: the state directory's lock (waits as a
        standby while another driver holds it). Stores given by the caller: the only driver."""
        if self._given_stores is not None:
            return SoleLeader(self.url)
        if not self.worker.uses_kafka:
            self._state_lock = StateDirLock(self.worker.state_dir)
            self._state_lock.acquire(self.start_cancelled)
            return SoleLeader(self.url)
        w = self.worker
        self.membership = GroupMembership(GroupSettings(
            w.bootstrap_servers, w.group_id, w.config_topic, self.url, w.session_timeout_ms,
            w.heartbeat_interval_ms, w.rebalance_timeout_ms, tuple(sorted(w.kafka.items()))))
        return self.membership

    def _start_rest(self) -> None:
        try:
            from sparkcat.rest.server import RestServer
        except ImportError:
            log.info("REST API not available in this build")
            return
        self.rest_server = RestServer(self)
        self.rest_server.start()

    def health_problem(self) -> str | None:
        """Why the driver is not live (``/health`` answers 503 with it), or None."""
        return unhealthy_reason(self.herder, self.config_follower.outage if self.config_follower else None,
                                self.membership.outage if self.membership else None)

    def __enter__(self) -> Driver:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        """Graceful: pipelines stop, queries finish their batch and stop, stores close."""
        log.info("Driver %s stopping", self.driver_id)
        if self._watcher:
            self._watcher.stop()
        if self._keep_warm is not None:
            self._keep_warm.stop()
        if self._leader_warm_up is not None:
            self._leader_warm_up.stop()
        if self.herder:
            self.herder.stop()
        drop_admins()  # the queries' metadata clients: left open they would reconnect to Kafka for ever
        COMMITTERS.drop_all()  # the sinks' group committers, likewise
        if self.membership is not None:  # after the queries stopped: a standby takes over at once
            self.membership.stop()
        if self.config_follower is not None:
            self.config_follower.stop()
        if self.rest_server is not None:
            self.rest_server.stop()
        if self.stores:
            self.stores.close()
        if self._state_lock is not None:
            self._state_lock.release()
        log.info("Driver %s stopped", self.driver_id)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="jobs/connect.py", description="The sparkcat driver")
    p.add_argument("--worker-config", help="worker YAML (default conf/worker.yaml when present)")
    p.add_argument("--bootstrap-servers", help="Kafka for the stores and records; empty for local stores")
    p.add_argument("--state-dir", help="checkpoints, local stores and logs")
    p.add_argument("--pipelines", dest="pipelines_dir", help="directory of YAML connector specs")
    p.add_argument("--rest-port", type=int)
    p.add_argument("--rest-host")
    p.add_argument("--group-id")
    p.add_argument("--no-rest", action="store_true", help="do not start the REST API")
    return p.parse_args(argv)


def worker_from_args(args: argparse.Namespace) -> WorkerConfig:
    path = args.worker_config or ("conf/worker.yaml" if Path("conf/worker.yaml").exists() else None)
    worker = load_worker_config(path)
    if worker.rest_security.listeners and (args.rest_host is not None or args.rest_port is not None):
        raise ConfigError(f"--rest-host/--rest-port cannot be used with the listeners key of {path}: "
                          f"listeners replaces rest.host/rest.port", {"listeners": ["conflicts with the flags"]})
    return worker.with_overrides(
        bootstrap_servers=args.bootstrap_servers, state_dir=args.state_dir, pipelines_dir=args.pipelines_dir,
        rest_port=args.rest_port, rest_host=args.rest_host, group_id=args.group_id)


def _preflight_rest(worker: WorkerConfig) -> None:
    check_exposure(worker.rest_security, worker.rest_listeners)
    try:
        from sparkcat.rest.server import preflight
    except ImportError:  # a build without the rest extra: _start_rest says so
        return
    preflight(worker)


def configure_logging() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for noisy in ("py4j", "sparkcat.storage.kafka.client"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    # py4j logs every exception raised in foreachBatch, including the deliberate QueryStopping
    # of a graceful stop; real failures reach us through the query's exception instead.
    logging.getLogger("py4j.clientserver").setLevel(logging.CRITICAL)


def _session(worker: WorkerConfig):
    """The driver's SparkSession, with sparkcat's fair-scheduler pools unless spark-submit chose a mode."""
    from pyspark import SparkConf, SparkContext
    from pyspark.sql import SparkSession

    from sparkcat.spark.driver.pools import scheduler_conf
    from sparkcat.spark.driver.session_tuning import tune_session
    from sparkcat.spark.driver.ui import ui_conf

    SparkContext._ensure_initialized()  # so SparkConf() sees spark-submit's --conf settings
    builder = SparkSession.builder.appName("sparkcat")
    submitted = dict(SparkConf().getAll())
    if submitted.get("spark.redaction.regex") is None:  # connector configs travel in data source options
        builder = builder.config("spark.redaction.regex", SPARK_REDACTION_REGEX)
    if submitted.get("spark.scheduler.mode") is None:
        for key, value in scheduler_conf(Path(worker.state_dir) / "spark").items():
            builder = builder.config(key, value)
    for key, value in ui_conf(submitted).items():  # kill links off even without conf/spark-defaults.conf
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    tune_session(spark)  # stage ids (FAIR only: ours, or a mode spark-submit chose); local checkpoint writes
    return spark


def main(argv: list[str] | None = None) -> int:
    configure_logging()
    args = parse_args(argv)
    try:
        worker = worker_from_args(args)
        if not args.no_rest:  # refuse an exposed, unauthenticated or misconfigured REST API before Spark starts
            _preflight_rest(worker)
    except ConfigError as e:
        log.error("sparkcat cannot start: %s", e.message)
        return 2
    # kill -QUIT prints every Python thread's stack to stderr and the driver goes on, as a JVM does
    # (spark-submit's JVM starts this process with SIGQUIT blocked: unblocked first, before any thread starts)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGQUIT})
    faulthandler.register(signal.SIGQUIT, all_threads=True)
    spark = _session(worker)
    driver = Driver(spark, worker, rest=not args.no_rest)
    stopping = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):  # also ends a standby's wait for the state directory's lock
        signal.signal(sig, lambda *_: (stopping.set(), driver.start_cancelled.set()))
    pid_file = os.environ.get("SPARKCAT_PID_FILE")
    if pid_file:  # spark-submit.sh forwards SIGTERM/Ctrl-C here instead of to the JVM
        Path(pid_file).write_text(str(os.getpid()))
    try:
        driver.start()
    except StorageError:
        if not driver.start_cancelled.is_set():
            raise
        log.info("Stopped while waiting as a standby")  # SIGTERM before the state directory's lock was free
        spark.stop()
        return 0
    log.info("sparkcat is running; Spark UI at %s; stop with Ctrl-C or SIGTERM", spark.sparkContext.uiWebUrl)
    while not stopping.wait(1.0):
        pass
    driver.stop()
    spark.stop()
    return 0
