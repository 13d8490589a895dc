"""``scale``: 10, 50, 100 connectors on the one driver: half increment sources of 2 tasks, half
file sinks fed by their topics through Spark's Kafka source; start-up time, memory, batch times and
offsets-store writes per level, until a level does not come up."""

from __future__ import annotations

import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.clients import percentile
from bench.harness import Bench, log
from bench.measure import driver_memory, mb_per_added_connector, parse_ts, stats


def run(bench: Bench) -> None:
    """Half increment sources (Python data source each), half Kafka-fed file sinks (Spark's Kafka source).

    The sources start first and their memory is taken; then the sinks, each reading its source's
    topic, and the difference over the number of sinks is the memory of one Kafka-fed connector.
    """
    levels = [int(x) for x in (bench.args.scale_levels or ("4,8" if bench.quick else "10,50,100")).split(",")]
    observe = 10.0 if bench.quick else 60.0
    running_max = 0
    exclude = bench.broker_pids()
    for level in levels:
        left = bench.deadline - time.monotonic()
        if left < 12.0 * level + observe + 120:  # measured: ~4 s per connector to start, ~8 s to delete
            bench.details[f"scale_{level}"] = {"skipped": f"only {left:.0f}s left of the run's time budget"}
            log.warning("scale %d skipped: %.0f s left of the time budget", level, left)
            break
        result = _scale_level(bench, level, observe, exclude, first=level == levels[0])
        if result["broke"] is None:
            running_max = max(running_max, level)
        else:
            break
    bench.figures["connectors_running_max"] = stats([running_max], "connectors",
                                                    "most connectors all RUNNING on one local[2] driver in this "
                                                    "run (half 2-task sources, half 1-task Kafka-fed sinks)")


def _put_all(bench: Bench, configs: dict[str, dict[str, str]]) -> None:
    """Put connector configs concurrently, as REST clients would (each put waits for its read-back)."""
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda item: bench.herder.put_connector_config(*item), configs.items()))


def _wait_running(bench: Bench, names: list[str], t0: float) -> tuple[dict[str, float], str | None]:
    """Wait until each connector's query is active with a committed batch; (ready times, why it broke)."""
    ready_at: dict[str, float] = {}
    while len(ready_at) < len(names):
        for name in names:
            rt = bench.runtime(name)
            if name not in ready_at and rt is not None and rt.batches.progress.batches >= 1 and rt.query is not None \
                    and rt.query.is_active():
                ready_at[name] = time.monotonic() - t0
        failed = [n for n in names if (bench.runtime(n) is not None and bench.runtime(n).failed_tasks)]
        if failed:
            return ready_at, (f"{len(failed)} connector(s) with FAILED tasks, e.g. {failed[0]}: "
                              f"{next(iter(bench.runtime(failed[0]).failed_tasks.values())).trace[-600:]}")
        if time.monotonic() - t0 > bench.args.scale_timeout:
            return ready_at, (f"only {len(ready_at)}/{len(names)} connectors RUNNING with a committed batch "
                              f"after {bench.args.scale_timeout}s")
        time.sleep(0.2)
    return ready_at, None


def _source_configs(names: list[str], prefix: str) -> dict[str, dict[str, str]]:
    """Increment sources of 2 tasks, one record per second each, to topics ``{prefix}{j}-{increment}``."""
    return {name: {
        "connector.class": "increment", "increments": f"{2 * j + 1},{2 * j + 2}", "tasks.max": "2",
        "topic.prefix": f"{prefix}{j}-", "throughput": "1", "records.per.poll": "100",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false"} for j, name in enumerate(names)}


#: ``--scale-sink``: the built-in file sink (exactly once) or an appending one (at least once, as Connect's
#: FileStreamSink); both share a query with the other sinks.
SINK_CLASSES = {"file-sink": "file-sink", "append": "bench.plugins.append_sink:AppendLineSink"}


def _sink_configs(names: list[str], prefix: str, out_dir: Path, kind: str = "file-sink") -> dict[str, dict[str, str]]:
    """Line sinks, sink ``j`` reading source ``j``'s topics."""
    return {name: {
        "connector.class": SINK_CLASSES[kind], "topics.regex": f"{re.escape(prefix)}{j}-.*", "tasks.max": "1",
        "file": str(out_dir / f"{j}.txt"),
        "value.converter": "org.apache.kafka.connect.storage.StringConverter"} for j, name in enumerate(names)}


@dataclass
class Pace:
    """What the connectors' batches did in an observation window (wall clock, from their queries' progress)."""

    durations_ms: list[float]   # non-empty batches that started in the window
    periods_s: list[float]      # per connector: the window over its batch starts in it (the window if none)
    longest_gaps_s: list[float]  # per connector: longest time without a batch start, the open gap at either end included
    batches: int                # batch starts in the window, all connectors


def _await_batches_begun_by(bench: Bench, names: list[str], moment: float, timeout_s: float) -> None:
    """Until every connector reported a batch that began after ``moment`` (so each batch begun before it has
    ended and is in its progress), or ``timeout_s``: a batch shows in the progress only once it has ended."""
    deadline = time.monotonic() + timeout_s
    waiting = list(names)
    while waiting and time.monotonic() < deadline:
        waiting = [n for n in waiting if not any(parse_ts(b["timestamp"]) > moment for b in bench.progress(n)[-3:])]
        time.sleep(1.0)
    if waiting:
        log.warning("%d connector(s) began no batch within %.0f s after the window; their last one may be missing",
                    len(waiting), timeout_s)


def _pace(bench: Bench, names: list[str], start: float, end: float) -> Pace:
    """Every connector counts: one that started no batch in the window has the window as its period and gap."""
    pace = Pace([], [], [], 0)
    for name in names:
        rows = sorted(((parse_ts(b["timestamp"]), b) for b in bench.progress(name)), key=lambda r: r[0])
        inside = [(t, b) for t, b in rows if start < t <= end]
        before = [t for t, _ in rows if t <= start]
        points = [before[-1] if before else start, *(t for t, _ in inside), end]
        pace.longest_gaps_s.append(max(b - a for a, b in zip(points, points[1:])))
        pace.periods_s.append((end - start) / max(1, len(inside)))
        pace.batches += len(inside)
        pace.durations_ms += [b["durationMs"]["triggerExecution"] for _, b in inside if b["records"] > 0]
    return pace


def _scale_level(bench: Bench, level: int, observe: float, exclude: set[int], first: bool) -> dict[str, Any]:
    """One level; memory per connector only when ``first``: a later level starts on the Python workers and the
    JVM heap the earlier one grew, so its growth per connector reads near 0."""
    sources = [f"scale-{bench.run_id}-{level}-src-{i}" for i in range(level // 2)]
    sinks = [f"scale-{bench.run_id}-{level}-sink-{i}" for i in range(level - len(sources))]
    prefix = bench.topic(f"scale{level}_")
    base_mem = driver_memory(exclude)
    t0 = time.monotonic()
    _put_all(bench, _source_configs(sources, prefix))
    ready_at, broke = _wait_running(bench, sources, t0)
    sources_mem = driver_memory(exclude)
    t1 = time.monotonic()
    if broke is None:
        _put_all(bench, _sink_configs(sinks, prefix, bench.work / "state" / "out" / f"scale{level}",
                                      bench.args.scale_sink))
        sink_ready, broke = _wait_running(bench, sinks, t1)
        ready_at.update({n: t + (t1 - t0) for n, t in sink_ready.items()})
    else:
        sinks = []  # the sources did not all come up: no sink was put
    all_ready = time.monotonic() - t0
    obs_start, wall_start = time.monotonic(), time.time()
    time.sleep(observe)
    puts_ms, _ = bench.offset_put_stats(obs_start, time.monotonic())
    wall_end = time.time()
    mem = driver_memory(exclude)
    names = sources + sinks
    _await_batches_begun_by(bench, names, wall_end, timeout_s=120.0)
    pace = _pace(bench, names, wall_start, wall_end)
    kind_gaps = {kind: _pace(bench, members, wall_start, wall_end).longest_gaps_s  # sources share a query (issue 41)
                 for kind, members in (("source", sources), ("sink", sinks)) if members}
    delete_s = bench.delete(*names)
    per_sink = mb_per_added_connector(sources_mem, mem, len(sinks)) if sinks else None
    per_source = (sources_mem["total_rss_mb"] - base_mem["total_rss_mb"]) / max(1, len(sources))
    f = bench.figures
    f[f"scale_{level}_all_running_s"] = stats(
        [all_ready], "s", f"{len(sources)} sources x 2 tasks, then {len(sinks)} Kafka-fed sinks: first put -> "
        "all RUNNING with a committed batch")
    f[f"scale_{level}_ready"] = stats([len(ready_at)], "connectors", f"of the {len(sources + sinks)} put, RUNNING "
                                      f"with a committed batch within {bench.args.scale_timeout:.0f} s")
    f[f"scale_{level}_rss_mb"] = stats([mem["total_rss_mb"]], "MB", "driver Python + JVM + Python workers, RSS sum")
    f[f"scale_{level}_pss_mb"] = stats([mem["total_pss_mb"]], "MB", "same processes, PSS (shared pages once)")
    if first:
        f[f"scale_{level}_mb_per_kafka_fed_connector"] = stats(
            [per_sink], "MB", "JVM + driver Python RSS growth when the Kafka-fed sinks started, per sink, plus "
            "any growth of the Python workers' RSS")
        f[f"scale_{level}_mb_per_source_connector"] = stats(
            [per_source], "MB", "RSS growth when the increment sources started, per source")
    window = f"in the {observe:.0f} s after all were RUNNING"
    f[f"scale_{level}_batch_ms"] = stats(pace.durations_ms, "ms", f"micro-batch duration per connector, {window}")
    f[f"scale_{level}_trigger_period_s"] = stats(
        pace.periods_s, "s", f"per connector, the window over its batch starts {window} (1 s trigger; none: the window)")
    f[f"scale_{level}_trigger_period_p95_s"] = stats(
        [percentile(sorted(pace.periods_s), 0.95)], "s", "95th percentile over the connectors of that period")
    f[f"scale_{level}_longest_gap_s"] = stats(
        pace.longest_gaps_s, "s", f"per connector, its longest time without a batch start {window}")
    f[f"scale_{level}_longest_gap_p95_s"] = stats(
        [percentile(sorted(pace.longest_gaps_s), 0.95)], "s", "95th percentile over the connectors of that gap")
    for kind, gaps in kind_gaps.items():
        f[f"scale_{level}_{kind}_longest_gap_p95_s"] = stats(
            [percentile(sorted(gaps), 0.95)], "s", f"95th percentile of that gap over the {kind}s alone")
    f[f"scale_{level}_delete_s"] = stats([delete_s], "s", "deleting all of them")
    f[f"scale_{level}_offsets_put_ms"] = stats(puts_ms, "ms", "offsets-store write per committed batch, "
                                               "waiting for the store's lock included")
    f[f"scale_{level}_batches_per_s"] = stats([pace.batches / observe], "batches/s",
                                              f"batches started per second, all connectors together, {window}")
    if broke is None and first:
        f["mb_per_kafka_fed_connector"] = stats([per_sink], "MB", f"from the {level}-connector level")
    bench.details[f"scale_{level}"] = {"memory_before": base_mem, "memory_sources": sources_mem, "memory": mem,
                                       "broke": broke, "ready": len(ready_at),
                                       "ready_s_by_connector": sorted(round(v, 2) for v in ready_at.values())}
    log.info("scale %d: all running in %.1fs, RSS %.0f MB (%s MB per Kafka-fed sink, %.0f per source), "
             "broke: %s", level, all_ready, mem["total_rss_mb"], per_sink and round(per_sink), per_source, broke)
    return {"broke": broke}
