#!/usr/bin/env python3
"""sparkcat benchmarks: throughput, latency and scale, side by side with a raw confluent-kafka client.

    python3 bench/run.py                  # everything (about 20-25 min on 2 cores): bench/results.json, bench/RESULTS.md
    python3 bench/run.py --quick          # smoke run (a few minutes): bench/out/
    python3 bench/run.py --only copy      # one scenario (copy, source, apply, e2e, scale): bench/out/

On a fresh machine the first call creates ``.venv`` through ``scripts/venv.sh`` (Java 17 via apt
when missing and run as root) and re-runs itself inside it.

The bench starts its own Apache Kafka broker (``tests.broker.KafkaBroker``: KRaft, one node, a
temporary log directory, free loopback ports) and an in-process sparkcat ``Driver`` on a
``local[2]`` SparkSession with Spark's Kafka connector and Kafka stores. Client load (the raw baseline, paced producers, latency probes) runs in separate processes
(``bench/clients.py``) so that it never shares the driver's GIL. Scenarios:

- ``copy``: 1,000,000 records of 100 bytes in a 4-partition topic, copied (a) by a single-threaded
  consume/produce loop and (b) by the sparkcat ``kafka`` sink (Spark's Kafka source and writer, no
  Python per record); interleaved repeats; ratio (b)/(a).
- ``source``: the ``increment`` connector with 4 tasks writing to Kafka as fast as it can.
- ``apply``: put_connector_config -> first record in Kafka; pause request -> last record written.
- ``e2e``: 1,000 records/s for 30 s through a Kafka-to-Kafka pipeline; delay at the destination.
- ``scale``: 10, 50, 100 connectors on the one driver: half increment sources of 2 tasks, half
  file sinks fed by their topics through Spark's Kafka source.
- ``connect``: side by side with a real Kafka Connect worker on the same broker: MirrorSourceConnector
  vs the ``kafka`` connector (at-least-once and exactly-once) vs the same copy hand-written in PySpark
  vs a raw loop, FileStreamSource vs ``file-source``, from the create request to the first and last record.
- ``delta``: Kafka -> Delta append, the ``delta`` connector vs the hand-written Delta streaming job.
- ``batchcost``: the fixed cost (CPU per process, Spark's phases) of one tiny micro-batch per connector kind.
- ``firstbatch``: a new source connector on a running driver, put -> first records written, with its
  records ready before the put (``file-source``) and not (``increment``), beside the hand-written query.
- ``sinkmem``: where a Kafka-fed sink's memory goes (RSS, heap committed and live, threads, NMT), N sinks
  beside N sources.
- ``listener``: CPU per micro-batch of a query listener in the driver's session: none, PySpark's, sparkcat's
  JVM progress feed, alternating.
- ``sourcescale``: N file sources on sparkcat (sharing one query) and on a Kafka Connect 4.1.1 worker, each
  side alone: time to all RUNNING, append-to-Kafka latency p50/p95/p99, idle CPU and RSS per connector.
- ``pipelinescale``: N connectors, half file sources and half sinks of their topics (``--scale-sink``), on
  sparkcat and on a Kafka Connect 4.1.1 worker, each side alone: time to all RUNNING, a line's latency from
  its source file to its sink's file p50/p95/p99, idle CPU and RSS.

The scenarios are ``bench/scenarios/<name>.py``; ``bench/harness.py`` holds the broker, Spark and
driver they share, ``bench/measure.py`` what they measure with (psutil for CPU and memory, a timed
offsets store), ``bench/report.py`` the outputs.

Other engineers share the machine: every figure is repeated where affordable and reported as
min/median/max, together with the load average seen during the run.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import logging
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / "bench"
SCENARIOS = ("copy", "source", "apply", "e2e", "scale", "smt", "connect", "delta", "batchcost",
             "firstbatch", "sinkmem", "listener", "sourcescale", "pipelinescale")  # modules of bench/scenarios/


def _ensure_environment() -> None:
    """Re-run inside .venv (created by scripts/venv.sh) when the dependencies are not importable here."""
    try:
        import confluent_kafka  # noqa: F401
        import psutil  # noqa: F401
        import pyspark  # noqa: F401
        return
    except ImportError:
        if os.environ.get("SPARKCAT_BENCH_REEXEC"):
            raise
    cmd = (f"source {REPO}/scripts/venv.sh rest,test,bench && sparkcat_need_jars kafka && sparkcat_need_jars connect && "
           f"exec python {Path(__file__).resolve()} " + " ".join(f"'{a}'" for a in sys.argv[1:]))
    os.environ["SPARKCAT_BENCH_REEXEC"] = "1"
    os.execvp("bash", ["bash", "-c", cmd])


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="a short smoke run (fewer records, repeats, seconds)")
    p.add_argument("--only", action="append", choices=SCENARIOS, help="run only this scenario (repeatable)")
    p.add_argument("--out", help="output directory (default bench/ for a full run, bench/out/ otherwise)")
    p.add_argument("--copy-records", type=int, default=0)
    p.add_argument("--copy-repeats", type=int, default=0)
    p.add_argument("--copy-tasks", type=int, default=2)
    p.add_argument("--smt-records", type=int, default=0, help="records per smt run (default 1,000,000)")
    p.add_argument("--copy-batch", type=int, default=250_000,
                   help="batch.max.records (per task) of the copy connector")
    p.add_argument("--scale-levels", default="", help="comma-separated connector counts (default 10,50,100)")
    p.add_argument("--scale-sink", default="file-sink", choices=("file-sink", "append"),
                   help="the scale and pipelinescale scenarios' sinks: the built-in file sink (exactly once) or an "
                        "appending one (at least once, as Connect's; bench/plugins/append_sink.py)")
    p.add_argument("--scale-timeout", type=float, default=420.0, help="seconds per level before calling it broken")
    p.add_argument("--driver-memory", default="1g", help="spark.driver.memory (conf/spark-defaults.conf: 1g)")
    p.add_argument("--spark-conf", action="append", default=[], metavar="KEY=VALUE",
                   help="an extra Spark setting for the bench's session (repeatable), to compare a knob")
    p.add_argument("--sinkmem-n", type=int, default=25, help="sinks (and sources) of the sinkmem scenario")
    p.add_argument("--listener-rounds", type=int, default=3, help="rounds of the listener scenario's three modes")
    p.add_argument("--batchcost-kinds", default="", help="comma-separated kinds of the batchcost scenario (default all)")
    p.add_argument("--batchcost-warm-up", type=float, default=20.0,
                   help="seconds each batchcost kind runs before its observation window")
    p.add_argument("--exactly-once-source-support", default="enabled", choices=("enabled", "disabled"),
                   help="the bench driver's worker setting (sparkcat's default: enabled; Connect's: disabled)")
    p.add_argument("--fifo", action="store_true", help="Spark's FIFO scheduler instead of sparkcat's fair pools")
    p.add_argument("--budget-min", type=float, default=28.0,
                   help="skip scale levels that would not finish within this many minutes of the start")
    return p


def _quiet_logging() -> None:
    """The bench's own progress at INFO; sparkcat and py4j only when something is wrong."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for noisy in ("py4j", "sparkcat", "sparkcat.driver"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    logging.getLogger("py4j.clientserver").setLevel(logging.CRITICAL)
    # one line per shared batch: how long it wrote and how long its members' positions took to store
    logging.getLogger("sparkcat.spark.driver.shared_queries").setLevel(logging.INFO)


def main(argv: list[str] | None = None) -> int:
    _ensure_environment()
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))  # bench.*, tests.broker (the broker) and sparkcat
    from bench.harness import Bench, log
    from bench.measure import loadavg
    from bench.report import environment, write_outputs

    args = _parser().parse_args(argv)
    _quiet_logging()
    scenarios = args.only or list(SCENARIOS)
    full = not args.quick and not args.only
    out_dir = Path(args.out) if args.out else (BENCH if full else BENCH / "out")
    command = "python3 bench/run.py" + ("" if not argv and len(sys.argv) <= 1 else " " + " ".join(
        argv if argv is not None else sys.argv[1:]))
    started = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    before = loadavg()
    t0 = time.monotonic()
    bench = Bench(args)
    env = environment()
    try:
        bench.start()
        for name in scenarios:
            bench.run(name, importlib.import_module(f"bench.scenarios.{name}").run)
    finally:
        bench.stop()
    results = {"command": command, "started": started, "duration_s": round(time.monotonic() - t0, 1),
               "loadavg_before": before, "loadavg_after": loadavg(), "environment": env,
               "scenarios": scenarios, "figures": bench.figures,
               "details": {k: v for k, v in bench.details.items() if k != "failures"},
               "failures": bench.details.get("failures", {})}
    write_outputs(results, out_dir)
    log.info("wrote %s and %s", out_dir / "results.json", out_dir / "RESULTS.md")
    return 1 if results["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
