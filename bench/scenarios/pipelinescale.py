"""``pipelinescale``: N connectors, half file sources and half sinks fed by their topics, on sparkcat and on a
real Kafka Connect 4.1.1 worker, same broker (issue 41's benchmark).

Source ``j`` tails a file of its own into topic ``j``; sink ``j`` reads topic ``j`` into an output file of its
own. sparkcat runs ``file-source`` (one shared query) and the sink ``--scale-sink`` names (one shared query):
``file-sink`` (exactly once) or ``append`` (at least once, Connect's FileStreamSink's guarantee);
Connect runs ``FileStreamSourceConnector`` and ``FileStreamSinkConnector``. Per level and side, each side alone
(sparkcat's connectors are deleted before Connect's start): time from the first create request to all N
RUNNING, the runtime's CPU and RSS idle (over ``IDLE_S``, from ``SETTLE_S`` after all were RUNNING: the first
batches, JIT compilation and start-up's garbage are not idleness, on either side), then three rounds of one line
appended to every source file at once, each line's latency from its append to its appearance in its sink's output file (p50/p95/p99 over the
N/2 x 3 lines, the files polled every 20 ms). After the levels, each side's idle with no connector at all
(``pipelinescale_0_*``): the runtime's own floor, which a level's idle figure includes.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench.clients import percentile
from bench.harness import Bench, log, wait_for
from bench.measure import stats
from bench.scenarios.connect import _proc_cpu, _process_kinds, _processes
from bench.scenarios.scale import SINK_CLASSES
from bench.scenarios.sourcescale import IDLE_S, ROUNDS, STRING, _delete, _running, beside_connect

#: Seconds between all RUNNING and the start of the idle measurement.
SETTLE_S = 15.0

CONNECT_SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"
CONNECT_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"


def run(bench: Bench) -> None:
    beside_connect(bench, "ps", "10,100,200,500", _level, _empty)


def _empty(bench: Bench, worker: Any, side: str) -> None:
    """The runtime's own idle floor: the same measurement with no connector, after the levels (a warm JVM, as
    theirs was), so a level's figure splits into the runtime's floor and what its connectors add."""
    time.sleep(SETTLE_S)
    used, rss = _idle(bench, worker, side)
    idle_cpu = sum(used.values())
    bench.figures[f"pipelinescale_0_{side}_idle_cpu_pct"] = stats(
        [idle_cpu * 100], "% of a core", f"the runtime's processes in all with no connector, {IDLE_S:.0f} s")
    bench.figures[f"pipelinescale_0_{side}_rss_mb"] = stats([rss], "MB", "RSS of the runtime's processes")
    log.info("pipelinescale 0 %s: idle %.1f%% of a core (%s); %.0f MB", side, idle_cpu * 100,
             ", ".join(f"{k} {share * 100:.1f}" for k, share in used.items()), rss)


def _idle(bench: Bench, worker: Any, side: str) -> tuple[dict[str, float], float]:
    """Each process kind's share of a core over ``IDLE_S``, and the processes' RSS (MB) at its end."""
    kinds = _process_kinds(bench, worker, side)  # the Python workers the connectors started, too
    with bench.cpu.paused():  # the bench's own sampler runs in the driver's process
        before = {k: _proc_cpu(v) for k, v in kinds.items()}  # (CPU s, RSS MB) per kind
        idle_from = time.monotonic()
        time.sleep(IDLE_S)
        after = {k: _proc_cpu(v) for k, v in kinds.items()}
        idle_s = time.monotonic() - idle_from
    return {k: (after[k][0] - before[k][0]) / idle_s for k in kinds}, sum(mb for _, mb in after.values())


def _level(bench: Bench, worker: Any, side: str, n: int) -> None:
    work = bench.work / "state" / f"ps-{side}-{n}"  # inside the driver's state.dir: an allowed file directory
    work.mkdir(parents=True, exist_ok=True)
    pairs = [f"ps-{side[0]}-{bench.run_id}-{n}-{j}" for j in range(n // 2)]
    sources = {f"{p}-src": work / f"in-{j}.txt" for j, p in enumerate(pairs)}
    outs = {f"{p}-sink": work / f"out-{j}.txt" for j, p in enumerate(pairs)}
    topics = [bench.topic(f"ps-{side[0]}{n}-{j}") for j in range(len(pairs))]
    for path in sources.values():
        path.write_text("")
    for topic in topics:
        bench.create_topic(topic, 1)
    configs = {**{s: _source(side, path, topics[j]) for j, (s, path) in enumerate(sources.items())},
               **{k: _sink(side, bench.args.scale_sink, path, topics[j]) for j, (k, path) in enumerate(outs.items())}}
    procs = _processes(bench, worker, side)
    _, rss0 = _proc_cpu(procs)
    t0 = time.monotonic()
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda item: _create(bench, worker, side, *item), configs.items()))
    names = list(configs)
    wait_for(lambda: _running(bench, worker, side, names), 1200, 0.5, f"{len(names)} {side} connectors RUNNING")
    all_running = time.monotonic() - t0
    time.sleep(SETTLE_S)
    used, rss = _idle(bench, worker, side)
    idle_cpu = sum(used.values())
    if side == "sparkcat":
        log.info("pipelinescale %d %s: idle %% of a core by process: %s", n, side,
                 ", ".join(f"{k} {share * 100:.1f}" for k, share in used.items()))
    latencies: list[float] = []
    for round_ in range(ROUNDS):
        latencies += _round(list(sources.values()), list(outs.values()), round_)
    latencies.sort()
    _delete(bench, worker, side, names)
    _figures(bench, f"pipelinescale_{n}_{side}", len(names), all_running, latencies, idle_cpu, rss, rss0)


def _source(side: str, path: Path, topic: str) -> dict[str, str]:
    config = {"file": str(path), "topic": topic, "value.converter": STRING}
    return {"connector.class": "file-source", **config} if side == "sparkcat" else \
        {"connector.class": CONNECT_SOURCE, "key.converter": STRING, **config}


def _sink(side: str, kind: str, path: Path, topic: str) -> dict[str, str]:
    config = {"file": str(path), "topics": topic, "value.converter": STRING}
    return {"connector.class": SINK_CLASSES[kind], **config} if side == "sparkcat" else \
        {"connector.class": CONNECT_SINK, "key.converter": STRING, **config}


def _create(bench: Bench, worker: Any, side: str, name: str, config: dict[str, str]) -> None:
    if side == "sparkcat":
        bench.herder.put_connector_config(name, config)
    else:
        worker.request("POST", "/connectors", {"name": name, "config": config})


def _round(sources: list[Path], outs: list[Path], round_: int, timeout_s: float = 300.0) -> list[float]:
    """Append one line to every source file at once; each line's time until its sink's file has it."""
    line = f"round {round_}\n"
    appended = {}
    for j, path in enumerate(sources):
        with path.open("a") as f:
            f.write(line)
        appended[j] = time.time()
    seen = {j: outs[j].stat().st_size if outs[j].exists() else 0 for j in range(len(outs))}
    out: dict[int, float] = {}
    deadline = time.monotonic() + timeout_s
    while len(out) < len(outs) and time.monotonic() < deadline:
        for j in [j for j in range(len(outs)) if j not in out]:
            if outs[j].exists() and outs[j].stat().st_size > seen[j]:
                with outs[j].open("rb") as f:
                    f.seek(seen[j])
                    if line.encode() in f.read():
                        out[j] = time.time() - appended[j]
        time.sleep(0.02)
    if len(out) < len(outs):
        log.warning("pipelinescale: %d of %d lines of round %d never reached their sink", len(outs) - len(out),
                    len(outs), round_)
    return list(out.values())


def _figures(bench: Bench, prefix: str, n: int, all_running: float, latencies: list[float], idle_cpu: float,
             rss: float, rss0: float) -> None:
    f = bench.figures
    f[f"{prefix}_all_running_s"] = stats([all_running], "s", f"first create request -> all {n} RUNNING")
    for q in (0.5, 0.95, 0.99):
        f[f"{prefix}_latency_p{int(q * 100)}_s"] = stats(
            [percentile(latencies, q)], "s", f"a line's append to a source file -> in its sink's file, {n // 2} x "
                                             f"{ROUNDS} lines")
    f[f"{prefix}_idle_cpu_pct"] = stats([idle_cpu * 100], "% of a core",
                                        f"the runtime's processes in all, {IDLE_S:.0f} s with nothing to read, "
                                        f"from {SETTLE_S:.0f} s after all RUNNING")
    f[f"{prefix}_rss_mb_per_connector"] = stats([(rss - rss0) / n], "MB", "RSS growth of the runtime's processes")
    f[f"{prefix}_rss_mb"] = stats([rss], "MB", "RSS of the runtime's processes")
    log.info("pipelinescale %d %s: all RUNNING in %.1f s; latency p50/p95/p99 %.2f/%.2f/%.2f s; idle %.1f%% of a "
             "core; %.0f MB", n, prefix.rsplit("_", 1)[1], all_running, percentile(latencies, 0.5),
             percentile(latencies, 0.95), percentile(latencies, 0.99), idle_cpu * 100, rss)
