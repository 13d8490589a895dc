"""``source``: the ``increment`` connector with 4 tasks writing to Kafka as fast as it can, exactly once and not.

Each repeat runs the connector twice, one run right after the other so both see the same load:
with the worker's ``exactly.once.source.support`` enabled (sparkcat's default: one transaction per
task per micro-batch, carrying its offsets) and disabled (idempotent producer, at least once). The
switch is flipped on the running driver's worker config between runs; plans read it when a query
starts. The cost of exactly-once per batch is the slowest task's fresh transactional producer
(metadata + ``init_transactions``) plus its commit, timed on the executors.
"""

from __future__ import annotations

import time

from bench.harness import Bench, log, wait_for
from bench.measure import parse_ts, stats


def _run(bench: Bench, name: str, prefix: str, seconds: float) -> tuple[float, list[float], float | None]:
    """records/s over the steady batches, their durations, and the mean exactly-once ms per batch (None: none)."""
    for k in (1, 2, 3, 4):
        bench.create_topic(f"{prefix}{k}", 1)
    config = {"connector.class": "increment", "increments": "1,2,3,4", "tasks.max": "4",
              "topic.prefix": prefix, "records.per.poll": "1000000", "batch.max.records": "100000",
              "trigger.interval.ms": "0", "value.converter": "org.apache.kafka.connect.json.JsonConverter",
              "value.converter.schemas.enable": "false"}
    bench.herder.put_connector_config(name, config)
    wait_for(lambda: bench.committed_records(name) > 0, 300, 0.1, f"{name} first batch")
    first = bench.runtime(name).progress
    txn_before = (first.transaction_batches, first.transaction_ms)
    # Records are counted from the connector's committed batches: Spark's numInputRows counts the planned
    # source's rows, one per task and batch (each names what its task reads), not the records.
    records0, batches0, t0 = first.records, first.batches, time.time()
    time.sleep(seconds)
    progress = bench.runtime(name).progress
    records1, batches1, t1 = progress.records, progress.batches, time.time()
    rows = bench.progress(name)
    txn_batches, txn_ms = progress.transaction_batches - txn_before[0], progress.transaction_ms - txn_before[1]
    bench.delete(name)
    steady = [b for b in rows[1:] if parse_ts(b["timestamp"]) >= t0 - 1] or rows
    rate = (records1 - records0) / (t1 - t0)
    log.info("%s: %d batches committed in %.0f s", name, batches1 - batches0, t1 - t0)
    return rate, [b["durationMs"]["triggerExecution"] for b in steady], (txn_ms / txn_batches if txn_batches else None)


def run(bench: Bench) -> None:
    repeats = 1 if bench.quick else 2
    seconds = 8.0 if bench.quick else 20.0
    worker = bench.driver.reconciler.worker
    rates: dict[str, list[float]] = {"eos": [], "alo": []}
    batch_ms: dict[str, list[float]] = {"eos": [], "alo": []}
    ratios, cost_ms = [], []
    try:
        for i in range(repeats):
            for mode in ("eos", "alo"):
                worker.exactly_once_source_support = "enabled" if mode == "eos" else "disabled"
                rate, durations, txn = _run(bench, f"src-{bench.run_id}-{mode}{i}", bench.topic(f"inc{mode}{i}_"),
                                            seconds)
                rates[mode].append(rate)
                batch_ms[mode] += durations
                if txn is not None:
                    cost_ms.append(txn)
                log.info("source %s %d: %.0f records/s over %d batches", mode, i, rate, len(durations))
            ratios.append(rates["eos"][-1] / rates["alo"][-1])
    finally:
        worker.exactly_once_source_support = "enabled"
    note = "increment, 4 tasks, JSON values, to Kafka, steady state"
    bench.figures["source_records_per_s"] = stats(rates["eos"], "records/s", note + ", exactly once (default)")
    bench.figures["source_alo_records_per_s"] = stats(rates["alo"], "records/s", note + ", at least once")
    bench.figures["source_eos_ratio"] = stats(ratios, "x", "exactly once / at least once, per interleaved repeat")
    bench.figures["source_eos_cost_ms_per_batch"] = stats(
        cost_ms, "ms", "slowest task's fresh transactional producer (metadata + init_transactions) + commit, "
                       "mean per batch of each run")
    bench.figures["source_batch_ms"] = stats(batch_ms["eos"], "ms",
                                             "per micro-batch (4 x 100,000 records), exactly once")
    bench.figures["source_alo_batch_ms"] = stats(batch_ms["alo"], "ms", "per micro-batch, at least once")
