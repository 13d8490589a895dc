"""The bench's driver and broker: an Apache Kafka broker, a ``local[2]`` SparkSession and an in-process
sparkcat ``Driver`` with Kafka stores, shared by the scenarios, with helpers to run client processes,
create topics, and read connectors' runtimes and Spark progress."""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.measure import CpuSampler, TimedOffsetStore, loadavg, stats
from tests.kafka_helpers import wait_until

REPO = Path(__file__).resolve().parent.parent
CLIENTS = REPO / "bench" / "clients.py"
JAVA_OPTIONS = "spark.driver.extraJavaOptions"

log = logging.getLogger("bench")


def _driver_java_options() -> str:
    """The driver JVM's options in conf/spark-defaults.conf, as ./spark-submit.sh passes them (but its log4j2 file:
    the bench logs as it does); a ``--spark-conf`` of the same key adds to them."""
    for line in (REPO / "conf" / "spark-defaults.conf").read_text().splitlines():
        key, _, value = line.strip().partition(" ")
        if key == JAVA_OPTIONS:
            return " ".join(o for o in value.split() if not o.startswith("-Dlog4j2."))
    return ""


def client(*args: str, timeout: float = 600.0, background: bool = False) -> Any:
    """Run ``bench/clients.py`` with args; the parsed JSON of its last line (or the Popen when ``background``)."""
    cmd = [sys.executable, str(CLIENTS), *args]
    if background:
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args[:1])} failed ({done.returncode}): {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def wait_for(condition: Callable[[], Any], timeout_s: float, interval_s: float = 0.05, what: str = "") -> Any:
    """The tests' wait (``tests.kafka_helpers.wait_until``) with the bench's argument order."""
    return wait_until(condition, timeout_s, interval_s, what)


class Bench:
    """Broker, Spark session and driver shared by the scenarios; figures land in ``self.figures``."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.quick = args.quick
        self.work = Path(tempfile.mkdtemp(prefix="sparkcat-bench-"))
        self.run_id = uuid.uuid4().hex[:6]
        self.figures: dict[str, Any] = {}
        self.details: dict[str, Any] = {}
        self.deadline = time.monotonic() + 60 * args.budget_min
        self.cpu = CpuSampler().start()
        self.broker = None
        self.spark = None
        self.user_spark = None
        self.driver = None
        self.offsets: TimedOffsetStore | None = None
        self._admin = None

    # ---- lifecycle

    def start(self) -> None:
        sys.path.insert(0, str(REPO))
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        if str(REPO) not in paths:
            os.environ["PYTHONPATH"] = os.pathsep.join([str(REPO), *paths])
        from tests.broker import KafkaBroker

        t0 = time.monotonic()
        self.broker = KafkaBroker(log_dir=self.work).start()
        self.details["broker_start_s"] = round(time.monotonic() - t0, 2)
        log.info("Apache Kafka at %s (log %s)", self.broker.bootstrap, self.broker.log_path)
        t0 = time.monotonic()
        self.spark = self._spark()
        # hand-written comparisons run here: the same SparkContext, Spark's own defaults for the settings
        # sparkcat changes in its session (the checkpoint file manager)
        self.user_spark = self.spark.newSession()
        self.figures["spark_session_start_s"] = stats([time.monotonic() - t0], "s", "SparkSession local[2], JVM start")
        t0 = time.monotonic()
        self.driver = self._driver()
        self.figures["driver_start_s"] = stats([time.monotonic() - t0], "s",
                                               "Driver.start with Kafka stores until the config log was read")
        # The leader warms up in the background (issue 45); scenarios time the warm driver, never beside it.
        t0 = time.monotonic()
        if not self.driver.wait_warmed_up(300):
            raise RuntimeError("the driver's background warm-up still ran after 300 s")
        self.figures["driver_warm_up_s"] = stats([time.monotonic() - t0], "s",
                                                 "after Driver.start, until the leader's background warm-up ended")

    def offset_put_stats(self, since: float, until: float) -> tuple[list[float], float]:
        """Durations (ms, waiting for the store's lock included) of the offsets-store writes that ended in
        [since, until], and how many ended per second: the driver's commit rate over all connectors."""
        return self.offsets.put_stats(since, until)

    def _spark(self):
        from pyspark.sql import SparkSession

        from sparkcat.spark.driver.jvm import jvm_conf
        from sparkcat.spark.driver.pools import scheduler_conf
        from sparkcat.spark.driver.session_tuning import tune_session

        builder = SparkSession.builder
        for key, value in jvm_conf(REPO).items():  # Spark's Kafka connector and Delta, as ./spark-submit.sh passes
            builder = builder.config(key, value)
        java_options = _driver_java_options()
        builder = builder.config(JAVA_OPTIONS, java_options)
        if not self.args.fifo:
            for key, value in scheduler_conf(self.work / "spark").items():  # as the driver does
                builder = builder.config(key, value)
        for item in self.args.spark_conf:
            key, _, value = item.partition("=")
            builder = builder.config(key, f"{java_options} {value}" if key == JAVA_OPTIONS else value)
        spark = (builder.master("local[2]").appName("sparkcat-bench")
                 .config("spark.ui.enabled", "false")
                 .config("spark.ui.showConsoleProgress", "false")
                 .config("spark.sql.shuffle.partitions", "2")
                 .config("spark.driver.host", "127.0.0.1")
                 .config("spark.driver.memory", self.args.driver_memory)
                 .config("spark.python.worker.reuse", "true")
                 .config("spark.sql.streaming.stopTimeout", "60s")
                 .config("spark.sql.streaming.numRecentProgressUpdates", "200")
                 .config("spark.executorEnv.PYTHONPATH", os.environ["PYTHONPATH"])
                 .getOrCreate())
        # FATAL: deleting a connector stops its query with a deliberate error that Spark logs as ERROR
        spark.sparkContext.setLogLevel("FATAL")
        tune_session(spark)  # as the driver does
        return spark

    def _driver(self):
        """A Driver on Kafka stores whose offsets store times its writes (``TimedOffsetStore``)."""
        from sparkcat.bootstrap import Driver
        from sparkcat.config.worker import WorkerConfig
        from sparkcat.config.stores import open_stores

        worker = WorkerConfig(state_dir=str(self.work / "state"), bootstrap_servers=self.broker.bootstrap,
                              config_topic=f"bench-{self.run_id}-configs", offset_topic=f"bench-{self.run_id}-offsets",
                              status_topic=f"bench-{self.run_id}-status",
                              exactly_once_source_support=self.args.exactly_once_source_support,
                              plugin_packages=[*WorkerConfig().plugin_packages, "bench.plugins"])
        stores = open_stores(worker)  # no network work until first use
        self.offsets = stores.offsets = TimedOffsetStore(stores.offsets.backend)
        driver = Driver(self.spark, worker, rest=False, watch_pipelines=False, stores=stores)
        driver.start()
        return driver

    def stop(self) -> None:
        self.cpu.stop()
        self._admin = None  # an AdminClient has no close; kept past the broker it would reconnect and log
        for step in (lambda: self.driver and self.driver.stop(), lambda: self.spark and self.spark.stop(),
                     lambda: self.broker and self.broker.stop()):
            try:
                step()
            except Exception:
                log.warning("shutdown step failed", exc_info=True)
        shutil.rmtree(self.work, ignore_errors=True)

    # ---- Kafka helpers

    def create_topic(self, topic: str, partitions: int) -> None:
        from confluent_kafka.admin import AdminClient, NewTopic

        if self._admin is None:
            self._admin = AdminClient({"bootstrap.servers": self.broker.bootstrap})
        for f in self._admin.create_topics([NewTopic(topic, partitions, 1)]).values():
            f.result(timeout=30)

    def topic(self, name: str) -> str:
        return f"b{self.run_id}-{name}"

    def broker_pids(self) -> set[int]:
        """The broker's processes: not part of the driver's memory."""
        return {proc.pid for proc in self.broker._procs} if self.broker else set()

    # ---- connector helpers

    @property
    def herder(self):
        return self.driver.herder

    def runtime(self, name: str):
        return self.driver.reconciler.lifecycles.get(name)

    def query(self, name: str):
        rt = self.runtime(name)
        return None if rt is None or rt.query is None else rt.query.query

    def progress(self, name: str) -> list[dict]:
        """The query's recent progress; ``records`` counts records (Spark's input rows). A connector in a shared
        query has no Spark progress of its own: its batches are read from its committed ones (start = commit
        time - duration)."""
        q = self.query(name)
        if q is None:
            return []
        if hasattr(q, "member"):
            return [{"timestamp": datetime.fromtimestamp(at - took, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                     "durationMs": {"triggerExecution": took * 1000}, "records": records, "numInputRows": records}
                    for at, took, records in list(self.runtime(name).batches.progress.history)]
        try:
            out = []
            for p in q.recentProgress:
                out.append({"timestamp": p.timestamp, "durationMs": dict(p.durationMs), "records": int(p.numInputRows),
                            "numInputRows": p.numInputRows})
            return out
        except Exception:
            return []

    def committed_records(self, name: str) -> int:
        rt = self.runtime(name)
        return 0 if rt is None else rt.batches.progress.records

    def connector_state(self, name: str) -> str | None:
        status = self.driver.stores.status.get(name)
        return None if status is None else status.state.value

    def delete(self, *names: str) -> float:
        t0 = time.monotonic()
        for name in names:
            self.herder.delete_connector(name)
        wait_for(lambda: not any(self.runtime(n) for n in names), 300, 0.1, "connectors deleted")
        return time.monotonic() - t0

    # ---- scenarios

    def run(self, name: str, scenario: Callable[[Bench], None]) -> None:
        """Run one scenario; a failure is recorded in ``details`` and the next scenario still runs."""
        log.info("==== scenario %s (load average %s)", name, loadavg())
        t0 = time.monotonic()
        try:
            scenario(self)
            self.details.setdefault("scenario_seconds", {})[name] = round(time.monotonic() - t0, 1)
        except Exception as e:
            log.exception("scenario %s failed", name)
            self.details.setdefault("failures", {})[name] = f"{type(e).__name__}: {e}"
        self.details.setdefault("loadavg_after", {})[name] = loadavg()
