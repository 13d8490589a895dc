#!/usr/bin/env python3
"""How fast a Kafka-fed sink connector starts on a running driver, and what each one costs in memory.

    bash -c 'source scripts/venv.sh rest,test,bench && sparkcat_need_jars kafka && python bench/sink_startup.py'

Starts an Apache Kafka broker (``tests.broker.KafkaBroker``), a local[2] SparkSession with Spark's
Kafka connector, and a ``Driver`` with Kafka stores and the REST API. Then, ``--connectors`` times:
POST /connectors of a ``kafka`` copy connector (1 task, its own 1-partition source topic holding
1,000 records), and the time until its query's first micro-batch starts (the progress timestamp)
and until that batch is committed. Memory (RSS and PSS of the driver's Python process, its JVM
and the JVM's Python workers) is read before the first connector and after the last one ran a
batch; the difference over the connector count is the per-connector cost. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def driver_memory_mb(exclude: set[int]) -> dict[str, Any]:
    """RSS and PSS (MB) of this process and its descendants except ``exclude`` (the broker), in all and
    per kind: this Python process, the JVM, the JVM's Python workers (``bench.measure.driver_memory``)."""
    from bench.measure import driver_memory

    out = driver_memory(exclude)
    return {**out, "rss_mb": out["total_rss_mb"], "pss_mb": out["total_pss_mb"]}


def post(url: str, body: dict) -> int:
    req = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(req, timeout=60) as resp:
        return resp.status


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--connectors", type=int, default=5)
    args = p.parse_args()
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    from sparkcat.bootstrap import Driver
    from sparkcat.config.worker import WorkerConfig
    from tests.broker import KafkaBroker, free_port
    from tests.spark_fixture import make_spark

    work = Path(tempfile.mkdtemp(prefix="sparkcat-startup-"))
    with KafkaBroker(log_dir=work) as broker:
        spark = make_spark()
        port = free_port()
        worker = WorkerConfig(state_dir=str(work / "state"), bootstrap_servers=broker.bootstrap, rest_port=port)
        driver = Driver(spark, worker, rest=True, watch_pipelines=False)
        driver.start()
        admin, producer = AdminClient({"bootstrap.servers": broker.bootstrap}), Producer(
            {"bootstrap.servers": broker.bootstrap})
        names = [f"copy{i}" for i in range(args.connectors)]
        for f in admin.create_topics([NewTopic(f"src{i}", 1, 1) for i in range(args.connectors)]).values():
            f.result(timeout=30)
        for i in range(args.connectors):
            for j in range(1000):
                producer.produce(f"src{i}", value=b"x" * 100, key=str(j).encode())
        producer.flush(30)
        broker_pid = {proc.pid for proc in broker._procs}
        time.sleep(3)
        before = driver_memory_mb(broker_pid)
        to_start, to_commit = [], []
        for i, name in enumerate(names):
            t0 = time.time()
            post(f"http://127.0.0.1:{port}/connectors", {"name": name, "config": {
                "connector.class": "kafka", "topics": f"src{i}", "tasks.max": "1", "trigger.interval.ms": "1000"}})
            rt = None
            while rt is None or rt.query is None or rt.query.query is None or not rt.query.query.recentProgress \
                    or rt.batches.progress.records < 1000:
                if time.time() - t0 > 300:
                    raise SystemExit(f"{name}: no committed batch within 300 s")
                time.sleep(0.02)
                rt = driver.reconciler.lifecycles.get(name)
            first = next(pr for pr in rt.query.query.recentProgress if pr.numInputRows)
            started = dt.datetime.strptime(first.timestamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
                tzinfo=dt.timezone.utc).timestamp()
            to_start.append(started - t0)
            to_commit.append(started + first.durationMs["triggerExecution"] / 1000 - t0)
        time.sleep(3)
        after = driver_memory_mb(broker_pid)
        driver.stop()
        spark.stop()
    n = args.connectors
    print(json.dumps({
        "connectors": n,
        "post_to_first_batch_start_s": [round(x, 2) for x in to_start],
        "post_to_first_batch_start_median_s": round(statistics.median(to_start), 2),
        "post_to_first_batch_commit_median_s": round(statistics.median(to_commit), 2),
        "memory_before": before, "memory_after": after,
        "per_connector_rss_mb": round((after["rss_mb"] - before["rss_mb"]) / n, 1),
        "per_connector_pss_mb": round((after["pss_mb"] - before["pss_mb"]) / n, 1),
    }))


if __name__ == "__main__":
    main()
