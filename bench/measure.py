"""What the bench measures with: figures (min/median/max), machine CPU, process memory, Spark progress
timestamps, offsets-store write times, and arrival times of records in a topic.

CPU and memory come from psutil; the driver's processes are found through this process's tree,
because other test runs share the machine and the process names.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import statistics
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import psutil

from sparkcat.storage.offsets import OffsetStore


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


def loadavg() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def parse_ts(text: str) -> float:
    """A Spark progress timestamp (``2025-01-01T00:00:00.123Z``) as epoch seconds."""
    return dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=dt.timezone.utc).timestamp()


class CpuSampler:
    """Machine-wide busy CPU seconds (all but idle and iowait), sampled every 0.1 s.

    Says how much of the two cores a stretch of a run used, and CPU seconds per record.
    """

    def __init__(self) -> None:
        self.samples: list[tuple[float, float]] = []  # (epoch s, busy CPU s since boot)
        self._stop = threading.Event()
        self._paused = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-cpu", daemon=True)

    def start(self) -> CpuSampler:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    @staticmethod
    def _busy() -> float:
        times = psutil.cpu_times()
        return sum(times) - times.idle - getattr(times, "iowait", 0.0)

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """No samples inside: the sampler runs in the driver's process (0.3% of a core), which an idle
        measurement of that process must leave out."""
        self._paused.set()
        try:
            yield
        finally:
            self._paused.clear()

    def _run(self) -> None:
        while not self._stop.is_set():
            if not self._paused.is_set():
                self.samples.append((time.time(), self._busy()))
            self._stop.wait(1.0 if self._paused.is_set() else 0.1)

    def busy_s(self, t0: float, t1: float) -> float | None:
        """Busy CPU seconds between two epoch times (nearest samples inside the stretch)."""
        inside = [s for s in self.samples if t0 <= s[0] <= t1]
        if len(inside) < 2:
            return None
        (a_t, a_b), (b_t, b_b) = inside[0], inside[-1]
        return (b_b - a_b) * (t1 - t0) / (b_t - a_t) if b_t > a_t else None


# ---------------------------------------------------------------- processes and memory


def _kind(proc: psutil.Process) -> str:
    """``jvm``, ``python_workers`` or ``other``, from the command line."""
    try:
        cmd = proc.cmdline()
    except psutil.Error:
        return ""
    exe = cmd[0] if cmd else ""
    line = " ".join(cmd)
    if "java" in exe or "org.apache.spark" in line:
        return "jvm"
    if "pyspark" in line or "python" in exe:
        return "python_workers"
    return "other" if cmd else ""


def _mem_kb(proc: psutil.Process) -> tuple[int, int]:
    """(RSS, PSS) of a process in kB (PSS counts pages shared by forked workers once in total)."""
    try:
        full = proc.memory_full_info()
    except psutil.Error:
        try:
            return proc.memory_info().rss // 1024, 0
        except psutil.Error:
            return 0, 0
    return full.rss // 1024, getattr(full, "pss", 0) // 1024


def driver_processes(exclude: set[int]) -> dict[str, list[psutil.Process]]:
    """This process, its JVM and the JVM's Python workers (and any other descendant), by kind;
    ``exclude`` are processes of the bench itself that are not the driver (the broker)."""
    groups: dict[str, list[psutil.Process]] = {"driver_python": [psutil.Process()], "jvm": [],
                                               "python_workers": [], "other": []}
    for proc in psutil.Process().children(recursive=True):
        if proc.pid in exclude:
            continue
        kind = _kind(proc)
        if kind:
            groups[kind].append(proc)
    return groups


def driver_memory(exclude: set[int]) -> dict[str, Any]:
    """Memory of this bench's driver: this Python process, its JVM, and the JVM's Python workers."""
    out: dict[str, Any] = {}
    total_rss = total_pss = 0
    for name, procs in driver_processes(exclude).items():
        rss = pss = 0
        for proc in procs:
            r, p = _mem_kb(proc)
            rss, pss = rss + r, pss + p
        out[name] = {"processes": len(procs), "rss_mb": round(rss / 1024, 1), "pss_mb": round(pss / 1024, 1)}
        if name != "other":
            total_rss, total_pss = total_rss + rss, total_pss + pss
    out["total_rss_mb"] = round(total_rss / 1024, 1)
    out["total_pss_mb"] = round(total_pss / 1024, 1)
    return out


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


# ---------------------------------------------------------------- offsets-store writes


class TimedOffsetStore(OffsetStore):
    """The offsets store, noting when each write started and how long it took (its lock wait included).

    The bench hands it to the ``Driver`` as its offsets store, so every committed batch's write is
    timed where it happens, without patching the store the driver opened.
    """

    def __init__(self, backend: Any) -> None:
        super().__init__(backend)
        self.puts: list[tuple[float, float]] = []  # (monotonic start, duration s)

    def put(self, connector: str, offsets: list[tuple[dict[str, Any], Any]]) -> None:
        t = time.monotonic()
        try:
            super().put(connector, offsets)
        finally:
            self.puts.append((t, time.monotonic() - t))

    def put_stats(self, since: float, until: float) -> tuple[list[float], float]:
        """Durations (ms) of the writes that ended in [since, until], and how many ended per second:
        the driver's commit rate over all connectors."""
        inside = [d for t, d in self.puts if since <= t + d <= until]
        return [d * 1000 for d in inside], (len(inside) / (until - since) if until > since else 0.0)


# ---------------------------------------------------------------- records arriving in a topic


class Watcher:
    """A consumer thread that notes when the first and the last record of a topic arrived (monotonic)."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.bootstrap, self.topic = bootstrap, topic
        self.first: float | None = None
        self.last: float = 0.0
        self.count = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name=f"watch-{topic}")

    def start(self) -> Watcher:
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
