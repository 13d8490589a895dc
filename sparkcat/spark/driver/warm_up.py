"""A standby's warm-up: one tiny query of the kind its promotion starts, which writes nowhere.

Most of a promoted standby's first batch goes to the executors' Python workers importing pyarrow,
confluent-kafka and sparkcat's executor modules (seconds for the first ``mapInArrow``, tenths after) and to
the JVM classes of a source's micro-batch. A standby runs a stream of the built-in ``increment`` source
(``planned_source``; no offsets store, no Kafka) with a ``foreachBatch`` that maps its first batch through
``_import_handler_modules`` (the one function here that runs on executors) and collects nothing, then stops
the query. Spark keeps idle Python workers for reuse only for a minute, so ``KeepWarm`` runs one tiny job
through them every ``KEEP_WARM_S`` while the driver stands by or runs no connector (JVM classes, once loaded,
stay).

``warm_up`` runs named steps (``WARM_UP_STEPS``): the query above (``stream``), the Python workers alone
(``python_workers``), and the native sinks' first use (``spark/driver/warm_writers.py``: a Kafka stream into
Spark's ``noop`` sink, Spark's Kafka writer, Delta's writer). A standby runs ``STANDBY_STEPS`` before it stands by; a leader runs ``LEADER_STEPS`` in
a thread of its own (``BackgroundWarmUp``), so its REST API answers and connectors start meanwhile, once per
SparkContext, with no query in the driver's session (the Kafka stream's is in a session of its own).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from sparkcat.errors import ConfigError, ConnectorError
from sparkcat.spark.driver import hadoop_fs, warm_writers
from sparkcat.spark.query_plan import QueryPlan
from sparkcat.spark.driver.pools import CONNECTORS_POOL, in_pool

__all__ = ["warm_up_plan", "run_warm_up", "touch_workers", "KeepWarm", "KEEP_WARM_S", "WARM_UP_STEPS",
           "LEADER_STEPS", "STANDBY_STEPS", "WarmUpPlaces", "warm_up", "check_steps", "BackgroundWarmUp"]

log = logging.getLogger("sparkcat.driver")

_INCREMENT = "sparkcat.connectors.increment"
#: How often a standby runs its workers; below Spark's one-minute idle timeout of Python workers.
KEEP_WARM_S = 30.0
#: At most this many Python workers are kept warm (one Spark task each; a connector task uses two).
MAX_WARM_WORKERS = 8


def warm_up_plan(name: str, checkpoint_dir: str) -> QueryPlan:
    """One ``increment`` task of one record per batch, reading and writing nothing outside Spark."""
    task_config = {"increments": "1", "records.per.poll": "1", "topic.prefix": "warm-up_", "throughput": "-1"}
    return QueryPlan(connector=name, connector_type="source",
                     connector_class=f"{_INCREMENT}:IncrementSourceConnector",
                     task_class=f"{_INCREMENT}:IncrementSourceTask", connector_config={},
                     task_configs=[task_config], checkpoint_dir=checkpoint_dir, trigger_interval_ms=100)


def _import_handler_modules(batches: Any) -> Any:
    """Executor: import what the connector handlers' Python workers import, read the batch, yield nothing.

    It lingers a moment, so concurrent tasks hold different workers and a wave reaches as many as it has tasks.
    """
    import sparkcat.spark.executor.connector_source  # noqa: F401 - imported for its side effect: a warm worker
    import sparkcat.spark.executor.sink_tasks  # noqa: F401
    import sparkcat.spark.executor.source_to_kafka  # noqa: F401
    import sparkcat.spark.executor.source_txn  # noqa: F401
    for _ in batches:
        pass
    time.sleep(0.05)
    return iter(())


def run_warm_up(spark: Any, name: str, checkpoint_dir: str, timeout_s: float = 120.0,
                stopping: Callable[[], bool] = lambda: False) -> float | None:
    """Run the warm-up query ``name`` (reserved in runtime/names.py) until its first batch is done,
    stop it, delete its checkpoint; the seconds taken, or None when ``stopping()`` ended it first."""
    from sparkcat.spark.driver.queries import register_sources, read_stream

    started = time.monotonic()
    done: list[int] = []

    def first_batch(batch_df: Any, batch_id: int) -> None:
        if not done:
            batch_df.mapInArrow(_import_handler_modules, "n INT").collect()
            done.append(batch_id)

    register_sources(spark)
    hadoop_fs.delete(spark, checkpoint_dir)
    with in_pool(spark, CONNECTORS_POOL):
        query = (read_stream(spark, warm_up_plan(name, checkpoint_dir)).writeStream.foreachBatch(first_batch)
                 .queryName(name).option("checkpointLocation", checkpoint_dir)
                 .trigger(processingTime="100 milliseconds").start())
    try:
        while not done and query.isActive and time.monotonic() - started < timeout_s and not stopping():
            time.sleep(0.05)
    finally:
        query.stop()
        hadoop_fs.delete(spark, checkpoint_dir)
    if not done and stopping():
        return None
    if not done:
        error = query.exception()
        raise ConnectorError(f"the warm-up query ended before its first batch: {error}")
    touch_workers(spark)  # the data source's reader workers get the handlers' imports too
    return time.monotonic() - started


def touch_workers(spark: Any) -> None:
    """One job of ``MAX_WARM_WORKERS`` Spark tasks, each importing the handlers in the Python worker it gets.

    Spark hands idle workers out oldest first, and a task holds its worker a moment, so the job's waves of
    concurrent tasks reach every idle worker up to that many (and keep each from its idle timeout): a source
    connector's batch uses two per task (its reading, then its handler).
    """
    n = max(2, MAX_WARM_WORKERS)
    with in_pool(spark, CONNECTORS_POOL):
        spark.range(0, n, 1, n).mapInArrow(_import_handler_modules, "n INT").collect()


class KeepWarm:
    """A thread running ``touch_workers`` every ``period_s`` while ``standing_by()`` says the driver stands by."""

    def __init__(self, spark: Any, standing_by: Callable[[], bool], period_s: float = KEEP_WARM_S):
        self.spark, self.standing_by, self.period_s = spark, standing_by, period_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="sparkcat-keep-warm", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def _run(self) -> None:
        while not self._stop.wait(self.period_s):
            if not self.standing_by():
                continue
            try:
                touch_workers(self.spark)
            except Exception as e:  # noqa: BLE001 - only a slower failover; tried again next period
                log.debug("Keeping the standby's Python workers warm failed: %s", e)


#: Every step a warm-up can run, in the order it runs them.
WARM_UP_STEPS = ("stream", "python_workers", "kafka_stream", "kafka_writer", "delta")
#: A standby's (``stream`` ends with ``touch_workers``: ``python_workers`` would repeat it).
STANDBY_STEPS = ("stream", "kafka_stream", "kafka_writer", "delta")
#: A leader's: no query in the driver's session (``kafka_stream`` runs in one of its own; the standby's
#: ``stream`` adds one to the driver's, for the JVM classes of a source's micro-batch).
LEADER_STEPS = ("python_workers", "kafka_stream", "kafka_writer", "delta")
#: SparkContexts (application ids) whose leader warm-up ran: JVM classes and first-use set-up stay warm.
_WARMED: set[str] = set()


def check_steps(steps: Iterable[str]) -> tuple[str, ...]:
    """``steps`` as a tuple in run order; a ``ConfigError`` naming any step that does not exist."""
    steps = tuple(steps)
    unknown = [s for s in steps if s not in WARM_UP_STEPS]
    if unknown:
        raise ConfigError(f"warm_up: unknown step(s) {', '.join(unknown)}; the steps are {', '.join(WARM_UP_STEPS)}")
    return tuple(s for s in WARM_UP_STEPS if s in steps)


@dataclass(frozen=True)
class WarmUpPlaces:
    """Where a warm-up may read and write: its query (name, checkpoint) and scratch Delta table, both deleted
    after use, and the stores' Kafka (``bootstrap_servers`` empty: local stores, no Kafka steps)."""

    query_name: str
    checkpoint_dir: str
    scratch_dir: str
    bootstrap_servers: str = ""
    config_topic: str = ""


def warm_up(spark: Any, places: WarmUpPlaces, steps: Iterable[str] = WARM_UP_STEPS,
            stopping: Callable[[], bool] = lambda: False,
            busy: Callable[[], bool] = lambda: False) -> dict[str, float]:
    """Run ``steps`` in order until ``stopping()``; the seconds each step that ran took. A step that fails is
    logged and skipped: without it only a first batch is slower. While ``busy()`` (a connector's query started
    and has not finished its first batch) no step starts, and a step's query ends early: that connector would
    otherwise share the cores with it. A step ended so runs again afterwards; after ``_YIELDS`` times it runs
    without waiting or giving way."""
    took: dict[str, float] = {}
    for step in check_steps(steps):
        for attempt in range(_YIELDS + 1):
            may_yield = attempt < _YIELDS
            if not _wait_while(busy if may_yield else (lambda: False), stopping):
                return took
            gave_way = [False]

            def ends(may_yield: bool = may_yield, gave_way: list[bool] = gave_way) -> bool:
                if stopping():
                    return True
                if may_yield and busy():
                    gave_way[0] = True
                    return True
                return False
            began = time.monotonic()
            try:
                ran = _run_step(spark, places, step, ends)
            except Exception as e:  # noqa: BLE001 - see above
                log.warning("Warm-up step %s failed: %s", step, e)
                break
            if stopping():
                return took
            if not gave_way[0]:
                if ran:
                    took[step] = time.monotonic() - began
                break
            log.info("Warm-up step %s gave way to a starting connector; it runs again after its first batch", step)
    return took


#: How often a step gives way to starting connectors; the next time it runs whatever happens.
_YIELDS = 3


def _wait_while(busy: Callable[[], bool], stopping: Callable[[], bool]) -> bool:
    """Wait while ``busy()``; False when ``stopping()`` ended the wait."""
    while busy() and not stopping():
        time.sleep(0.2)
    return not stopping()


def _run_step(spark: Any, places: WarmUpPlaces, step: str, stopping: Callable[[], bool]) -> bool:
    """Run one step, its queries ended early once ``stopping()`` (a driver stopping does not wait for one); False
    when it does not apply here (Kafka steps without Kafka stores, Delta not installed)."""
    kafka = places.bootstrap_servers
    if step == "stream":
        run_warm_up(spark, places.query_name, places.checkpoint_dir, stopping=stopping)
    elif step == "python_workers":
        touch_workers(spark)
    elif step == "kafka_stream" and kafka and places.config_topic:
        warm_writers.warm_kafka_stream(spark, kafka, places.config_topic, places.query_name,
                                       f"{places.checkpoint_dir}-kafka", stopping=stopping)
    elif step == "kafka_writer" and kafka:
        warm_writers.warm_kafka_writer(spark, kafka)
    elif step == "delta":
        source = (kafka, places.config_topic) if kafka and places.config_topic else None
        return warm_writers.warm_delta(spark, places.scratch_dir, source, places.query_name, stopping=stopping)
    else:
        return False
    return True


def describe(took: dict[str, float]) -> str:
    """``1.23 s (python_workers 0.40 s, delta 0.83 s)``: a warm-up's log text."""
    steps = ", ".join(f"{step} {s:.2f} s" for step, s in took.items()) or "no step"
    return f"{sum(took.values()):.2f} s ({steps})"


class BackgroundWarmUp:
    """A leader's warm-up in a thread of its own, once per SparkContext: the driver is ready meanwhile.

    The steps run in the connectors' pool; while a connector's query is starting (``busy``: it has not finished
    its first batch) the warm-up waits, and a step's query ends early, so the first connectors do not share the
    cores with it; ``stop`` ends it after the current step.
    """

    def __init__(self, spark: Any, places: WarmUpPlaces, steps: Iterable[str] = LEADER_STEPS,
                 busy: Callable[[], bool] = lambda: False):
        self.spark, self.places, self.steps, self.busy = spark, places, check_steps(steps), busy
        self.took: dict[str, float] = {}
        self.done = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        app = str(self.spark.sparkContext.applicationId)
        if app in _WARMED or not self.steps:
            self.done.set()
            return
        _WARMED.add(app)
        self._thread = threading.Thread(target=self._run, name="sparkcat-warm-up", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self.took = warm_up(self.spark, self.places, self.steps, self._stop.is_set, self.busy)
            log.info("Leader warmed up in %s", describe(self.took))
        finally:
            self.done.set()

    def stop(self, timeout_s: float = 120.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=timeout_s)
