"""``sourcescale``: N file source connectors on sparkcat and on a real Kafka Connect 4.1.1 worker, same broker.

Each side gets N connectors (``file-source`` on sparkcat, which share one query; Connect's
``FileStreamSourceConnector``), each tailing a file of its own into a topic of its own, at the default
1 s trigger. Per level and side: time from the first create request to all N RUNNING (Connect: its
status API; sparkcat: its status store), then three rounds of one line appended to every file at once,
each line's latency from its append to its record's timestamp in Kafka (the producer's CreateTime on both
sides; p50/p95/p99 over the N x 3 lines), and the runtime's CPU and RSS while idle between rounds.
Levels run one after the other, each side alone (sparkcat's connectors are deleted before Connect's
start), so neither side's load reaches the other's figures.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench.clients import percentile
from bench.harness import Bench, log, wait_for
from bench.measure import stats
from bench.scenarios.connect import _proc_cpu, _processes

STRING = "org.apache.kafka.connect.storage.StringConverter"
CONNECT_JVM = ("-Xms256M", "-Xmx2G")  # connect-distributed.sh's heap
ROUNDS = 3
#: The idle measurement's length: several of an idle shared query's held triggers (10 s each).
IDLE_S = 30.0


def run(bench: Bench) -> None:
    beside_connect(bench, "ss", "10,100,200", _level)


def beside_connect(bench: Bench, tag: str, levels: str, level: Callable[[Bench, Any, str, int], None],
                   empty: Callable[[Bench, Any, str], None] | None = None) -> None:
    """Each level (``--scale-levels``, else ``levels``) on sparkcat and then on one Connect 4.1.1 worker, alone;
    then ``empty`` on each side, with every level's connectors deleted."""
    from tests.connect_worker import ConnectWorker

    counts = [int(x) for x in (bench.args.scale_levels or ("4" if bench.quick else levels)).split(",")]
    worker = ConnectWorker(bench.broker.bootstrap, f"bench-{tag}-{bench.run_id}", log_dir=bench.work / f"connect-{tag}",
                           jvm_options=CONNECT_JVM).start()
    try:
        for n in counts:
            for side in ("sparkcat", "connect"):
                level(bench, worker, side, n)
        if empty is not None:
            for side in ("sparkcat", "connect"):
                empty(bench, worker, side)
    finally:
        worker.stop()


def _level(bench: Bench, worker: Any, side: str, n: int) -> None:
    files_dir = bench.work / "state" / f"ss-{side}-{n}"  # inside the driver's state.dir: an allowed file directory
    files_dir.mkdir(parents=True, exist_ok=True)
    names = [f"ss-{side[0]}-{bench.run_id}-{n}-{i}" for i in range(n)]
    files = {name: files_dir / f"{i}.txt" for i, name in enumerate(names)}
    topics = {name: bench.topic(f"ss-{side[0]}{n}-{i}") for i, name in enumerate(names)}
    for name in names:
        files[name].write_text("")
        bench.create_topic(topics[name], 1)
    procs = _processes(bench, worker, side)
    _, rss0 = _proc_cpu(procs)
    t0 = time.monotonic()
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda name: _create(bench, worker, side, name, files[name], topics[name]), names))
    wait_for(lambda: _running(bench, worker, side, names), 900, 0.5, f"{n} {side} connectors RUNNING")
    all_running = time.monotonic() - t0
    with bench.cpu.paused():  # the bench's own sampler runs in the driver's process
        cpu0, _ = _proc_cpu(procs)
        idle_from = time.monotonic()
        time.sleep(IDLE_S)
        cpu1, rss = _proc_cpu(procs)
        idle_cpu = (cpu1 - cpu0) / (time.monotonic() - idle_from)
    latencies = []
    for round_ in range(ROUNDS):
        latencies += _round(bench, files, topics, round_)
    latencies.sort()
    _delete(bench, worker, side, names)
    prefix = f"sourcescale_{n}_{side}"
    f = bench.figures
    f[f"{prefix}_all_running_s"] = stats([all_running], "s", f"first create request -> all {n} RUNNING")
    for q in (0.5, 0.95, 0.99):
        f[f"{prefix}_latency_p{int(q * 100)}_s"] = stats(
            [percentile(latencies, q)], "s", f"a line's append -> its record's timestamp in Kafka, {n} x {ROUNDS} lines")
    f[f"{prefix}_idle_cpu_pct"] = stats(
        [idle_cpu * 100], "% of a core", f"the runtime's processes in all, {IDLE_S:.0f} s with nothing to read")
    f[f"{prefix}_idle_cpu_per_connector_pct"] = stats(
        [idle_cpu / n * 100], "% of a core", f"the runtime's processes, {IDLE_S:.0f} s with nothing to read")
    f[f"{prefix}_rss_mb_per_connector"] = stats([(rss - rss0) / n], "MB", "RSS growth of the runtime's processes")
    f[f"{prefix}_rss_mb"] = stats([rss], "MB", "RSS of the runtime's processes")
    log.info("sourcescale %d %s: all RUNNING in %.1f s; latency p50/p95/p99 %.2f/%.2f/%.2f s; idle %.2f%% of a "
             "core per connector; %.0f MB", n, side, all_running, percentile(latencies, 0.5),
             percentile(latencies, 0.95), percentile(latencies, 0.99), idle_cpu / n * 100, rss)


def _create(bench: Bench, worker: Any, side: str, name: str, path: Path, topic: str) -> None:
    config = {"file": str(path), "topic": topic, "value.converter": STRING}
    if side == "sparkcat":
        bench.herder.put_connector_config(name, {"connector.class": "file-source", **config})
    else:
        worker.request("POST", "/connectors", {"name": name, "config": {
            "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "key.converter": STRING,
            **config}})


def _running(bench: Bench, worker: Any, side: str, names: list[str]) -> bool:
    if side == "sparkcat":
        return all(bench.connector_state(n) == "RUNNING" and _task_running(bench, n) for n in names)
    statuses = worker.request("GET", "/connectors?expand=status")
    return all(n in statuses and statuses[n]["status"]["connector"]["state"] == "RUNNING"
               and [t["state"] for t in statuses[n]["status"]["tasks"]] == ["RUNNING"] for n in names)


def _task_running(bench: Bench, name: str) -> bool:
    return [t.state.value for t in bench.driver.stores.status.tasks(name)] == ["RUNNING"]


def _round(bench: Bench, files: dict[str, Path], topics: dict[str, str], round_: int) -> list[float]:
    """Append one line to every file at once; each line's latency to its record's CreateTime in Kafka."""
    from confluent_kafka import Consumer, TopicPartition

    appended: dict[str, float] = {}
    for name, path in files.items():
        with path.open("a") as f:
            f.write(f"round {round_}\n")
        appended[name] = time.time()
    consumer = Consumer({"bootstrap.servers": bench.broker.bootstrap, "group.id": f"ss-{bench.run_id}-{round_}",
                         "enable.auto.commit": False, "isolation.level": "read_committed"})
    by_topic = {topics[name]: name for name in files}
    # from the start: offsets are not line numbers (exactly-once transactions leave a marker per commit)
    consumer.assign([TopicPartition(t, 0, 0) for t in by_topic])
    line = f"round {round_}".encode()
    out: dict[str, float] = {}
    deadline = time.monotonic() + 300
    try:
        while len(out) < len(files) and time.monotonic() < deadline:
            for msg in consumer.consume(1000, 1.0):
                if msg.error() is None and msg.value() == line and msg.topic() not in out:
                    out[msg.topic()] = msg.timestamp()[1] / 1000 - appended[by_topic[msg.topic()]]
    finally:
        consumer.close()
    if len(out) < len(files):
        log.warning("sourcescale: %d of %d lines of round %d never arrived", len(files) - len(out), len(files), round_)
    return list(out.values())


def _delete(bench: Bench, worker: Any, side: str, names: list[str]) -> None:
    if side == "sparkcat":
        bench.delete(*names)
        return
    for name in names:
        worker.request("DELETE", f"/connectors/{name}")
