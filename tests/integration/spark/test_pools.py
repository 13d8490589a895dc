"""The connectors' fair-scheduler pool: one connector's slow batch does not hold every slot (sparkcat/spark/pools.py)."""

from __future__ import annotations

import threading
import time

import pytest

from sparkcat.spark.pools import CONNECTORS_POOL, POOL_PROPERTY, in_pool

pytestmark = pytest.mark.integration


def _pool_of_tasks(df) -> set:
    from pyspark import TaskContext
    return set(df.rdd.map(lambda _: TaskContext.get().getLocalProperty("spark.scheduler.pool")).collect())


def _wait_for_running_tasks(sc, n: int, timeout_s: float = 60) -> None:
    tracker, deadline = sc.statusTracker(), time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        stages = [tracker.getStageInfo(s) for s in tracker.getActiveStageIds()]
        if sum(s.numActiveTasks for s in stages if s is not None) >= n:
            return
        time.sleep(0.05)
    raise AssertionError(f"fewer than {n} tasks running after {timeout_s}s")


def test_a_short_batch_overtakes_the_queued_tasks_of_another_connectors_slow_batch(spark):
    """Both slots busy with one connector's batch and more of its tasks queued: another connector's one-task batch
    gets the next free slot (first come first served would run it after the last slow task started)."""
    sc = spark.sparkContext
    finished: dict[str, float] = {}

    def run(name: str, tasks: int, seconds: float) -> None:
        with in_pool(spark, CONNECTORS_POOL):
            sc.parallelize(range(tasks), tasks).foreach(lambda _: time.sleep(seconds))
        finished[name] = time.monotonic()

    slow = threading.Thread(target=run, args=("slow", 8, 1.0))  # local[2]: about 4 s
    slow.start()
    try:
        _wait_for_running_tasks(sc, 2)
        run("short", 1, 0.0)
    finally:
        slow.join(120)
    assert finished["slow"] - finished["short"] > 1.0


def test_a_query_started_in_a_pool_runs_its_batches_there(spark, tmp_path):
    seen: list[set] = []
    with in_pool(spark, CONNECTORS_POOL):
        query = (spark.readStream.format("rate").option("rowsPerSecond", 10).load()
                 .writeStream.foreachBatch(lambda df, _id: seen.append(_pool_of_tasks(df)))
                 .option("checkpointLocation", str(tmp_path / "ck")).start())
    assert spark.sparkContext.getLocalProperty(POOL_PROPERTY) is None  # restored for this thread
    try:
        deadline = time.monotonic() + 60
        while len([s for s in seen if s]) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        query.stop()
    assert [s for s in seen if s][:2] == [{CONNECTORS_POOL}, {CONNECTORS_POOL}]
