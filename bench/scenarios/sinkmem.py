"""``sinkmem``: where the memory of a Kafka-fed sink goes, with ``--sinkmem-n`` of them beside as many sources.

As the scale scenario's first level: N increment sources (2 tasks each) start and run, then N file
sinks reading their topics. Before and after the sinks (each after 30-60 s of running), per sink:

- RSS of the JVM and of the driver's Python (what ``scale`` reports as memory per Kafka-fed connector);
- the JVM's heap as committed and as used by live objects after a full GC (``jcmd GC.class_histogram``
  forces one): heap that G1 took under the allocation rate against what the queries keep;
- the JVM's threads, by name (digits folded), and the classes whose live bytes grew most;
- the JVM's own accounts per category when Native Memory Tracking is on: run with
  ``--spark-conf spark.driver.extraJavaOptions=-XX:NativeMemoryTracking=summary``.

Needs the JDK's ``jcmd`` on the PATH for the heap, histogram and NMT parts.
"""

from __future__ import annotations

import collections
import re
import shutil
import subprocess
import time
from typing import Any

from bench.harness import Bench, log
from bench.measure import driver_memory, driver_processes, stats
from bench.scenarios import scale
from bench.scenarios.batchcost import _jvm_threads

HISTOGRAM_ROW = re.compile(r"\s*\d+:\s+(\d+)\s+(\d+)\s+(\S+)")
NMT_ROW = re.compile(r"-\s+([A-Za-z ]+?) \(reserved=\d+KB, committed=(\d+)KB\)")


def run(bench: Bench) -> None:
    n = bench.args.sinkmem_n
    jvm = driver_processes(bench.broker_pids())["jvm"][0].pid
    prefix = bench.topic("sinkmem_")
    sources = [f"sinkmem-{bench.run_id}-src-{i}" for i in range(n)]
    sinks = [f"sinkmem-{bench.run_id}-sink-{i}" for i in range(n)]
    t0 = time.monotonic()
    scale._put_all(bench, scale._source_configs(sources, prefix))
    _raise_if_broken(scale._wait_running(bench, sources, t0)[1])
    time.sleep(30)
    before = _snapshot(bench, jvm)
    t1 = time.monotonic()
    scale._put_all(bench, scale._sink_configs(sinks, prefix, bench.work / "state" / "out" / "sinkmem"))
    _raise_if_broken(scale._wait_running(bench, sinks, t1)[1])
    time.sleep(60)
    after = _snapshot(bench, jvm)
    bench.delete(*sources, *sinks)
    _report(bench, n, before, after)


def _raise_if_broken(broke: str | None) -> None:
    if broke is not None:
        raise RuntimeError(broke)


def _jcmd(pid: int, *command: str) -> str:
    """``jcmd`` output, or "" without a JDK's jcmd."""
    if shutil.which("jcmd") is None:
        return ""
    return subprocess.run(["jcmd", str(pid), *command], capture_output=True, text=True, timeout=120).stdout


def _snapshot(bench: Bench, jvm: int) -> dict[str, Any]:
    """RSS first (as ``scale`` takes it, before the full GC the histogram forces), then the JVM's own views."""
    memory = driver_memory(bench.broker_pids())
    threads = collections.Counter(name for _, name in _jvm_threads(jvm))  # names with digits folded
    nmt_text = _jcmd(jvm, "VM.native_memory", "summary")  # "not enabled" without the flag: no rows
    nmt = {m.group(1).strip(): int(m.group(2)) / 1024 for m in NMT_ROW.finditer(nmt_text)}
    histogram = {m.group(3): int(m.group(2)) for m in HISTOGRAM_ROW.finditer(_jcmd(jvm, "GC.class_histogram"))}
    heap = re.search(r"total (\d+)K, used (\d+)K", _jcmd(jvm, "GC.heap_info"))
    return {"memory": memory, "threads": threads, "nmt_mb": nmt, "histogram": histogram,
            "heap_committed_mb": int(heap.group(1)) / 1024 if heap else None,
            "heap_live_mb": int(heap.group(2)) / 1024 if heap else None}


def _report(bench: Bench, n: int, before: dict[str, Any], after: dict[str, Any]) -> None:
    f = bench.figures

    def per_sink(key: str, value_before: float | None, value_after: float | None, unit: str, note: str) -> None:
        if value_before is not None and value_after is not None:
            f[f"sinkmem_{key}"] = stats([round((value_after - value_before) / n, 2)], unit,
                                        f"per Kafka-fed sink: {note}")

    for group in ("jvm", "driver_python"):
        per_sink(f"rss_{group}_mb", before["memory"][group]["rss_mb"], after["memory"][group]["rss_mb"], "MB",
                 f"RSS growth of the {group.replace('_', ' ')}")
    per_sink("heap_committed_mb", before["heap_committed_mb"], after["heap_committed_mb"], "MB",
             "JVM heap committed after a full GC")
    per_sink("heap_live_mb", before["heap_live_mb"], after["heap_live_mb"], "MB",
             "JVM heap used by live objects after a full GC")
    per_sink("jvm_threads", sum(before["threads"].values()), sum(after["threads"].values()), "threads",
             "JVM threads")
    for category in sorted(set(before["nmt_mb"]) & set(after["nmt_mb"])):
        key = re.sub(r"\W+", "_", category.lower())
        per_sink(f"nmt_{key}_mb", before["nmt_mb"][category],
                 after["nmt_mb"][category], "MB", f"NMT committed, {category}")
    grown_threads = {name: after["threads"][name] - before["threads"].get(name, 0) for name in after["threads"]}
    grown_classes = sorted(((after["histogram"].get(c, 0) - before["histogram"].get(c, 0), c)
                            for c in set(before["histogram"]) | set(after["histogram"])), reverse=True)[:15]
    bench.details["sinkmem"] = {
        "n": n, "before": {k: v for k, v in before.items() if k != "histogram"},
        "after": {k: v for k, v in after.items() if k != "histogram"},
        "threads_per_sink": {k: round(v / n, 2) for k, v in sorted(grown_threads.items(), key=lambda kv: -kv[1]) if v},
        "live_kb_per_sink_by_class": {c: round(b / 1024 / n, 1) for b, c in grown_classes}}
    log.info("sinkmem: %d sinks: %s", n, {k: v["median"] for k, v in f.items() if k.startswith("sinkmem_")})
