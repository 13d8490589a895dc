"""``delta``: Kafka -> Delta append, sparkcat's ``delta`` connector next to the hand-written Delta streaming job.

The same N records of 100 bytes in a 4-partition topic are appended to a Delta table (a) by the
``delta`` connector (tasks.max 4, ByteArrayConverter: the value as bytes, Delta's own streaming sink
since the speed work) and (b) by the job a user would write on the same SparkContext (Spark's own session settings):
``readStream.format("kafka")`` -> ``writeStream.format("delta")``. Each is timed from the create
request (``put_connector_config``, ``start()``) to its first and to its last committed batch holding
all N records; repeats interleave the two."""

from __future__ import annotations

import time
from typing import Any

from bench.harness import Bench, client, log, wait_for
from bench.measure import stats

BYTES = "org.apache.kafka.connect.converters.ByteArrayConverter"


def run(bench: Bench) -> None:
    n = 200_000 if bench.quick else 1_000_000
    repeats = 1 if bench.quick else 2
    src = bench.topic("delta-src")
    bench.create_topic(src, 4)
    client("fill", "--bootstrap", bench.broker.bootstrap, "--topic", src, "--records", str(n), "--value-bytes", "100")
    runs: dict[str, list[dict[str, Any]]] = {"sparkcat": [], "pyspark": []}
    for i in range(repeats):
        runs["sparkcat"].append(_sparkcat(bench, src, n, i))
        runs["pyspark"].append(_pyspark(bench, src, n, i))
    what = f"Kafka -> Delta append of {n:,} records of 100 B, 4 partitions"
    for key, unit in (("records_per_s", "records/s"), ("first_batch_s", "s"), ("all_s", "s")):
        for side, results in runs.items():
            bench.figures[f"delta_{side}_{key}"] = stats([r[key] for r in results], unit, f"{side}: {what}")
    bench.figures["delta_ratio_records_per_s"] = stats(
        [s["records_per_s"] / p["records_per_s"] for s, p in zip(runs["sparkcat"], runs["pyspark"])], "x",
        "sparkcat / hand-written job, records/s from the create request, run by run (target >= 0.95)")


def _timed(start: Any, committed: Any, n: int, what: str) -> dict[str, Any]:
    t0 = time.time()
    start()
    wait_for(lambda: committed() > 0, 300, 0.02, f"{what}: first batch")
    t_first = time.time()
    wait_for(lambda: committed() >= n, 600, 0.05, f"{what}: {n} records")
    t_done = time.time()
    # records/s from the create request: the hand-written job may take all N in its first batch
    out = {"first_batch_s": t_first - t0, "all_s": t_done - t0, "records_per_s": n / (t_done - t0)}
    log.info("delta %s: first batch after %.2fs, all after %.2fs, %.0f records/s", what, out["first_batch_s"],
             out["all_s"], out["records_per_s"])
    return out


def _sparkcat(bench: Bench, src: str, n: int, i: int) -> dict[str, Any]:
    name = f"delta-{bench.run_id}-{i}"
    config = {"connector.class": "delta", "topics": src, "tasks.max": "4", "value.converter": BYTES,
              "table.path": str(bench.work / "state" / f"delta-sc-{i}")}
    try:
        return _timed(lambda: bench.herder.put_connector_config(name, config), lambda: bench.committed_records(name),
                      n, f"sparkcat {i}")
    finally:
        bench.delete(name)


def _pyspark(bench: Bench, src: str, n: int, i: int) -> dict[str, Any]:
    """The job by hand: Kafka's columns as they come, appended with Delta's streaming sink."""
    query = []

    def start() -> None:
        frame = (bench.user_spark.readStream.format("kafka").option("kafka.bootstrap.servers", bench.broker.bootstrap)
                 .option("subscribe", src).option("startingOffsets", "earliest").load()
                 .selectExpr("key", "value", "topic", "partition", "offset", "timestamp"))
        query.append(frame.writeStream.format("delta").option("checkpointLocation", str(bench.work / f"dps-{i}"))
                     .queryName(f"pyspark-delta-{i}").start(str(bench.work / f"delta-ps-{i}")))

    def committed() -> int:
        q = query[0]
        if q.exception() is not None:
            raise RuntimeError(f"the hand-written Delta job failed: {q.exception()}")
        return sum(int(p.numInputRows) for p in q.recentProgress)

    try:
        return _timed(start, committed, n, f"hand-written {i}")
    finally:
        for q in query:
            q.stop()
