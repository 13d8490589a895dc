"""``connect``: sparkcat side by side with a real Kafka Connect worker (4.1.1) on the same broker, same run.

- topic-to-topic copy of the same N records of 100 bytes from a 4-partition topic, default settings,
  4 tasks where there are tasks: Connect's ``MirrorSourceConnector``; the sparkcat ``kafka`` connector
  at-least-once (Spark's Kafka source and sink, asynchronous progress tracking) and exactly-once
  (sparkcat's JVM transactional writer); the same copy hand-written as a PySpark Structured Streaming
  job on the bench's Spark session (``readStream.format("kafka")`` -> ``writeStream.format("kafka")``);
  and a single-threaded confluent-kafka consume/produce loop;
- file-to-topic: Connect's ``FileStreamSource`` vs sparkcat's ``file-source`` on the same file;
- for every run: time from the create request (Connect: ``POST /connectors``, sparkcat:
  ``put_connector_config``) to the first record in the target topic, records/s from the first to
  the last record, machine CPU µs per record over that stretch (the broker's share included for
  both), and the CPU seconds and RSS of the runtime's own processes.

Runs are interleaved (Connect, sparkcat, Connect, ...) so background load hits both alike.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import psutil

from bench.harness import Bench, client, log, wait_for
from bench.measure import driver_processes, stats

BYTES = "org.apache.kafka.connect.converters.ByteArrayConverter"
TASKS = "4"
COPIERS = ("connect", "sparkcat", "sparkcat_eos", "pyspark", "raw")
STRING = "org.apache.kafka.connect.storage.StringConverter"


def run(bench: Bench) -> None:
    from tests.connect_worker import ConnectWorker

    n_copy = 200_000 if bench.quick else 1_000_000
    n_file = 100_000 if bench.quick else 500_000
    repeats = 1 if bench.quick else 2
    src = bench.topic("ic-src")
    bench.create_topic(src, 4)
    client("fill", "--bootstrap", bench.broker.bootstrap, "--topic", src, "--records", str(n_copy), "--value-bytes", "100")
    path = bench.work / "state" / "ic-lines.txt"  # inside the driver's state.dir: an allowed file directory
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{i:010d} {'x' * 89}\n" for i in range(n_file)))
    worker = ConnectWorker(bench.broker.bootstrap, f"bench-{bench.run_id}", log_dir=bench.work / "connect").start()
    runs: dict[str, list[dict[str, Any]]] = {f"{side}_copy": [] for side in COPIERS}
    runs.update(connect_file=[], sparkcat_file=[])
    try:
        _cold_first_connector(bench, worker, src, n_copy)
        for i in range(repeats):
            runs["connect_copy"].append(_connect_copy(bench, worker, src, n_copy, i))
            runs["sparkcat_copy"].append(_sparkcat_copy(bench, worker, src, n_copy, i))
            runs["sparkcat_eos_copy"].append(_sparkcat_copy(bench, worker, src, n_copy, i, eos=True))
            runs["pyspark_copy"].append(_pyspark_copy(bench, worker, src, n_copy, i))
            runs["raw_copy"].append(_raw_copy(bench, src, n_copy, i))
            runs["connect_file"].append(_connect_file(bench, worker, str(path), n_file, i))
            runs["sparkcat_file"].append(_sparkcat_file(bench, worker, str(path), n_file, i))
    finally:
        worker.stop()
    _figures(bench, runs, n_copy, n_file)


def _processes(bench: Bench, worker: Any, which: str) -> list[psutil.Process]:
    """The runtime's own processes: Connect's JVM, or the sparkcat driver (Python, its JVM, Python workers)."""
    return [p for procs in _process_kinds(bench, worker, which).values() for p in procs]


def _process_kinds(bench: Bench, worker: Any, which: str) -> dict[str, list[psutil.Process]]:
    """``_processes`` by kind: Connect's JVM, or sparkcat's driver Python, its JVM and its Python workers."""
    if which == "connect":
        return {"connect": [psutil.Process(worker._proc.pid)]}
    groups = driver_processes(bench.broker_pids() | {worker._proc.pid})
    return {kind: procs for kind, procs in groups.items() if kind != "other"}


def _proc_cpu(procs: list[psutil.Process]) -> tuple[float, float]:
    """(CPU seconds, RSS MB) of ``procs`` now."""
    cpu = rss = 0.0
    for p in procs:
        try:
            t = p.cpu_times()
            cpu += t.user + t.system
            rss += p.memory_info().rss / 2**20
        except psutil.NoSuchProcess:
            pass
    return cpu, rss


def _end_offsets(bench: Bench, topic: str) -> int:
    """Records in ``topic`` now (sum of its partitions' high watermarks; 0 while it does not exist)."""
    from confluent_kafka import Consumer, KafkaException, TopicPartition
    if not hasattr(bench, "_ic_consumer"):
        bench._ic_consumer = Consumer({"bootstrap.servers": bench.broker.bootstrap, "group.id": "bench-ic"})
    c = bench._ic_consumer
    meta = c.list_topics(timeout=10).topics.get(topic)
    if meta is None or meta.error is not None:
        return 0
    try:
        return sum(c.get_watermark_offsets(TopicPartition(topic, p), timeout=10, cached=False)[1]
                   for p in meta.partitions)
    except KafkaException:  # a topic created a moment ago, its partitions without a leader yet
        return 0


def _timed(bench: Bench, worker: Any, which: str, start: Callable[[], None], target: str, n: int,
           copied: Callable[[], int] | None = None, written: Callable[[], int] | None = None) -> dict[str, Any]:
    """Run ``start`` and measure until ``target`` holds ``n`` records (see the module doc).

    ``copied`` counts what is done when the end offsets cannot (an exactly-once target holds transaction
    markers and aborted records); the first record is the first one written, also when a transaction
    makes it visible only at its batch's commit."""
    written = written or (lambda: _end_offsets(bench, target))
    copied = copied or written
    procs = _processes(bench, worker, which)
    cpu0, _ = _proc_cpu(procs)
    t0 = time.time()
    start()
    wait_for(lambda: written() > 0, 300, 0.02, f"first record in {target}")
    t_first = time.time()
    wait_for(lambda: copied() >= n, 900, 0.05, f"{n} records in {target}")
    t_done = time.time()
    cpu1, rss = _proc_cpu(procs)
    busy = bench.cpu.busy_s(t_first, t_done)
    out = {"first_record_s": t_first - t0, "all_copied_s": t_done - t0,
           "records_per_s": n / max(1e-6, t_done - t_first),
           "machine_cpu_us_per_record": None if busy is None else busy / n * 1e6,
           "process_cpu_us_per_record": (cpu1 - cpu0) / n * 1e6, "rss_mb": rss}
    log.info("%s -> %s: first record after %.2fs, %.0f records/s, %s us CPU/record (machine), %.1f (process), "
             "%.0f MB", which, target, out["first_record_s"], out["records_per_s"],
             "?" if busy is None else f"{out['machine_cpu_us_per_record']:.1f}", out["process_cpu_us_per_record"], rss)
    return out


def _connect_copy(bench: Bench, worker: Any, src: str, n: int, i: int) -> dict[str, Any]:
    name, alias = f"mm-{bench.run_id}-{i}", f"m{i}"
    config = {"connector.class": "org.apache.kafka.connect.mirror.MirrorSourceConnector", "tasks.max": TASKS,
              "source.cluster.alias": alias, "target.cluster.alias": "dst", "topics": src,
              "source.cluster.bootstrap.servers": bench.broker.bootstrap,
              "target.cluster.bootstrap.servers": bench.broker.bootstrap,
              "key.converter": BYTES, "value.converter": BYTES, "header.converter": BYTES,
              "replication.factor": "1", "offset-syncs.topic.replication.factor": "1",
              "sync.topic.configs.enabled": "false", "sync.topic.acls.enabled": "false",
              "refresh.topics.interval.seconds": "1"}
    result = _timed(bench, worker, "connect", lambda: worker.request("POST", "/connectors",
                                                                      {"name": name, "config": config}),
                    f"{alias}.{src}", n)
    worker.request("DELETE", f"/connectors/{name}")
    return result


def _sparkcat_copy(bench: Bench, worker: Any, src: str, n: int, i: int, eos: bool = False) -> dict[str, Any]:
    """The ``kafka`` connector with its defaults; exactly-once counts what its committed batches copied."""
    tag = f"{'e' if eos else 's'}{i}"  # i may be "cold"
    name, target = f"kc-{bench.run_id}-{tag}", f"{src}.{tag}"
    config = {"connector.class": "kafka", "topics": src, "target.topic.format": f"${{topic}}.{tag}",
              "tasks.max": TASKS, **({"exactly.once.support": "required"} if eos else {})}
    copied = (lambda: bench.committed_records(name)) if eos else None
    result = _timed(bench, worker, "sparkcat", lambda: bench.herder.put_connector_config(name, config), target, n,
                    copied)
    bench.delete(name)
    return result


def _cold_first_connector(bench: Bench, worker: Any, src: str, n: int) -> None:
    """The first connector of a fresh driver pays for the JVM's first Kafka source and sink (class loading,
    JIT); reported on its own, so the repeats compare warm runtimes (Connect's worker is warm too)."""
    cold = _sparkcat_copy(bench, worker, src, n, "cold")
    for key in ("first_record_s", "all_copied_s"):
        bench.figures[f"vs_connect_copy_sparkcat_cold_{key}"] = stats(
            [cold[key]], "s", "sparkcat: the first connector of a fresh driver (the copy, at-least-once)")


def _pyspark_copy(bench: Bench, worker: Any, src: str, n: int, i: int) -> dict[str, Any]:
    """The copy a user would write by hand, on the same SparkContext (``bench.user_spark``); the clock starts at
    ``start()``."""
    target, query = f"{src}.ps{i}", []
    bench.create_topic(target, 4)  # as its user would: Spark's Kafka sink does not create topics

    def start() -> None:
        frame = (bench.user_spark.readStream.format("kafka").option("kafka.bootstrap.servers", bench.broker.bootstrap)
                 .option("subscribe", src).option("startingOffsets", "earliest").option("includeHeaders", "true")
                 .load().selectExpr("key", "value", "headers", "partition"))
        query.append(frame.writeStream.format("kafka").option("kafka.bootstrap.servers", bench.broker.bootstrap)
                     .option("topic", target).option("checkpointLocation", str(bench.work / f"ps-{i}"))
                     .queryName(f"pyspark-copy-{i}").start())

    def written() -> int:
        if query and query[0].exception() is not None:
            raise RuntimeError(f"the hand-written PySpark copy failed: {query[0].exception()}")
        return _end_offsets(bench, target)

    try:
        return _timed(bench, worker, "sparkcat", start, target, n, written=written)
    finally:
        for q in query:
            q.stop()


def _raw_copy(bench: Bench, src: str, n: int, i: int) -> dict[str, Any]:
    """The single-threaded confluent-kafka loop (``bench/clients.py raw-copy``), timed by itself."""
    target = f"{src}.raw{i}"
    bench.create_topic(target, 4)
    t0 = time.time()
    raw = client("raw-copy", "--bootstrap", bench.broker.bootstrap, "--topic", src, "--target", target,
                 "--records", str(n))
    assert raw["records"] == n and raw["undelivered"] == 0, raw
    return {"records_per_s": raw["records_per_s"], "all_copied_s": time.time() - t0}


def _connect_file(bench: Bench, worker: Any, path: str, n: int, i: int) -> dict[str, Any]:
    name, topic = f"fs-c-{bench.run_id}-{i}", bench.topic(f"ic-file-c{i}")
    bench.create_topic(topic, 1)
    config = {"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "file": path,
              "topic": topic, "key.converter": STRING, "value.converter": STRING}
    result = _timed(bench, worker, "connect", lambda: worker.request("POST", "/connectors",
                                                                      {"name": name, "config": config}), topic, n)
    worker.request("DELETE", f"/connectors/{name}")
    return result


def _sparkcat_file(bench: Bench, worker: Any, path: str, n: int, i: int) -> dict[str, Any]:
    name, topic = f"fs-s-{bench.run_id}-{i}", bench.topic(f"ic-file-s{i}")
    bench.create_topic(topic, 1)
    config = {"connector.class": "file-source", "file": path, "topic": topic, "value.converter": STRING}
    result = _timed(bench, worker, "sparkcat", lambda: bench.herder.put_connector_config(name, config), topic, n)
    bench.delete(name)
    return result


def _figures(bench: Bench, runs: dict[str, list[dict[str, Any]]], n_copy: int, n_file: int) -> None:
    keys = (("records_per_s", "records/s"), ("all_copied_s", "s"), ("first_record_s", "s"),
            ("machine_cpu_us_per_record", "us"), ("process_cpu_us_per_record", "us"), ("rss_mb", "MB"))
    what = {"copy": f"topic-to-topic copy of {n_copy:,} records of 100 B, 4 partitions, tasks.max {TASKS}",
            "file": f"file-to-topic, {n_file:,} lines of 100 B, 1 task"}
    sides = {"copy": COPIERS, "file": ("connect", "sparkcat")}
    for kind in ("copy", "file"):
        for key, unit in keys:
            for side in sides[kind]:
                values = [r[key] for r in runs[f"{side}_{kind}"] if r.get(key) is not None]
                if values:
                    bench.figures[f"vs_connect_{kind}_{side}_{key}"] = stats(values, unit, f"{side}: {what[kind]}")
            for side in sides[kind][1:]:
                pairs = [(s[key], c[key]) for s, c in zip(runs[f"{side}_{kind}"], runs[f"connect_{kind}"])
                         if s.get(key) and c.get(key)]
                if pairs and key in ("records_per_s", "all_copied_s", "first_record_s"):
                    bench.figures[f"vs_connect_{kind}_ratio_{side}_{key}"] = stats(
                        [s / c for s, c in pairs], "x", f"{side} / Connect, run by run: {what[kind]}")
