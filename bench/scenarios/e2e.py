"""``e2e``: 1,000 records/s (real-time mode also 10,000) for 30 s through a Kafka-to-Kafka pipeline; delay at the destination.

Variants: the default trigger (1 s), ``trigger.interval.ms=0``, and Spark's real-time mode
(``trigger.mode: realtime``, 2 partitions: real-time mode needs a core per partition, local[2])."""

from __future__ import annotations

import json
import time

from bench.harness import Bench, client, wait_for
from bench.measure import stats


def run(bench: Bench) -> None:
    seconds = 10.0 if bench.quick else 30.0
    variants = [("default", {}, 4, 1000)] + ([] if bench.quick else [
        ("trigger0", {"trigger.interval.ms": "0"}, 4, 1000),
        ("realtime", {"trigger.mode": "realtime"}, 2, 1000), ("realtime10k", {"trigger.mode": "realtime"}, 2, 10_000)])
    for label, extra, partitions, rate in variants:
        _e2e(bench, label, extra, partitions, seconds, rate)


def _e2e(bench: Bench, label: str, extra: dict[str, str], partitions: int, seconds: float, rate: int) -> None:
    src = bench.topic(f"e2e-{label}")
    target = f"{src}.copy"
    bench.create_topic(src, partitions)
    bench.create_topic(target, partitions)
    name = f"e2e-{bench.run_id}-{label}"
    config = {"connector.class": "kafka", "topics": src, "tasks.max": "2", **extra}
    bench.herder.put_connector_config(name, config)
    wait_for(lambda: len(bench.progress(name)) >= 2, 120, 0.1, f"{name} running")
    warm = client("paced", "--bootstrap", bench.broker.bootstrap, "--topic", src, "--rate", "1000",
                  "--seconds", "3")
    wait_for(lambda: bench.committed_records(name) >= warm["records"], 60, 0.05, "warm-up copied")
    probe = client("latency", "--bootstrap", bench.broker.bootstrap, "--topics", f"{src},{target}",
                   "--seconds", str(seconds + 30), background=True)
    ready = probe.stdout.readline()
    assert "ready" in ready, ready
    t_run = time.monotonic()
    # the probe starts at offset 0: skip the warm-up records by counting them out below
    paced = client("paced", "--bootstrap", bench.broker.bootstrap, "--topic", src, "--rate", str(rate),
                   "--seconds", str(seconds))
    total = warm["records"] + paced["records"]
    wait_for(lambda: bench.committed_records(name) >= total, 60, 0.05, "all copied")
    time.sleep(2.0)
    probe.terminate()  # the probe reports on SIGTERM
    out, _ = probe.communicate(timeout=60)
    lines = [line for line in out.strip().splitlines() if line.startswith("{")]
    result = json.loads(lines[-1]) if lines and "ready" not in lines[-1] else None
    if result is None:
        raise RuntimeError("latency probe gave no result")
    batches = [b for b in bench.progress(name) if b["records"] > 0]
    puts_ms, _ = bench.offset_put_stats(t_run, time.monotonic())
    bench.delete(name)
    dst = result[target]
    broker_only = result[src]
    key = "e2e" if label == "default" else f"e2e_{label}"
    note = f"{rate:,} records/s for {seconds:g}s, {partitions} partitions, " + (
        ", ".join(f"{k}={v}" for k, v in extra.items()) or "trigger.interval.ms=1000 (default)")
    bench.figures[f"{key}_p50_ms"] = stats([dst["p50_ms"]], "ms", note)
    bench.figures[f"{key}_p99_ms"] = stats([dst["p99_ms"]], "ms", note + "; target <= 2 x trigger and < 2000")
    bench.figures[f"{key}_max_ms"] = stats([dst["max_ms"]], "ms", note)
    bench.figures[f"{key}_broker_p99_ms"] = stats([broker_only["p99_ms"]], "ms",
                                                  "produce -> consume on the source topic: the broker's own share")
    bench.figures[f"{key}_batch_ms"] = stats([b["durationMs"]["triggerExecution"] for b in batches], "ms",
                                             "micro-batch duration during the run")
    bench.figures[f"{key}_offsets_put_ms"] = stats(puts_ms, "ms", "offsets-store write per committed batch "
                                                   "(part of addBatch)")
    for part in ("addBatch", "latestOffset", "walCommit", "commitOffsets"):
        bench.figures[f"{key}_batch_{part}_ms"] = stats([b["durationMs"].get(part, 0) for b in batches], "ms",
                                                        f"{part} share of each micro-batch")
    bench.details[f"{key}_records"] = {"target": dst["records"], "source": broker_only["records"],
                                       "produced": total}
