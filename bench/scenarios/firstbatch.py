"""``firstbatch``: a new source connector on a running driver, from the put to its first records written.

Issue 26's target is the first batch within 1.5 s of the POST. ``batchcost`` measures it with the
``increment`` source, whose records only begin when its task starts (it counts time since then), so
the query's first trigger finds nothing and the first records wait for the next trigger. Here a
source whose records are there before the put (``file-source`` over a written file) stands beside
it, and so does the same pipeline hand-written in PySpark (Spark's text file source into a
``foreachBatch`` that appends the lines to a file), started the way a user starts it.

Each kind runs ``REPEATS`` times on the bench's driver (Kafka stores), one connector at a time, after
one warm-up run of each that is not counted. Per run: put (or query start) -> the query is started
(sparkcat: the config-log round trip, task configs, fencing and planning) -> the first line in the
sink's file (what the user sees).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

from bench.harness import Bench, log, wait_for
from bench.measure import stats

REPEATS = 5
LINES = 100
STRING = "org.apache.kafka.connect.storage.StringConverter"


def _first_line(path: Path) -> bool:
    return path.exists() and path.stat().st_size > 0


def _sparkcat(bench: Bench, name: str, config: dict[str, str], out: Path) -> tuple[float, float]:
    """put -> query started, put -> first line in ``out``; the connector is deleted afterwards."""
    t0 = time.monotonic()
    bench.herder.put_connector_config(name, config)
    wait_for(lambda: bench.query(name) is not None, 120, 0.005, f"{name}: query started")
    started = time.monotonic() - t0
    wait_for(lambda: _first_line(out), 120, 0.005, f"{name}: first line in {out}")
    first = time.monotonic() - t0
    bench.delete(name)
    return started, first


def _hand_written(bench: Bench, name: str, source_dir: Path, out: Path) -> tuple[float, float]:
    """Spark's text source over ``source_dir`` into a foreachBatch appending to ``out``: start -> first line."""

    def append(frame: Any, batch_id: int) -> None:
        with open(out, "a") as fh:
            fh.writelines(f"{row.value}\n" for row in frame.collect())

    t0 = time.monotonic()
    query = (bench.user_spark.readStream.text(str(source_dir)).writeStream.foreachBatch(append)
             .option("checkpointLocation", str(out.parent / f"{name}-ckpt")).trigger(processingTime="1 second")
             .queryName(name).start())
    started = time.monotonic() - t0
    try:
        wait_for(lambda: _first_line(out), 120, 0.005, f"{name}: first line in {out}")
        return started, time.monotonic() - t0
    finally:
        query.stop()


def _kinds(bench: Bench, work: Path) -> dict[str, Callable[[str, Path], tuple[float, float]]]:
    source_dir = work / "input"
    source_dir.mkdir(parents=True, exist_ok=True)
    ready = source_dir / "lines.txt"
    ready.write_text("".join(f"line {i}\n" for i in range(LINES)))

    def sink(out: Path) -> dict[str, str]:
        return {"value.converter": STRING, "sink.connector.class": "file-sink", "sink.file": str(out)}

    return {
        "file_source": lambda name, out: _sparkcat(bench, name, {
            "connector.class": "file-source", "file": str(ready), "topic": bench.topic("fb-unused"), **sink(out)},
            out),
        "increment": lambda name, out: _sparkcat(bench, name, {
            "connector.class": "increment", "increments": "1", "tasks.max": "1", "throughput": "20", **sink(out)},
            out),
        "spark_text_file": lambda name, out: _hand_written(bench, name, source_dir, out),
    }


def run(bench: Bench) -> None:
    work = bench.work / "state" / "firstbatch"
    kinds = _kinds(bench, work)
    repeats = 2 if bench.quick else REPEATS
    times: dict[str, list[tuple[float, float]]] = {kind: [] for kind in kinds}
    for round_ in range(repeats + 1):  # round 0 warms each kind up and is not counted
        for kind, start in kinds.items():
            name = f"fb-{bench.run_id}-{kind}-{round_}"
            started, first = start(name, work / f"{name}.txt")
            log.info("firstbatch %s run %d: query started after %.2f s, first line after %.2f s%s", kind, round_,
                     started, first, " (warm-up, not counted)" if round_ == 0 else "")
            if round_:
                times[kind].append((started, first))
    for kind, runs in times.items():
        f = bench.figures
        f[f"firstbatch_{kind}_query_started_s"] = stats([s for s, _ in runs], "s",
                                                         "put (or start) -> the query is started")
        f[f"firstbatch_{kind}_first_line_s"] = stats([t for _, t in runs], "s",
                                                      "put (or start) -> the first record in the sink's file")
