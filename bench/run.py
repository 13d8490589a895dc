#!/usr/bin/env python3
"""sparkcat benchmarks: throughput, latency and scale, side by side with a raw confluent-kafka client.

    python3 bench/run.py                  # everything (about 20-25 min on 2 cores): bench/results.json, bench/RESULTS.md
    python3 bench/run.py --quick          # smoke run (a few minutes): bench/out/
    python3 bench/run.py --only copy      # one scenario (copy, source, apply, e2e, scale): bench/out/

On a fresh machine the first call creates ``.venv`` through ``scripts/venv.sh`` (Java 17 via apt
when missing and run as root) and re-runs itself inside it.

The bench starts its own Apache Kafka broker (``tests.broker.KafkaBroker``: KRaft, one node, a
temporary log directory, free loopback ports) and an in-process sparkcat ``Driver`` on a
``local[2]`` SparkSession with Spark's Kafka connector and Kafka stores. Client load (the raw baseline, paced producers, latency probes) runs in separate processes
(``bench/clients.py``) so that it never shares the driver's GIL. Scenarios:

- ``copy``: 1,000,000 records of 100 bytes in a 4-partition topic, copied (a) by a single-threaded
  consume/produce loop and (b) by the sparkcat ``kafka`` sink (Spark's Kafka source and writer, no
  Python per record); interleaved repeats; ratio (b)/(a).
- ``source``: the ``increment`` connector with 4 tasks writing to Kafka as fast as it can.
- ``apply``: put_connector_config -> first record in Kafka; pause request -> last record written.
- ``e2e``: 1,000 records/s for 30 s through a Kafka-to-Kafka pipeline; delay at the destination.
- ``scale``: 10, 50, 100 connectors on the one driver: half increment sources of 2 tasks, half
  file sinks fed by their topics through Spark's Kafka source.

Other engineers share the machine: every figure is repeated where affordable and reported as
min/median/max, together with the load average seen during the run.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / "bench"
CLIENTS = BENCH / "clients.py"
SCENARIOS = ("copy", "source", "apply", "e2e", "scale")
log = logging.getLogger("bench")


# ---------------------------------------------------------------- environment bootstrap


def _ensure_environment() -> None:
    """Re-run inside .venv (created by scripts/venv.sh) when the dependencies are not importable here."""
    try:
        import confluent_kafka  # noqa: F401
        import pyspark  # noqa: F401
        return
    except ImportError:
        if os.environ.get("SPARKCAT_BENCH_REEXEC"):
            raise
    cmd = (f"source {REPO}/scripts/venv.sh rest,test && sparkcat_need_jars kafka && "
           f"exec python {Path(__file__).resolve()} " + " ".join(f"'{a}'" for a in sys.argv[1:]))
    os.environ["SPARKCAT_BENCH_REEXEC"] = "1"
    os.execvp("bash", ["bash", "-c", cmd])


# ---------------------------------------------------------------- small helpers


def stats(values: list[float], unit: str, note: str = "") -> dict[str, Any]:
    """One figure: its values and min/median/max (a single value is its own min, median and max)."""
    vals = [float(v) for v in values if v is not None]
    out: dict[str, Any] = {"unit": unit, "values": [round(v, 4) for v in vals]}
    if vals:
        out.update(min=round(min(vals), 4), median=round(statistics.median(vals), 4), max=round(max(vals), 4))
    else:
        out.update(min=None, median=None, max=None)
    if note:
        out["note"] = note
    return out


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
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout_s:g}s waiting for {what}")
        time.sleep(interval_s)


def loadavg() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


class CpuSampler:
    """Machine-wide busy CPU seconds (``/proc/stat``: all but idle and iowait), sampled every 0.1 s.

    Says how much of the two cores a stretch of a run used, and CPU seconds per record.
    """

    def __init__(self) -> None:
        self.samples: list[tuple[float, float]] = []  # (epoch s, busy CPU s since boot)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-cpu", daemon=True)
        self._tick = os.sysconf("SC_CLK_TCK")

    def start(self) -> CpuSampler:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def _busy(self) -> float:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
        return (sum(fields) - fields[3] - fields[4]) / self._tick

    def _run(self) -> None:
        while not self._stop.is_set():
            self.samples.append((time.time(), self._busy()))
            self._stop.wait(0.1)

    def busy_s(self, t0: float, t1: float) -> float | None:
        """Busy CPU seconds between two epoch times (nearest samples inside the stretch)."""
        inside = [s for s in self.samples if t0 <= s[0] <= t1]
        if len(inside) < 2:
            return None
        (a_t, a_b), (b_t, b_b) = inside[0], inside[-1]
        return (b_b - a_b) * (t1 - t0) / (b_t - a_t) if b_t > a_t else None


def parse_ts(text: str) -> float:
    """A Spark progress timestamp (``2025-01-01T00:00:00.123Z``) as epoch seconds."""
    return dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=dt.timezone.utc).timestamp()


# ---------------------------------------------------------------- processes and memory


def _children_map() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        kids.setdefault(ppid, []).append(int(entry))
    return kids


def descendants(pid: int) -> list[int]:
    kids, out, todo = _children_map(), [], [pid]
    while todo:
        p = todo.pop()
        for c in kids.get(p, []):
            out.append(c)
            todo.append(c)
    return out


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _mem_kb(pid: int) -> tuple[int, int]:
    """(RSS, PSS) of a process in kB (PSS counts pages shared by forked workers once in total)."""
    rss = pss = 0
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                pss = int(line.split()[1])
    except OSError:
        pass
    return rss, pss


def driver_memory(exclude: set[int]) -> dict[str, Any]:
    """Memory of this bench's driver: this Python process, its JVM, and the JVM's Python workers.

    Found through the process tree of this process (other test runs share the machine and the
    process names); ``exclude`` are processes of the bench itself that are not the driver (the broker).
    """
    me = os.getpid()
    groups = {"driver_python": [me], "jvm": [], "python_workers": [], "other": []}
    for pid in descendants(me):
        if pid in exclude:
            continue
        cmd = _cmdline(pid)
        if "java" in cmd.split(" ")[0] or "org.apache.spark" in cmd:
            groups["jvm"].append(pid)
        elif "pyspark" in cmd or "python" in cmd.split(" ")[0]:
            groups["python_workers"].append(pid)
        elif cmd:
            groups["other"].append(pid)
    out: dict[str, Any] = {}
    total_rss = total_pss = 0
    for name, pids in groups.items():
        rss = pss = 0
        for pid in pids:
            r, p = _mem_kb(pid)
            rss, pss = rss + r, pss + p
        out[name] = {"processes": len(pids), "rss_mb": round(rss / 1024, 1), "pss_mb": round(pss / 1024, 1)}
        if name != "other":
            total_rss, total_pss = total_rss + rss, total_pss + pss
    out["total_rss_mb"] = round(total_rss / 1024, 1)
    out["total_pss_mb"] = round(total_pss / 1024, 1)
    return out


# ---------------------------------------------------------------- the bench harness


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
        self.driver = None
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
        self.figures["spark_session_start_s"] = stats([time.monotonic() - t0], "s", "SparkSession local[2], JVM start")
        t0 = time.monotonic()
        self.driver = self._driver()
        self.figures["driver_start_s"] = stats([time.monotonic() - t0], "s",
                                               "Driver.start with Kafka stores until the config log was read")
        self._time_offset_puts()

    def _time_offset_puts(self) -> None:
        """Record how long each offsets-store write of a committed batch takes (measurement only)."""
        store = self.driver.stores.offsets
        original = store.put
        self.offset_puts: list[tuple[float, float]] = []  # (start, duration)

        def timed(*args: Any, **kwargs: Any) -> Any:
            t = time.monotonic()
            try:
                return original(*args, **kwargs)
            finally:
                self.offset_puts.append((t, time.monotonic() - t))

        store.put = timed

    def offset_put_stats(self, since: float, until: float) -> tuple[list[float], float]:
        """Durations (ms, waiting for the store's lock included) of the offsets-store writes that ended in
        [since, until], and how many ended per second: the driver's commit rate over all connectors."""
        inside = [d for t, d in self.offset_puts if since <= t + d <= until]
        return [d * 1000 for d in inside], (len(inside) / (until - since) if until > since else 0.0)

    def _spark(self):
        from pyspark.sql import SparkSession

        from sparkcat.spark.jvm import jvm_conf
        from sparkcat.spark.pools import scheduler_conf

        builder = SparkSession.builder
        for key, value in jvm_conf(REPO).items():  # Spark's Kafka connector and Delta, as ./spark-submit.sh passes
            builder = builder.config(key, value)
        if not self.args.fifo:
            for key, value in scheduler_conf(self.work / "spark").items():  # as the driver does
                builder = builder.config(key, value)
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
        return spark

    def _driver(self):
        from sparkcat.bootstrap import Driver
        from sparkcat.runtime.worker_config import WorkerConfig

        worker = WorkerConfig(state_dir=str(self.work / "state"), bootstrap_servers=self.broker.bootstrap,
                              config_topic=f"bench-{self.run_id}-configs", offset_topic=f"bench-{self.run_id}-offsets",
                              status_topic=f"bench-{self.run_id}-status")
        driver = Driver(self.spark, worker, rest=False, watch_pipelines=False)
        driver.start()
        return driver

    def stop(self) -> None:
        self.cpu.stop()
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

    # ---- connector helpers

    @property
    def herder(self):
        return self.driver.herder

    def runtime(self, name: str):
        return self.driver.reconciler.runtimes.get(name)

    def query(self, name: str):
        rt = self.runtime(name)
        return None if rt is None or rt.query is None else rt.query.query

    def progress(self, name: str) -> list[dict]:
        """The query's recent progress; ``records`` counts records (Spark's input rows)."""
        q = self.query(name)
        if q is None:
            return []
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
        return 0 if rt is None else rt.progress.records

    def delete(self, *names: str) -> float:
        t0 = time.monotonic()
        for name in names:
            self.herder.delete_connector(name)
        wait_for(lambda: not any(self.runtime(n) for n in names), 300, 0.1, "connectors deleted")
        return time.monotonic() - t0

    # ---- scenarios

    def run(self, name: str) -> None:
        log.info("==== scenario %s (load average %s)", name, loadavg())
        t0 = time.monotonic()
        try:
            getattr(self, f"scenario_{name}")()
            self.details.setdefault("scenario_seconds", {})[name] = round(time.monotonic() - t0, 1)
        except Exception as e:
            log.exception("scenario %s failed", name)
            self.details.setdefault("failures", {})[name] = f"{type(e).__name__}: {e}"
        self.details.setdefault("loadavg_after", {})[name] = loadavg()

    # 1. copy throughput ------------------------------------------------------------------

    def scenario_copy(self) -> None:
        a = self.args
        n = a.copy_records or (300_000 if self.quick else 1_000_000)
        repeats = a.copy_repeats or (1 if self.quick else 3)
        src = self.topic("copy-src")
        self.create_topic(src, 4)
        fill = client("fill", "--bootstrap", self.broker.bootstrap, "--topic", src, "--records", str(n),
                      "--value-bytes", "100")
        self.figures["fill_records_per_s"] = stats([fill["records_per_s"]], "records/s",
                                                   "filling the source topic: one producer, copy producer settings")
        # Warm-up: a first copy on a small topic starts the executors' Python workers (imports, Kafka
        # clients) and warms the JVM's JIT; its first batch is reported as the cold start.
        warm_src = self.topic("copy-warm")
        self.create_topic(warm_src, 4)
        warm_n = 40_000
        client("fill", "--bootstrap", self.broker.bootstrap, "--topic", warm_src, "--records", str(warm_n))
        cold = self._sparkcat_copy(warm_src, warm_n, "warm", verify=False)
        self.figures["copy_cold_startup_s"] = stats([cold["startup_s"]], "s",
                                                    "first connector of the driver: put -> first micro-batch starts")
        self.figures["copy_cold_first_batch_commit_s"] = stats(
            [cold["first_batch_s"]], "s", f"first connector: put -> its first batch ({warm_n:,} records) committed, "
            "cold Python workers and JIT")
        ceilings = self._read_ceiling(src)
        raw_rates, sc_rates, ratios, startups, firsts, walls = [], [], [], [], [], []
        query_rates, first_rates = [], []
        raw_cpu, sc_cpu = [], []
        batch_rows: list[dict] = []
        for i in range(repeats):
            raw_target = self.topic(f"copy-raw-{i}")
            self.create_topic(raw_target, 4)
            raw = client("raw-copy", "--bootstrap", self.broker.bootstrap, "--topic", src, "--target", raw_target,
                         "--records", str(n))
            raw_end = time.time()
            assert raw["records"] == n and raw["undelivered"] == 0, raw
            raw_rates.append(raw["records_per_s"])
            raw_cpu.append((self.cpu.busy_s(raw_end - raw["seconds"], raw_end), raw["seconds"], n))
            log.info("copy %d: raw loop %.0f records/s", i, raw["records_per_s"])
            sc = self._sparkcat_copy(src, n, i)
            sc_rates.append(sc["records_per_s"])
            sc_cpu.append(sc["steady_cpu_s"])
            startups.append(sc["startup_s"])
            firsts.append(sc["first_batch_s"])
            walls.append(n / sc["wall_s"])
            query_rates.append(sc["query_records_per_s"])
            first_rates.append(sc["first_batch_records_per_s"])
            batch_rows.extend(sc["batches"])
            ratios.append(sc["records_per_s"] / raw["records_per_s"])
            log.info("copy %d: sparkcat %.0f records/s (ratio %.2f, start-up %.1fs)", i, sc["records_per_s"],
                     ratios[-1], sc["startup_s"])
        if not self.quick and self.args.copy_tasks != 4:
            four = self._sparkcat_copy(src, n, "t4", tasks=4)
            self.figures["copy_tasks4_records_per_s"] = stats([four["records_per_s"]], "records/s",
                                                              "the same with tasks.max=4 (one partition per task; "
                                                              "local[2] runs two at a time)")
        self.figures["raw_records_per_s"] = stats(raw_rates, "records/s",
                                                  "single-threaded confluent-kafka consume/produce loop")
        self.figures["copy_records_per_s"] = stats(sc_rates, "records/s",
                                                   "sparkcat kafka sink, steady state: micro-batches after the "
                                                   "query's first (end of first batch to end of last)")
        self.figures["copy_query_records_per_s"] = stats(query_rates, "records/s",
                                                         "sparkcat, all micro-batches: first batch start to last "
                                                         "batch end (query start-up excluded)")
        self.figures["copy_first_batch_records_per_s"] = stats(first_rates, "records/s",
                                                               "sparkcat, the query's first micro-batch alone")
        self.figures["copy_ratio"] = stats(ratios, "x", "sparkcat / raw loop, per interleaved repeat (target >= 1.5)")
        self._cpu_figures("raw", raw_cpu, "raw loop")
        self._cpu_figures("copy", sc_cpu, "sparkcat steady state")
        self.figures["copy_with_startup_records_per_s"] = stats(walls, "records/s",
                                                                "sparkcat, put_connector_config -> all committed")
        self.figures["read_ceiling_records_per_s"] = stats(ceilings, "records/s",
                                                           "consume only, no produce: the source topic read by 1 "
                                                           "consumer (4 partitions) and by 2 in parallel (2 each)")
        self.details["copy_batches"] = [{"records": b["records"], **b["durationMs"]} for b in batch_rows]
        self.figures["copy_startup_s"] = stats(startups, "s", "put_connector_config -> first micro-batch starts")
        self.figures["copy_first_batch_commit_s"] = stats(firsts, "s", "put_connector_config -> first batch committed")
        for key in ("triggerExecution", "addBatch", "latestOffset", "queryPlanning", "walCommit", "commitOffsets"):
            vals = [b["durationMs"].get(key) for b in batch_rows if b["durationMs"].get(key) is not None]
            if vals:
                self.figures[f"copy_batch_{key}_ms"] = stats(vals, "ms", "per micro-batch, all repeats")
        self.figures["copy_batch_records"] = stats([b["records"] for b in batch_rows], "records",
                                                   "records per micro-batch")
        self.details["copy"] = {"records": n, "repeats": repeats, "tasks_max": a.copy_tasks,
                                "batch_max_records": a.copy_batch, "trigger_interval_ms": 0,
                                "read_ceiling": ceilings}

    def _cpu_figures(self, prefix: str, stretches: list[tuple[float | None, float, int]], what: str) -> None:
        """Busy cores and CPU per record over measured stretches of (busy CPU s, seconds, records)."""
        stretches = [x for x in stretches if x[0] is not None and x[1] > 0 and x[2] > 0]
        if stretches:
            self.figures[f"{prefix}_busy_cores"] = stats([b / t for b, t, _ in stretches], "cores",
                                                         f"{what}: CPU in use on the whole machine (2 cores)")
            self.figures[f"{prefix}_cpu_us_per_record"] = stats([b / n * 1e6 for b, _, n in stretches], "us",
                                                                f"{what}: machine CPU time per record copied")

    def _read_ceiling(self, src: str) -> list[float]:
        """How fast the broker serves the source topic to consumers that do nothing else."""
        out = []
        for groups in (["0,1,2,3"], ["0,1", "2,3"]):
            start_at = f"{time.time() + 2.0:.3f}"
            procs = [client("read", "--bootstrap", self.broker.bootstrap, "--topic", src, "--partitions", g,
                            "--start-at", start_at, background=True) for g in groups]
            results = [json.loads(p.communicate(timeout=300)[0].strip().splitlines()[-1]) for p in procs]
            out.append(sum(r["records"] for r in results) / max(r["seconds"] for r in results))
            log.info("copy: read ceiling with %d consumer(s): %.0f records/s", len(groups), out[-1])
        return out

    def _sparkcat_copy(self, src: str, n: int, i: Any, verify: bool = True, tasks: int = 0,
                       connector_class: str = "kafka") -> dict[str, Any]:
        name = f"copy-{self.run_id}-{i}"
        target = f"{src}.sc{i}"
        tasks = tasks or self.args.copy_tasks
        batch = self.args.copy_batch * self.args.copy_tasks // tasks  # the same records per micro-batch
        config = {"connector.class": connector_class, "topics": src, "target.topic.format": f"${{topic}}.sc{i}",
                  "tasks.max": str(tasks), "batch.max.records": str(batch),
                  "trigger.interval.ms": "0"}
        t0 = time.time()
        self.herder.put_connector_config(name, config)
        wait_for(lambda: self.committed_records(name) >= n, 600, 0.05, f"{name} to copy {n} records")
        t_done = time.time()
        rows = wait_for(lambda: (lambda p: p if sum(b["records"] for b in p) >= n else None)(
            [b for b in self.progress(name) if b["records"] > 0]), 60, 0.1, "progress of every batch")
        def end_of(b: dict) -> float:
            return parse_ts(b["timestamp"]) + b["durationMs"]["triggerExecution"] / 1000

        first_start, first_end, last_end = parse_ts(rows[0]["timestamp"]), end_of(rows[0]), end_of(rows[-1])
        # Steady state: the batches after the query's first, which pays for one-time costs (code generation
        # and JIT of the new query's classes, target topic creation, Kafka clients of new Python workers).
        steady = rows[1:] if len(rows) > 1 else rows
        steady_start = first_end if len(rows) > 1 else first_start
        steady_records = sum(b["records"] for b in steady)
        steady_cpu = (self.cpu.busy_s(steady_start, last_end), last_end - steady_start, steady_records)
        self.delete(name)
        counts = client("count", "--bootstrap", self.broker.bootstrap, "--topic", target) if verify else {"records": n}
        if counts["records"] != n:
            raise AssertionError(f"sparkcat copy {i}: {counts['records']} records in {target}, expected {n}")
        return {"records_per_s": steady_records / (last_end - steady_start), "startup_s": first_start - t0,
                "steady_cpu_s": steady_cpu,
                "first_batch_s": first_end - t0, "wall_s": t_done - t0,
                "first_batch_records_per_s": rows[0]["records"] / (first_end - first_start),
                "query_records_per_s": n / (last_end - first_start),
                "batches": [{"records": b["records"], "durationMs": b["durationMs"]} for b in rows]}

    # 2. source throughput ----------------------------------------------------------------

    def scenario_source(self) -> None:
        repeats = 1 if self.quick else 2
        seconds = 8.0 if self.quick else 20.0
        rates, batch_ms = [], []
        for i in range(repeats):
            name = f"src-{self.run_id}-{i}"
            prefix = self.topic(f"inc{i}_")
            for k in (1, 2, 3, 4):
                self.create_topic(f"{prefix}{k}", 1)
            config = {"connector.class": "increment", "increments": "1,2,3,4", "tasks.max": "4",
                      "topic.prefix": prefix, "records.per.poll": "1000000", "batch.max.records": "100000",
                      "trigger.interval.ms": "0", "value.converter": "org.apache.kafka.connect.json.JsonConverter",
                      "value.converter.schemas.enable": "false"}
            self.herder.put_connector_config(name, config)
            wait_for(lambda: self.committed_records(name) > 0, 300, 0.1, f"{name} first batch")
            time.sleep(seconds)
            rows = [b for b in self.progress(name) if b["records"] > 0]
            self.delete(name)
            steady = rows[1:] if len(rows) > 2 else rows  # the first batch pays for Python workers and producers
            start = parse_ts(steady[0]["timestamp"])
            end = parse_ts(steady[-1]["timestamp"]) + steady[-1]["durationMs"]["triggerExecution"] / 1000
            records = sum(b["records"] for b in steady)
            rates.append(records / (end - start))
            batch_ms += [b["durationMs"]["triggerExecution"] for b in steady]
            log.info("source %d: %.0f records/s over %d batches", i, rates[-1], len(steady))
        self.figures["source_records_per_s"] = stats(rates, "records/s",
                                                     "increment, 4 tasks, JSON values, to Kafka, steady state")
        self.figures["source_batch_ms"] = stats(batch_ms, "ms", "per micro-batch (4 x 100,000 records)")

    # 3. apply latency --------------------------------------------------------------------

    def scenario_apply(self) -> None:
        from sparkcat.model.config_state import TargetState

        repeats = 1 if self.quick else 3
        put_lat, pause_lat, pause_status = [], [], []
        for i in range(repeats):
            name = f"apply-{self.run_id}-{i}"
            prefix = self.topic(f"apply{i}_")
            topic = f"{prefix}1"
            self.create_topic(topic, 1)
            watcher = _Watcher(self.broker.bootstrap, topic).start()
            config = {"connector.class": "increment", "increments": "1", "topic.prefix": prefix,
                      "throughput": "200", "value.converter": "org.apache.kafka.connect.json.JsonConverter",
                      "value.converter.schemas.enable": "false"}
            try:
                t0 = time.monotonic()
                self.herder.put_connector_config(name, config)
                first = wait_for(lambda: watcher.first, 120, 0.01, f"first record of {name}")
                put_lat.append(first - t0)
                time.sleep(3.0)
                t1 = time.monotonic()
                self.herder.set_target_state(name, TargetState.PAUSED)
                wait_for(lambda: self._connector_state(name) == "PAUSED", 120, 0.02, f"{name} PAUSED")
                pause_status.append(time.monotonic() - t1)
                time.sleep(3.0)  # anything still in flight arrives
                pause_lat.append(max(0.0, watcher.last - t1))
            finally:
                watcher.stop()
            self.delete(name)
            log.info("apply %d: put->first record %.2fs, pause->last record %.2fs", i, put_lat[-1], pause_lat[-1])
        self.figures["apply_latency_s"] = stats(put_lat, "s", "put_connector_config of a new connector -> its first "
                                                "record in Kafka (target < 10 s)")
        self.figures["pause_latency_s"] = stats(pause_lat, "s", "pause request -> last record written (target < 10 s)")
        self.figures["pause_status_s"] = stats(pause_status, "s", "pause request -> status PAUSED")

    def _connector_state(self, name: str) -> str | None:
        status = self.driver.stores.status.get(name)
        return None if status is None else status.state.value

    # 4. end-to-end latency ---------------------------------------------------------------

    def scenario_e2e(self) -> None:
        seconds = 10.0 if self.quick else 30.0
        variants = [("default", None)] + ([] if self.quick else [("trigger0", "0")])
        for label, trigger in variants:
            self._e2e(label, trigger, seconds)

    def _e2e(self, label: str, trigger: str | None, seconds: float) -> None:
        src = self.topic(f"e2e-{label}")
        target = f"{src}.copy"
        self.create_topic(src, 4)
        self.create_topic(target, 4)
        name = f"e2e-{self.run_id}-{label}"
        config = {"connector.class": "kafka", "topics": src, "tasks.max": "2"}
        if trigger is not None:
            config["trigger.interval.ms"] = trigger
        self.herder.put_connector_config(name, config)
        wait_for(lambda: len(self.progress(name)) >= 2, 120, 0.1, f"{name} running")
        warm = client("paced", "--bootstrap", self.broker.bootstrap, "--topic", src, "--rate", "1000",
                      "--seconds", "3")
        wait_for(lambda: self.committed_records(name) >= warm["records"], 60, 0.05, "warm-up copied")
        probe = client("latency", "--bootstrap", self.broker.bootstrap, "--topics", f"{src},{target}",
                       "--seconds", str(seconds + 30), background=True)
        ready = probe.stdout.readline()
        assert "ready" in ready, ready
        t_run = time.monotonic()
        # the probe starts at offset 0: skip the warm-up records by counting them out below
        paced = client("paced", "--bootstrap", self.broker.bootstrap, "--topic", src, "--rate", "1000",
                       "--seconds", str(seconds))
        total = warm["records"] + paced["records"]
        wait_for(lambda: self.committed_records(name) >= total, 60, 0.05, "all copied")
        time.sleep(2.0)
        probe.terminate()  # the probe reports on SIGTERM
        out, _ = probe.communicate(timeout=60)
        lines = [line for line in out.strip().splitlines() if line.startswith("{")]
        result = json.loads(lines[-1]) if lines and "ready" not in lines[-1] else None
        if result is None:
            raise RuntimeError("latency probe gave no result")
        batches = [b for b in self.progress(name) if b["records"] > 0]
        puts_ms, _ = self.offset_put_stats(t_run, time.monotonic())
        self.delete(name)
        dst = result[target]
        broker_only = result[src]
        key = "e2e" if label == "default" else f"e2e_{label}"
        note = f"1,000 records/s for {seconds:g}s, trigger.interval.ms={trigger or '1000 (default)'}"
        self.figures[f"{key}_p50_ms"] = stats([dst["p50_ms"]], "ms", note)
        self.figures[f"{key}_p99_ms"] = stats([dst["p99_ms"]], "ms", note + "; target <= 2 x trigger and < 2000")
        self.figures[f"{key}_max_ms"] = stats([dst["max_ms"]], "ms", note)
        self.figures[f"{key}_broker_p99_ms"] = stats([broker_only["p99_ms"]], "ms",
                                                     "produce -> consume on the source topic: the broker's own share")
        self.figures[f"{key}_batch_ms"] = stats([b["durationMs"]["triggerExecution"] for b in batches], "ms",
                                                "micro-batch duration during the run")
        self.figures[f"{key}_offsets_put_ms"] = stats(puts_ms, "ms", "offsets-store write per committed batch "
                                                      "(part of addBatch)")
        for part in ("addBatch", "latestOffset", "walCommit", "commitOffsets"):
            self.figures[f"{key}_batch_{part}_ms"] = stats([b["durationMs"].get(part, 0) for b in batches], "ms",
                                                           f"{part} share of each micro-batch")
        self.details[f"{key}_records"] = {"target": dst["records"], "source": broker_only["records"],
                                          "produced": total}

    # 5. scale ----------------------------------------------------------------------------

    def scenario_scale(self) -> None:
        """Half increment sources (Python data source each), half Kafka-fed file sinks (Spark's Kafka source).

        The sources start first and their memory is taken; then the sinks, each reading its source's
        topic, and the difference over the number of sinks is the memory of one Kafka-fed connector.
        """
        levels = [int(x) for x in (self.args.scale_levels or ("4,8" if self.quick else "10,50,100")).split(",")]
        observe = 10.0 if self.quick else 30.0
        running_max = 0
        exclude = {proc.pid for proc in self.broker._procs} if self.broker else set()
        for level in levels:
            left = self.deadline - time.monotonic()
            if left < 12.0 * level + observe:  # measured: ~4 s per connector to start, ~8 s to delete
                self.details[f"scale_{level}"] = {"skipped": f"only {left:.0f}s left of the run's time budget"}
                log.warning("scale %d skipped: %.0f s left of the time budget", level, left)
                break
            result = self._scale_level(level, observe, exclude)
            if result["broke"] is None:
                running_max = max(running_max, level)
            else:
                break
        self.figures["connectors_running_max"] = stats([running_max], "connectors",
                                                       "most connectors all RUNNING on one local[2] driver in this "
                                                       "run (half 2-task sources, half 1-task Kafka-fed sinks)")

    def _put_all(self, configs: dict[str, dict[str, str]]) -> None:
        """Put connector configs concurrently, as REST clients would (each put waits for its read-back)."""
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda item: self.herder.put_connector_config(*item), configs.items()))

    def _wait_running(self, names: list[str], t0: float) -> tuple[dict[str, float], str | None]:
        """Wait until each connector's query is active with a committed batch; (ready times, why it broke)."""
        ready_at: dict[str, float] = {}
        while len(ready_at) < len(names):
            for name in names:
                rt = self.runtime(name)
                if name not in ready_at and rt is not None and rt.progress.batches >= 1 and rt.query is not None \
                        and rt.query.is_active():
                    ready_at[name] = time.monotonic() - t0
            failed = [n for n in names if (self.runtime(n) is not None and self.runtime(n).failed_tasks)]
            if failed:
                return ready_at, (f"{len(failed)} connector(s) with FAILED tasks, e.g. {failed[0]}: "
                                  f"{next(iter(self.runtime(failed[0]).failed_tasks.values()))[:300]}")
            if time.monotonic() - t0 > self.args.scale_timeout:
                return ready_at, (f"only {len(ready_at)}/{len(names)} connectors RUNNING with a committed batch "
                                  f"after {self.args.scale_timeout}s")
            time.sleep(0.2)
        return ready_at, None

    def _scale_level(self, level: int, observe: float, exclude: set[int]) -> dict[str, Any]:
        sources = [f"scale-{self.run_id}-{level}-src-{i}" for i in range(level // 2)]
        sinks = [f"scale-{self.run_id}-{level}-sink-{i}" for i in range(level - len(sources))]
        prefix = self.topic(f"scale{level}_")
        out_dir = self.work / "state" / "out" / f"scale{level}"
        base_mem = driver_memory(exclude)
        t0 = time.monotonic()
        self._put_all({name: {
            "connector.class": "increment", "increments": f"{2 * j + 1},{2 * j + 2}", "tasks.max": "2",
            "topic.prefix": f"{prefix}{j}-", "throughput": "1", "records.per.poll": "100",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter.schemas.enable": "false"} for j, name in enumerate(sources)})
        ready_at, broke = self._wait_running(sources, t0)
        sources_mem = driver_memory(exclude)
        t1 = time.monotonic()
        if broke is None:
            self._put_all({name: {
                "connector.class": "file-sink", "topics.regex": f"{re.escape(prefix)}{j}-.*", "tasks.max": "1",
                "file": str(out_dir / f"{j}.txt"),
                "value.converter": "org.apache.kafka.connect.storage.StringConverter"}
                for j, name in enumerate(sinks)})
            sink_ready, broke = self._wait_running(sinks, t1)
            ready_at.update({n: t + (t1 - t0) for n, t in sink_ready.items()})
        all_ready = time.monotonic() - t0
        obs_start = time.monotonic()
        time.sleep(observe)
        puts_ms, commits_per_s = self.offset_put_stats(obs_start, time.monotonic())
        mem = driver_memory(exclude)
        names = sources + sinks
        durations, periods = [], []
        for name in names:
            rows = self.progress(name)[-20:]
            durations += [b["durationMs"]["triggerExecution"] for b in rows if b["records"] > 0]
            stamps = [parse_ts(b["timestamp"]) for b in rows]
            if len(stamps) >= 3:
                periods.append((stamps[-1] - stamps[0]) / (len(stamps) - 1))
        delete_s = self.delete(*names)
        per_sink = mb_per_added_connector(sources_mem, mem, len(sinks))
        per_source = (sources_mem["total_rss_mb"] - base_mem["total_rss_mb"]) / max(1, len(sources))
        f = self.figures
        f[f"scale_{level}_all_running_s"] = stats(
            [all_ready], "s", f"{len(sources)} sources x 2 tasks, then {len(sinks)} Kafka-fed sinks: first put -> "
            "all RUNNING with a committed batch")
        f[f"scale_{level}_rss_mb"] = stats([mem["total_rss_mb"]], "MB", "driver Python + JVM + Python workers, RSS sum")
        f[f"scale_{level}_pss_mb"] = stats([mem["total_pss_mb"]], "MB", "same processes, PSS (shared pages once)")
        f[f"scale_{level}_mb_per_kafka_fed_connector"] = stats(
            [per_sink], "MB", "JVM + driver Python RSS growth when the Kafka-fed sinks started, per sink, plus "
            "any growth of the Python workers' RSS")
        f[f"scale_{level}_mb_per_source_connector"] = stats(
            [per_source], "MB", "RSS growth when the increment sources started, per source")
        f[f"scale_{level}_batch_ms"] = stats(durations, "ms", "micro-batch duration per connector")
        f[f"scale_{level}_trigger_period_s"] = stats(periods, "s", "time between batch starts per connector (1 s)")
        f[f"scale_{level}_delete_s"] = stats([delete_s], "s", "deleting all of them")
        f[f"scale_{level}_offsets_put_ms"] = stats(puts_ms, "ms", "offsets-store write per committed batch, "
                                                   "waiting for the store's lock included")
        f[f"scale_{level}_commits_per_s"] = stats([commits_per_s], "batches/s", "committed batches per second, all "
                                                  "connectors together")
        if broke is None:
            f["mb_per_kafka_fed_connector"] = stats([per_sink], "MB", f"from the {level}-connector level")
        self.details[f"scale_{level}"] = {"memory_before": base_mem, "memory_sources": sources_mem, "memory": mem,
                                          "broke": broke, "ready": len(ready_at),
                                          "ready_s_by_connector": sorted(round(v, 2) for v in ready_at.values())}
        log.info("scale %d: all running in %.1fs, RSS %.0f MB (%.0f MB per Kafka-fed sink, %.0f per source), "
                 "broke: %s", level, all_ready, mem["total_rss_mb"], per_sink, per_source, broke)
        return {"broke": broke}


def mb_per_added_connector(before: dict[str, Any], after: dict[str, Any], added: int) -> float:
    """Memory that ``added`` connectors cost: the growth of the JVM and the driver's Python, plus the
    Python workers' growth when there is any.

    The Python worker processes are shared by all queries and come and go (the planners of the
    connectors started just before end), so their total often shrinks while connectors start; a
    shrink is not credited to the new connectors.
    """
    grown = sum(after[g]["rss_mb"] - before[g]["rss_mb"] for g in ("jvm", "driver_python"))
    grown += max(0.0, after["python_workers"]["rss_mb"] - before["python_workers"]["rss_mb"])
    return round(grown / max(1, added), 2)


class _Watcher:
    """A consumer thread that notes when the first and the last record of a topic arrived (monotonic)."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.bootstrap, self.topic = bootstrap, topic
        self.first: float | None = None
        self.last: float = 0.0
        self.count = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name=f"watch-{topic}")

    def start(self) -> _Watcher:
        self._thread.start()
        return self

    def _run(self) -> None:
        from confluent_kafka import Consumer, TopicPartition

        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": f"watch-{uuid.uuid4().hex}",
                      "enable.auto.commit": False, "fetch.wait.max.ms": 5, "isolation.level": "read_uncommitted"})
        c.assign([TopicPartition(self.topic, 0, 0)])
        while not self._stop.is_set():
            for m in c.consume(1000, timeout=0.02):
                if m.error() is None:
                    now = time.monotonic()
                    if self.first is None:
                        self.first = now
                    self.last = now
                    self.count += 1
        c.close()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)


# ---------------------------------------------------------------- environment and output


def environment() -> dict[str, Any]:
    import confluent_kafka
    import pyarrow
    import pyspark

    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr.strip().splitlines()
    from tests.broker import KAFKA_JARS

    kafka_jar = next(iter(sorted(KAFKA_JARS.glob("kafka_2.13-*.jar"))), None)
    kafka_version = kafka_jar.stem.split("-", 1)[1] if kafka_jar else "?"
    cpu_model = ""
    try:
        cpu_model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                          if line.startswith("model name")), "")
    except OSError:
        pass
    mem_total = ""
    try:
        mem_total = next(line.split(":", 1)[1].strip() for line in Path("/proc/meminfo").read_text().splitlines()
                         if line.startswith("MemTotal"))
    except OSError:
        pass
    return {"cpu_count": os.cpu_count(), "cpu_model": cpu_model, "memory": mem_total,
            "python": platform.python_version(), "pyspark": pyspark.__version__, "pyarrow": pyarrow.__version__,
            "java": java[0] if java else "", "confluent_kafka": getattr(confluent_kafka, "__version__", "")
            or str(confluent_kafka.version()),
            "librdkafka": confluent_kafka.libversion()[0],
            "broker": f"Apache Kafka {kafka_version} (KRaft, one node, tests.broker.KafkaBroker, loopback)",
            "platform": platform.platform(), "spark_master": "local[2]"}


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        if abs(v) >= 1000:
            return f"{v:,.0f}"
        return f"{v:.3g}" if abs(v) < 10 else f"{v:.1f}"
    return str(v)


MARK_START, MARK_END = "<!-- bench:generated:start -->", "<!-- bench:generated:end -->"


def render_markdown(results: dict[str, Any]) -> str:
    env = results["environment"]
    lines = [MARK_START, ""]
    for run in results.get("runs") or [results]:  # bench/combine.py: the figures of several runs
        lines.append(f"Run {run['started']} with `{run['command']}` ({run['duration_s']:.0f} s; load average "
                     f"before/after {run['loadavg_before']} / {run['loadavg_after']}).")
    lines += ["", "| environment | |", "|---|---|"]
    for k in ("cpu_count", "cpu_model", "memory", "python", "pyspark", "pyarrow", "java", "confluent_kafka",
              "librdkafka", "broker", "spark_master"):
        lines.append(f"| {k} | {env.get(k, '')} |")
    lines += ["", "| figure | min | median | max | unit | n | note |", "|---|---|---|---|---|---|---|"]
    for key, f in results["figures"].items():
        lines.append(f"| `{key}` | {_fmt(f['min'])} | {_fmt(f['median'])} | {_fmt(f['max'])} | {f['unit']} | "
                     f"{len(f['values'])} | {f.get('note', '')} |")
    if results.get("failures"):
        lines += ["", "Failures:", ""] + [f"- `{k}`: {v}" for k, v in results["failures"].items()]
    lines += ["", MARK_END]
    return "\n".join(lines)


def write_outputs(results: dict[str, Any], out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "results.json").write_text(json.dumps(results, indent=2, sort_keys=False) + "\n")
    md_path = out_dir / "RESULTS.md"
    generated = render_markdown(results)
    if md_path.exists() and MARK_START in md_path.read_text():
        text = md_path.read_text()
        head, rest = text.split(MARK_START, 1)
        tail = rest.split(MARK_END, 1)[1] if MARK_END in rest else ""
        md_path.write_text(head + generated + tail)
    else:
        md_path.write_text("# sparkcat benchmark results\n\nCommand: `python3 bench/run.py` (see bench/run.py).\n\n"
                           + generated + "\n")


def main(argv: list[str] | None = None) -> int:
    _ensure_environment()
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))  # tests.broker (the broker) and sparkcat
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="a short smoke run (fewer records, repeats, seconds)")
    p.add_argument("--only", action="append", choices=SCENARIOS, help="run only this scenario (repeatable)")
    p.add_argument("--out", help="output directory (default bench/ for a full run, bench/out/ otherwise)")
    p.add_argument("--copy-records", type=int, default=0)
    p.add_argument("--copy-repeats", type=int, default=0)
    p.add_argument("--copy-tasks", type=int, default=2)
    p.add_argument("--copy-batch", type=int, default=250_000,
                   help="batch.max.records (per task) of the copy connector")
    p.add_argument("--scale-levels", default="", help="comma-separated connector counts (default 10,50,100)")
    p.add_argument("--scale-timeout", type=float, default=420.0, help="seconds per level before calling it broken")
    p.add_argument("--driver-memory", default="1g", help="spark.driver.memory (conf/spark-defaults.conf: 1g)")
    p.add_argument("--fifo", action="store_true", help="Spark's FIFO scheduler instead of sparkcat's fair pools")
    p.add_argument("--budget-min", type=float, default=28.0,
                   help="skip scale levels that would not finish within this many minutes of the start")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for noisy in ("py4j", "sparkcat", "sparkcat.herder", "sparkcat.driver"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    logging.getLogger("py4j.clientserver").setLevel(logging.CRITICAL)
    scenarios = args.only or list(SCENARIOS)
    full = not args.quick and not args.only
    out_dir = Path(args.out) if args.out else (BENCH if full else BENCH / "out")
    command = "python3 bench/run.py" + ("" if not argv and len(sys.argv) <= 1 else " " + " ".join(
        argv if argv is not None else sys.argv[1:]))
    started = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    before = loadavg()
    t0 = time.monotonic()
    bench = Bench(args)
    env = environment()
    try:
        bench.start()
        for name in scenarios:
            bench.run(name)
    finally:
        bench.stop()
    results = {"command": command, "started": started, "duration_s": round(time.monotonic() - t0, 1),
               "loadavg_before": before, "loadavg_after": loadavg(), "environment": env,
               "scenarios": scenarios, "figures": bench.figures,
               "details": {k: v for k, v in bench.details.items() if k != "failures"},
               "failures": bench.details.get("failures", {})}
    write_outputs(results, out_dir)
    log.info("wrote %s and %s", out_dir / "results.json", out_dir / "RESULTS.md")
    return 1 if results["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
