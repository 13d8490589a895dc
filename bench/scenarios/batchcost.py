"""``batchcost``: the fixed cost of one tiny micro-batch, per connector kind, alone on the driver.

Each kind runs as the only connector (1 task, the default 1 s trigger) on a trickle of 20 records/s,
so every batch holds a few records and its cost is the fixed part. Over an observation window the
scenario counts the committed batches and takes, per batch:

- CPU seconds of each of the driver's processes (this Python process, which runs sparkcat's
  handlers and py4j callbacks; the JVM; Spark's Python workers), from psutil;
- wall time per phase from Spark's own progress (``durationMs``: latestOffset, queryPlanning,
  addBatch, walCommit, commitOffsets, ...); ``addBatch`` holds the sink's work (sparkcat's handler
  for record sinks and sources, Spark's sink for the native ones).

Kinds: a Python source into Kafka, a Python source into a file sink (``sink.*`` keys, no Kafka), a
Kafka-fed ``SinkTask.put`` sink (file sink), the Kafka -> Kafka copy (native Kafka writer) and the
Kafka -> Delta append (Delta's streaming sink). Beside them, on the same SparkContext and trickle, the
same pipelines hand-written in PySpark with no sparkcat in the way (``spark_*``): Kafka -> Spark's
``noop`` sink (Spark's own floor for a micro-batch of Kafka records), Kafka -> ``foreachBatch``
appending the rows to a file (what ``SinkTask.put`` does), Kafka -> Kafka (what the copy does).
They run in a session of their own (``bench.user_spark``) with Spark's defaults where sparkcat's differ
(its checkpoint file manager on a local file system: ``sparkcat.spark.driver.session_tuning``).
"""

from __future__ import annotations

import collections
import os
import re
import statistics
import time
from typing import Any, Callable

import psutil

from bench.harness import Bench, client, log, wait_for
from bench.measure import driver_processes, parse_ts, stats

RATE = 20
STRING = "org.apache.kafka.connect.storage.StringConverter"
BYTES = "org.apache.kafka.connect.converters.ByteArrayConverter"
PHASES = ("latestOffset", "getBatch", "queryPlanning", "addBatch", "walCommit", "commitOffsets", "triggerExecution")


def _kinds(bench: Bench, topic: str) -> dict[str, dict[str, str]]:
    out = bench.work / "state" / "batchcost"
    return {
        "source_to_kafka": {"connector.class": "increment", "increments": "1", "tasks.max": "1",
                            "topic.prefix": bench.topic("bc-src-"), "throughput": str(RATE),
                            "value.converter": STRING},
        "source_to_file_sink": {"connector.class": "increment", "increments": "1", "tasks.max": "1",
                                "throughput": str(RATE), "value.converter": STRING,
                                "sink.connector.class": "file-sink", "sink.file": str(out / "src-sink.txt")},
        "kafka_to_put": {"connector.class": "file-sink", "topics": topic, "tasks.max": "1",
                         "file": str(out / "put.txt"), "value.converter": BYTES},
        "kafka_copy": {"connector.class": "kafka", "topics": topic, "tasks.max": "1",
                       "target.topic.format": "${topic}.copy"},
        "kafka_to_delta": {"connector.class": "delta", "topics": topic, "tasks.max": "1", "value.converter": BYTES,
                           "table.path": str(out / "delta")},
    }


def _hand_written(bench: Bench, topic: str) -> dict[str, Callable[[str], Any]]:
    """The same pipelines as a user would write them in PySpark: each starts its query and returns it."""
    out = bench.work / "state" / "batchcost"

    def kafka(name: str):
        return (bench.user_spark.readStream.format("kafka").option("kafka.bootstrap.servers", bench.broker.bootstrap)
                .option("subscribe", topic).option("startingOffsets", "latest").load())

    def started(writer, name: str):
        return (writer.option("checkpointLocation", str(out / "ckpt" / name)).trigger(processingTime="1 second")
                .queryName(name).start())

    def append_rows(frame, batch_id: int) -> None:
        with open(out / "spark-foreach.txt", "a") as fh:
            fh.writelines(f"{row.value!r}\n" for row in frame.select("value").collect())

    return {
        "spark_kafka_to_noop": lambda name: started(kafka(name).writeStream.format("noop"), name),
        "spark_kafka_foreach_batch": lambda name: started(kafka(name).writeStream.foreachBatch(append_rows), name),
        "spark_kafka_to_kafka": lambda name: started(
            kafka(name).select("key", "value").writeStream.format("kafka")
            .option("kafka.bootstrap.servers", bench.broker.bootstrap).option("topic", topic + ".spark"), name),
    }


def run(bench: Bench) -> None:
    observe, warm_up = (15.0, 5.0) if bench.quick else (40.0, bench.args.batchcost_warm_up)
    topic = bench.topic("bc-in")
    bench.create_topic(topic, 1)
    exclude = bench.broker_pids()
    kinds: dict[str, Any] = {**_kinds(bench, topic), **_hand_written(bench, topic)}
    if bench.args.batchcost_kinds:
        kinds = {k: v for k, v in kinds.items() if k in bench.args.batchcost_kinds.split(",")}
    feeder = client("paced", "--bootstrap", bench.broker.bootstrap, "--topic", topic, "--rate", str(RATE),
                    "--seconds", str(int(len(kinds) * (observe + warm_up + 60))), background=True)
    exclude.add(feeder.pid)
    try:
        for kind, config in kinds.items():
            _measure(bench, kind, config, observe, warm_up, exclude | {feeder.pid})
    finally:
        feeder.kill()
        feeder.wait()


def _cpu(exclude: set[int]) -> dict[str, dict[int, float]]:
    """CPU seconds (user + system) so far of each driver process, by kind and pid."""
    out: dict[str, dict[int, float]] = {}
    for group, procs in driver_processes(exclude).items():
        for proc in procs:
            try:
                t = proc.cpu_times()
                # a Python worker is a child of the daemon: its exited children's times are counted too
                out.setdefault(group, {})[proc.pid] = t.user + t.system + t.children_user + t.children_system
            except psutil.Error:
                pass
    return out


def _jvm_threads(pid: int) -> dict[tuple[str, str], float]:
    """CPU seconds so far of each thread of the JVM, keyed by (thread id, name with digits folded)."""
    out: dict[tuple[str, str], float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            name = open(f"/proc/{pid}/task/{tid}/comm").read().strip()
            stat = open(f"/proc/{pid}/task/{tid}/stat").read()
        except OSError:
            continue  # the thread ended
        fields = stat[stat.rindex(")") + 2:].split()
        out[(tid, re.sub(r"\d+", "N", name))] = (int(fields[11]) + int(fields[12])) / tick
    return out


def _thread_groups(before: dict[tuple[str, str], float], after: dict[tuple[str, str], float]) -> dict[str, float]:
    """JVM CPU seconds in between by thread kind: JIT compilers, garbage collection, the query's stream
    thread (planning, offsets and commit logs), Spark's task threads, Spark's scheduler and listeners, other."""
    groups: dict[str, float] = collections.Counter()
    for (tid, name), t in after.items():
        used = t - before.get((tid, name), 0.0)
        if "Compiler" in name:
            kind = "jit"
        elif name.startswith(("GC ", "GN ", "G1 ", "VM Thread")):
            kind = "gc"
        elif name.startswith("stream execu"):
            kind = "stream_thread"
        elif name.startswith("Executor task"):
            kind = "tasks"
        elif name.startswith(("dag-scheduler", "spark-listener", "dispatcher", "task-result", "element-track")):
            kind = "scheduler_listeners"
        else:
            kind = "other"
        groups[kind] += used
    return dict(groups)


def _cpu_delta(before: dict[str, dict[int, float]], after: dict[str, dict[int, float]]) -> dict[str, float]:
    """CPU seconds each group used in between (processes that started in between count in full)."""
    return {group: sum(t - before.get(group, {}).get(pid, 0.0) for pid, t in pids.items())
            for group, pids in after.items()}


class _Connector:
    """A sparkcat connector of the kind: its committed batches and records, its query's progress."""

    def __init__(self, bench: Bench, name: str, config: dict[str, str]) -> None:
        self.bench, self.name = bench, name
        bench.herder.put_connector_config(name, config)

    def counts(self) -> tuple[int, int]:
        rt = self.bench.runtime(self.name)
        return (0, 0) if rt is None else (rt.batches.progress.batches, rt.batches.progress.records)

    def progress(self) -> list[dict]:
        return self.bench.progress(self.name)

    def stop(self) -> None:
        self.bench.delete(self.name)


class _Query:
    """A hand-written PySpark query: batches with data (as sparkcat counts them) and records, from its progress."""

    def __init__(self, start: Callable[[str], Any], name: str) -> None:
        self.query = start(name)

    def progress(self) -> list[dict]:
        return [{"timestamp": p.timestamp, "durationMs": dict(p.durationMs), "records": int(p.numInputRows)}
                for p in self.query.recentProgress]  # at most 200 (the bench's numRecentProgressUpdates)

    def counts(self) -> tuple[int, int]:
        with_data = [p for p in self.progress() if p["records"] > 0]
        return len(with_data), sum(p["records"] for p in with_data)

    def stop(self) -> None:
        self.query.stop()


def _measure(bench: Bench, kind: str, config: Any, observe: float, warm_up: float, exclude: set[int]) -> None:
    name = f"bc-{bench.run_id}-{kind}"
    t0 = time.monotonic()
    subject = _Query(config, name) if callable(config) else _Connector(bench, name, config)
    wait_for(lambda: subject.counts()[0] >= 1, 180, 0.02, f"{name}: a committed batch")
    first_s = time.monotonic() - t0
    wait_for(lambda: subject.counts()[0] >= 3, 180, 0.1, f"{name}: three committed batches")
    warm_s = time.monotonic() - t0
    time.sleep(warm_up)  # past the JIT's first compilations of this kind's plan
    jvm = driver_processes(exclude)["jvm"][0].pid
    batches0, records0 = subject.counts()
    cpu0, threads0, w0 = _cpu(exclude), _jvm_threads(jvm), time.time()
    time.sleep(observe)
    cpu1, threads1, w1 = _cpu(exclude), _jvm_threads(jvm), time.time()
    threads = _thread_groups(threads0, threads1)
    batches1, records1 = subject.counts()
    batches, records = batches1 - batches0, records1 - records0
    progress = [p for p in subject.progress() if w0 <= parse_ts(p["timestamp"]) <= w1]
    subject.stop()
    cpu = _cpu_delta(cpu0, cpu1)
    f = bench.figures
    per = max(1, batches)
    f[f"batchcost_{kind}_batches_per_s"] = stats([batches / (w1 - w0)], "batches/s",
                                                 f"committed batches per second, 1 s trigger, {RATE} records/s")
    f[f"batchcost_{kind}_first_batch_s"] = stats([first_s], "s", "put (or query start) -> first batch with "
                                                 "records committed, on a driver that ran the kinds before it")
    f[f"batchcost_{kind}_records_per_batch"] = stats([records / per], "records", "records per committed batch")
    for group in ("driver_python", "jvm", "python_workers"):
        f[f"batchcost_{kind}_cpu_ms_{group}"] = stats([1000 * cpu.get(group, 0.0) / per], "ms",
                                                      f"CPU of the {group.replace('_', ' ')} per committed batch")
    for group, used in threads.items():
        f[f"batchcost_{kind}_jvm_cpu_ms_{group}"] = stats([1000 * used / per], "ms",
                                                          f"JVM CPU per committed batch, {group} threads")
    f[f"batchcost_{kind}_cpu_ms_total"] = stats([1000 * sum(cpu.values()) / per], "ms",
                                                "CPU of all driver processes per committed batch")
    for phase in PHASES:
        values = [p["durationMs"].get(phase) for p in progress if p["durationMs"].get(phase) is not None]
        if values:
            f[f"batchcost_{kind}_{phase}_ms"] = stats(values, "ms", f"Spark's durationMs.{phase} per batch")
    bench.details.setdefault("batchcost", {})[kind] = {
        "warm_up_s": round(warm_s, 2), "batches": batches, "records": records,
        "cpu_s": {k: round(v, 3) for k, v in cpu.items()},
        "jvm_threads_cpu_s": {k: round(v, 3) for k, v in threads.items()},
        "phase_medians_ms": {ph: statistics.median([p["durationMs"][ph] for p in progress if ph in p["durationMs"]])
                             for ph in PHASES if any(ph in p["durationMs"] for p in progress)}}
    log.info("batchcost %s: %d batches in %.0fs, %.0f records each, CPU per batch %s ms, JVM threads %s ms", kind,
             batches, w1 - w0, records / per, {k: round(1000 * v / per) for k, v in cpu.items()},
             {k: round(1000 * v / per) for k, v in threads.items()})

