"""A process of ``bench/coldstart.py``, on a fresh JVM: ``python -m bench.coldstart_driver SPEC_JSON``, its options
in the environment's ``COLDSTART`` (JSON).

``mode: driver`` (``tests.ha_driver`` with more to see): a Driver with Kafka stores, its REST API and INFO logs
on a fresh Spark session (``master``), with the warm-up steps ``warm_up`` (null: the driver's defaults), and
runs until killed; SPEC.started appears once ``Driver.start`` returned. ``mode: pyspark``: the hand-written
Kafka -> Delta append job (``readStream.format("kafka")`` -> ``writeStream.format("delta")``) of ``records``
records of ``topic`` into ``table``, then exits. Both log the Spark session's start ("Spark session started in")
and append every streaming query's progress (name, batch id, start, input rows, ``durationMs``) to
SPEC.progress.jsonl (with a shared query's records per connector, its source metrics ``records.NAME``), for
the bench's phases.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

log = logging.getLogger("bench.coldstart")


class ProgressDump:
    """A thread writing each new progress of every active query as a JSON line (polled every 0.2 s)."""

    def __init__(self, spark: Any, path: Path) -> None:
        self.spark, self.path = spark, path
        self.seen: set[tuple[str, int]] = set()
        threading.Thread(target=self._run, name="bench-progress", daemon=True).start()

    def _run(self) -> None:
        while True:
            self.dump()
            time.sleep(0.2)

    def dump(self) -> None:
        lines = []
        for query in self.spark.streams.active:
            try:
                for p in query.recentProgress:
                    if (p.id, p.batchId) not in self.seen:
                        self.seen.add((p.id, p.batchId))
                        lines.append(json.dumps({"name": p.name, "batch": p.batchId, "timestamp": p.timestamp,
                                                 "rows": p.numInputRows, "durationMs": dict(p.durationMs),
                                                 "metrics": records_metrics(p)}))
            except Exception:  # noqa: BLE001 - a query that ended meanwhile
                continue
        if lines:
            with self.path.open("a") as f:
                f.write("\n".join(lines) + "\n")


def records_metrics(progress: Any) -> dict[str, str]:
    """A shared query's per-connector records (its source metrics ``records.NAME``; its input rows count the
    batch's Spark partitions), empty for other queries."""
    return {k: v for s in progress.sources for k, v in (s.metrics or {}).items() if k.startswith("records.")}


def session(master: str) -> Any:
    from tests.spark_fixture import make_spark

    began = time.monotonic()
    spark = make_spark(master)
    log.info("Spark session started in %.2f s", time.monotonic() - began)
    return spark


def hand_written(spark: Any, spec: dict[str, Any], progress: ProgressDump) -> None:
    """The Delta append a user would write; logs its query's start and the end of its last batch."""
    spark = spark.newSession()  # Spark's own defaults for the settings sparkcat's session tuning changes
    progress.spark = spark  # a session sees only its own queries
    began = time.monotonic()
    query = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", spec["bootstrap"])
             .option("subscribe", spec["topic"]).option("startingOffsets", "earliest").load()
             .selectExpr("key", "value", "topic", "partition", "offset", "timestamp")
             .writeStream.format("delta").option("checkpointLocation", spec["checkpoint"])
             .queryName("pyspark-delta").start(spec["table"]))
    log.info("Hand-written query started in %.2f s", time.monotonic() - began)
    while sum(int(p.numInputRows) for p in query.recentProgress) < spec["records"]:
        if query.exception() is not None:
            raise RuntimeError(f"the hand-written Delta job failed: {query.exception()}")
        time.sleep(0.05)
    log.info("Hand-written query wrote %d records", spec["records"])
    progress.dump()
    query.stop()


def main(spec_path: str) -> None:
    from sparkcat.bootstrap import Driver, configure_logging
    from sparkcat.config.worker import WorkerConfig

    configure_logging()
    spec = json.loads(Path(spec_path).read_text())
    options = json.loads(os.environ["COLDSTART"])
    spark = session(options.get("master", "local[2]"))
    progress = ProgressDump(spark, Path(spec_path).with_suffix(".progress.jsonl"))
    if options.get("mode") == "pyspark":
        hand_written(spark, options, progress)
        return
    Driver(spark, WorkerConfig(**spec["worker"]), rest=True, watch_pipelines=False,
           warm_up=options.get("warm_up")).start()
    Path(spec_path).with_suffix(".started").touch()
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main(sys.argv[1])
