"""``listener``: what a query listener in the driver costs each micro-batch of every query in its session.

A native sink's batches are reported from Spark's progress events. Until 2026-11-27 sparkcat listened with
PySpark's ``StreamingQueryListener``, which calls into Python for every event of every query in the session
and builds each ``StreamingQueryProgress`` field by field over py4j; now ``org.sparkcat.spark.ProgressFeed``
(jvm/sparkcat) keeps the tracked queries' events as JSON and one Python thread takes them in batches.

Eight tiny queries (``rate`` at 10 rows/s, one batch a second each, into ``noop``) run in a fresh session
with no listener, with PySpark's listener reading each event's JSON (as sparkcat did), and with the feed
tracking all eight; rounds alternate the three (``--listener-rounds``) so that the machine's drift falls on
all of them. Per committed batch: CPU of the JVM and of the driver's Python process.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import psutil
from pyspark.sql.streaming import StreamingQueryListener

from bench.harness import Bench, log
from bench.measure import driver_processes, stats

MODES = ("none", "pyspark_listener", "progress_feed")
QUERIES = 8


class _PySparkListener(StreamingQueryListener):
    """What sparkcat's listener did per event before the feed: the event's progress as a dict."""

    def onQueryStarted(self, event: Any) -> None:
        pass

    def onQueryProgress(self, event: Any) -> None:
        json.loads(event.progress.json)

    def onQueryIdle(self, event: Any) -> None:
        pass

    def onQueryTerminated(self, event: Any) -> None:
        pass


def run(bench: Bench) -> None:
    warm_up, observe = (5.0, 10.0) if bench.quick else (15.0, 30.0)
    driver = driver_processes(bench.broker_pids())
    jvm, python = driver["jvm"][0], driver["driver_python"][0]
    per_batch: dict[str, dict[str, list[float]]] = {m: {"jvm": [], "python": []} for m in MODES}
    for round_no in range(bench.args.listener_rounds):
        for mode in MODES:
            jvm_ms, python_ms = _measure(bench, mode, (jvm, python), warm_up, observe, f"r{round_no}")
            per_batch[mode]["jvm"].append(jvm_ms)
            per_batch[mode]["python"].append(python_ms)
            log.info("listener: %s round %d: %.1f ms JVM, %.2f ms Python per batch", mode, round_no, jvm_ms, python_ms)
    for mode, cpu in per_batch.items():
        for side, values in cpu.items():
            bench.figures[f"listener_{mode}_{side}_cpu_ms_per_batch"] = stats(
                values, "ms", f"CPU of the driver's {side} per committed batch, 8 tiny queries, {mode}")


def _measure(bench: Bench, mode: str, procs: tuple[psutil.Process, psutil.Process], warm_up: float, observe: float,
             tag: str) -> tuple[float, float]:
    """CPU per committed batch in ``mode``, in ms: of the JVM and of the driver's Python (``procs``)."""
    session = bench.spark.newSession()  # no listener but this mode's
    stop = threading.Event()
    feed = _listen(session, mode, stop)
    queries = [session.readStream.format("rate").option("rowsPerSecond", 10).load().writeStream.format("noop")
               .trigger(processingTime="50 milliseconds")
               .option("checkpointLocation", str(bench.work / "state" / "listener" / f"{mode}-{tag}-{i}")).start()
               for i in range(QUERIES)]
    try:
        if feed is not None:
            for q in queries:
                feed.track(str(q.id))
        time.sleep(warm_up)
        b0, (j0, p0) = _batches(queries), map(_cpu, procs)
        time.sleep(observe)
        b1, (j1, p1) = _batches(queries), map(_cpu, procs)
    finally:
        for q in queries:
            q.stop()
        stop.set()
    done = max(1, b1 - b0)
    return (j1 - j0) / done * 1000, (p1 - p0) / done * 1000


def _listen(session: Any, mode: str, stop: threading.Event) -> Any:
    """Register this mode's listener on ``session``; the feed (to track queries on) for ``progress_feed``."""
    if mode == "pyspark_listener":
        session.streams.addListener(_PySparkListener())
    if mode != "progress_feed":
        return None
    feed = session.sparkContext._jvm.org.sparkcat.spark.ProgressFeed()
    session._jsparkSession.streams().addListener(feed)

    def take() -> None:
        while not stop.is_set():
            json.loads(feed.poll(500))

    threading.Thread(target=take, name="bench-feed", daemon=True).start()
    return feed


def _batches(queries: list[Any]) -> int:
    return sum((q.lastProgress or {}).get("batchId", 0) for q in queries)


def _cpu(proc: psutil.Process) -> float:
    t = proc.cpu_times()
    return t.user + t.system
