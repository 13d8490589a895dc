"""``copy``: 1,000,000 records of 100 bytes in a 4-partition topic, copied (a) by a single-threaded
consume/produce loop and (b) by the sparkcat ``kafka`` sink; interleaved repeats; ratio (b)/(a).

Also the read ceiling (consumers that only read), machine CPU per record, the first connector's cold
start, and Spark's per-batch durations."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from bench.harness import Bench, client, log, wait_for
from bench.measure import parse_ts, stats


@dataclass
class _Repeats:
    """What the interleaved repeats measured: one entry per repeat (``batches``: every micro-batch)."""

    raw_rates: list[float] = field(default_factory=list)
    raw_cpu: list[tuple] = field(default_factory=list)
    rates: list[float] = field(default_factory=list)
    cpu: list[tuple] = field(default_factory=list)
    startups: list[float] = field(default_factory=list)
    firsts: list[float] = field(default_factory=list)
    walls: list[float] = field(default_factory=list)
    query_rates: list[float] = field(default_factory=list)
    first_rates: list[float] = field(default_factory=list)
    ratios: list[float] = field(default_factory=list)
    batches: list[dict] = field(default_factory=list)
    eos_rates: list[float] = field(default_factory=list)
    eos_ratios: list[float] = field(default_factory=list)
    eos_vs_alo: list[float] = field(default_factory=list)
    eos_batches: list[dict] = field(default_factory=list)


def run(bench: Bench) -> None:
    a = bench.args
    n = a.copy_records or (300_000 if bench.quick else 1_000_000)
    repeats = a.copy_repeats or (1 if bench.quick else 3)
    src = bench.topic("copy-src")
    bench.create_topic(src, 4)
    fill = client("fill", "--bootstrap", bench.broker.bootstrap, "--topic", src, "--records", str(n),
                  "--value-bytes", "100")
    bench.figures["fill_records_per_s"] = stats([fill["records_per_s"]], "records/s",
                                                "filling the source topic: one producer, copy producer settings")
    _cold_start(bench)
    ceilings = _read_ceiling(bench, src)
    measured = _Repeats()
    for i in range(repeats):
        _repeat(bench, src, n, i, measured)
    if not bench.quick and bench.args.copy_tasks != 4:
        four = _sparkcat_copy(bench, src, n, "t4", tasks=4)
        bench.figures["copy_tasks4_records_per_s"] = stats([four["records_per_s"]], "records/s",
                                                           "the same with tasks.max=4 (one partition per task; "
                                                           "local[2] runs two at a time)")
    _record(bench, measured, ceilings)
    bench.details["copy"] = {"records": n, "repeats": repeats, "tasks_max": a.copy_tasks,
                             "batch_max_records": a.copy_batch, "trigger_interval_ms": 0,
                             "read_ceiling": ceilings}


def _cold_start(bench: Bench) -> None:
    """Warm-up: a first copy on a small topic starts the executors' Python workers (imports, Kafka
    clients) and warms the JVM's JIT; its first batch is reported as the cold start."""
    warm_src = bench.topic("copy-warm")
    bench.create_topic(warm_src, 4)
    warm_n = 40_000
    client("fill", "--bootstrap", bench.broker.bootstrap, "--topic", warm_src, "--records", str(warm_n))
    cold = _sparkcat_copy(bench, warm_src, warm_n, "warm", verify=False)
    bench.figures["copy_cold_startup_s"] = stats([cold["startup_s"]], "s",
                                                 "first connector of the driver: put -> first micro-batch starts")
    bench.figures["copy_cold_first_batch_commit_s"] = stats(
        [cold["first_batch_s"]], "s", f"first connector: put -> its first batch ({warm_n:,} records) committed, "
        "cold Python workers and JIT")


def _repeat(bench: Bench, src: str, n: int, i: int, measured: _Repeats) -> None:
    """One interleaved repeat: the raw loop, then sparkcat, each copying the ``n`` records of ``src``."""
    raw_target = bench.topic(f"copy-raw-{i}")
    bench.create_topic(raw_target, 4)
    raw = client("raw-copy", "--bootstrap", bench.broker.bootstrap, "--topic", src, "--target", raw_target,
                 "--records", str(n))
    raw_end = time.time()
    assert raw["records"] == n and raw["undelivered"] == 0, raw
    measured.raw_rates.append(raw["records_per_s"])
    measured.raw_cpu.append((bench.cpu.busy_s(raw_end - raw["seconds"], raw_end), raw["seconds"], n))
    log.info("copy %d: raw loop %.0f records/s", i, raw["records_per_s"])
    sc = _sparkcat_copy(bench, src, n, i)
    measured.rates.append(sc["records_per_s"])
    measured.cpu.append(sc["steady_cpu_s"])
    measured.startups.append(sc["startup_s"])
    measured.firsts.append(sc["first_batch_s"])
    measured.walls.append(n / sc["wall_s"])
    measured.query_rates.append(sc["query_records_per_s"])
    measured.first_rates.append(sc["first_batch_records_per_s"])
    measured.batches.extend(sc["batches"])
    measured.ratios.append(sc["records_per_s"] / raw["records_per_s"])
    log.info("copy %d: sparkcat %.0f records/s (ratio %.2f, start-up %.1fs)", i, sc["records_per_s"],
             measured.ratios[-1], sc["startup_s"])
    eos = _sparkcat_copy(bench, src, n, f"{i}eos", extra={"exactly.once.support": "required"})
    measured.eos_rates.append(eos["records_per_s"])
    measured.eos_ratios.append(eos["records_per_s"] / raw["records_per_s"])
    measured.eos_vs_alo.append(eos["records_per_s"] / sc["records_per_s"])
    measured.eos_batches.extend(eos["batches"])
    log.info("copy %d: sparkcat exactly-once %.0f records/s (ratio %.2f to raw, %.2f to at-least-once)", i,
             eos["records_per_s"], measured.eos_ratios[-1], measured.eos_vs_alo[-1])


def _record(bench: Bench, m: _Repeats, ceilings: list[float]) -> None:
    """The figures of the repeats, in the order RESULTS.md lists them."""
    f = bench.figures
    f["raw_records_per_s"] = stats(m.raw_rates, "records/s", "single-threaded confluent-kafka consume/produce loop")
    f["copy_records_per_s"] = stats(m.rates, "records/s", "sparkcat kafka sink, steady state: micro-batches after "
                                    "the query's first (end of first batch to end of last)")
    f["copy_query_records_per_s"] = stats(m.query_rates, "records/s", "sparkcat, all micro-batches: first batch "
                                          "start to last batch end (query start-up excluded)")
    f["copy_first_batch_records_per_s"] = stats(m.first_rates, "records/s",
                                                "sparkcat, the query's first micro-batch alone")
    f["copy_ratio"] = stats(m.ratios, "x", "sparkcat / raw loop, per interleaved repeat (target >= 1.5)")
    _cpu_figures(bench, "raw", m.raw_cpu, "raw loop")
    _cpu_figures(bench, "copy", m.cpu, "sparkcat steady state")
    f["copy_with_startup_records_per_s"] = stats(m.walls, "records/s",
                                                 "sparkcat, put_connector_config -> all committed")
    f["read_ceiling_records_per_s"] = stats(ceilings, "records/s", "consume only, no produce: the source topic read "
                                            "by 1 consumer (4 partitions) and by 2 in parallel (2 each)")
    bench.details["copy_batches"] = [{"records": b["records"], **b["durationMs"]} for b in m.batches]
    f["copy_startup_s"] = stats(m.startups, "s", "put_connector_config -> first micro-batch starts")
    f["copy_first_batch_commit_s"] = stats(m.firsts, "s", "put_connector_config -> first batch committed")
    for key in ("triggerExecution", "addBatch", "latestOffset", "queryPlanning", "walCommit", "commitOffsets"):
        vals = [b["durationMs"].get(key) for b in m.batches if b["durationMs"].get(key) is not None]
        if vals:
            f[f"copy_batch_{key}_ms"] = stats(vals, "ms", "per micro-batch, all repeats")
    f["copy_batch_records"] = stats([b["records"] for b in m.batches], "records", "records per micro-batch")
    _eos_figures(bench, m)


def _eos_figures(bench: Bench, m: _Repeats) -> None:
    """The exactly-once copy (exactly.once.support=required) next to the raw loop and the at-least-once copy."""
    f = bench.figures
    if not m.eos_rates:
        return
    f["copy_eos_records_per_s"] = stats(m.eos_rates, "records/s", "sparkcat kafka sink, exactly.once.support="
                                        "required (a transaction per task and micro-batch), steady state")
    f["copy_eos_ratio"] = stats(m.eos_ratios, "x", "exactly-once copy / raw loop, per repeat (target >= 1)")
    f["copy_eos_vs_alo"] = stats(m.eos_vs_alo, "x", "exactly-once copy / at-least-once copy, per repeat")
    eos = [b["durationMs"]["addBatch"] for b in m.eos_batches[1:] if b["durationMs"].get("addBatch") is not None]
    alo = [b["durationMs"]["addBatch"] for b in m.batches[1:] if b["durationMs"].get("addBatch") is not None]
    if eos and alo:
        f["copy_eos_batch_addBatch_ms"] = stats(eos, "ms", "exactly-once copy, per micro-batch")
        f["copy_eos_path_cost_per_batch_ms"] = stats([sum(eos) / len(eos) - sum(alo) / len(alo)], "ms",
                                                     "mean addBatch of the exactly-once copy minus the at-least-once "
                                                     "copy's, same batch size (the JVM writer's transactions)")


def _cpu_figures(bench: Bench, prefix: str, stretches: list[tuple[float | None, float, int]], what: str) -> None:
    """Busy cores and CPU per record over measured stretches of (busy CPU s, seconds, records)."""
    stretches = [x for x in stretches if x[0] is not None and x[1] > 0 and x[2] > 0]
    if stretches:
        bench.figures[f"{prefix}_busy_cores"] = stats([b / t for b, t, _ in stretches], "cores",
                                                      f"{what}: CPU in use on the whole machine (2 cores)")
        bench.figures[f"{prefix}_cpu_us_per_record"] = stats([b / n * 1e6 for b, _, n in stretches], "us",
                                                             f"{what}: machine CPU time per record copied")


def _read_ceiling(bench: Bench, src: str) -> list[float]:
    """How fast the broker serves the source topic to consumers that do nothing else."""
    out = []
    for groups in (["0,1,2,3"], ["0,1", "2,3"]):
        start_at = f"{time.time() + 2.0:.3f}"
        procs = [client("read", "--bootstrap", bench.broker.bootstrap, "--topic", src, "--partitions", g,
                        "--start-at", start_at, background=True) for g in groups]
        results = [json.loads(p.communicate(timeout=300)[0].strip().splitlines()[-1]) for p in procs]
        out.append(sum(r["records"] for r in results) / max(r["seconds"] for r in results))
        log.info("copy: read ceiling with %d consumer(s): %.0f records/s", len(groups), out[-1])
    return out


def _sparkcat_copy(bench: Bench, src: str, n: int, i: Any, verify: bool = True, tasks: int = 0,
                   connector_class: str = "kafka", extra: dict[str, str] | None = None) -> dict[str, Any]:
    name = f"copy-{bench.run_id}-{i}"
    target = f"{src}.sc{i}"
    tasks = tasks or bench.args.copy_tasks
    batch = bench.args.copy_batch * bench.args.copy_tasks // tasks  # the same records per micro-batch
    config = {"connector.class": connector_class, "topics": src, "target.topic.format": f"${{topic}}.sc{i}",
              "tasks.max": str(tasks), "batch.max.records": str(batch),
              "trigger.interval.ms": "0", **(extra or {})}
    t0 = time.time()
    bench.herder.put_connector_config(name, config)
    wait_for(lambda: bench.committed_records(name) >= n, 600, 0.05, f"{name} to copy {n} records")
    t_done = time.time()
    rows = wait_for(lambda: (lambda p: p if sum(b["records"] for b in p) >= n else None)(
        [b for b in bench.progress(name) if b["records"] > 0]), 60, 0.1, "progress of every batch")
    def end_of(b: dict) -> float:
        return parse_ts(b["timestamp"]) + b["durationMs"]["triggerExecution"] / 1000

    first_start, first_end, last_end = parse_ts(rows[0]["timestamp"]), end_of(rows[0]), end_of(rows[-1])
    # Steady state: the batches after the query's first, which pays for one-time costs (code generation
    # and JIT of the new query's classes, target topic creation, Kafka clients of new Python workers).
    steady = rows[1:] if len(rows) > 1 else rows
    steady_start = first_end if len(rows) > 1 else first_start
    steady_records = sum(b["records"] for b in steady)
    steady_cpu = (bench.cpu.busy_s(steady_start, last_end), last_end - steady_start, steady_records)
    bench.delete(name)
    counts = client("count", "--bootstrap", bench.broker.bootstrap, "--topic", target) if verify else {"records": n}
    if counts["records"] != n:
        raise AssertionError(f"sparkcat copy {i}: {counts['records']} records in {target}, expected {n}")
    return {"records_per_s": steady_records / (last_end - steady_start), "startup_s": first_start - t0,
            "steady_cpu_s": steady_cpu,
            "first_batch_s": first_end - t0, "wall_s": t_done - t0,
            "first_batch_records_per_s": rows[0]["records"] / (first_end - first_start),
            "query_records_per_s": n / (last_end - first_start),
            "batches": [{"records": b["records"], "durationMs": b["durationMs"]} for b in rows]}
