"""The connectors' fair-scheduler pool: one connector's slow batch does not hold every slot (sparkcat/spark/driver/pools.py)."""

from __future__ import annotations

import threading
import time
from collections import Counter

import pytest

from sparkcat.spark.driver.pools import CONNECTORS_POOL, POOL_PROPERTY, in_pool, level_stage_ids

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


def test_stage_ids_have_ten_digits_so_fair_ties_go_to_the_oldest_task_set(spark):
    """FAIR orders tied task sets by name as strings ('TaskSet_1000.0' before 'TaskSet_999.0'); with every id ten
    digits long, string order is age order (sparkcat/spark/driver/pools.py)."""
    sc = spark.sparkContext
    assert level_stage_ids(spark)  # again: never moves ids down
    sc.setJobGroup("ten-digit-stages", "stage ids")
    try:
        sc.parallelize(range(4), 2).count()
    finally:
        sc.setJobGroup(None, None)
    tracker = sc.statusTracker()
    stages = [s for j in tracker.getJobIdsForGroup("ten-digit-stages") for s in tracker.getJobInfo(j).stageIds]
    assert stages and all(len(str(s)) == 10 for s in stages), stages


def test_connectors_tiny_batches_all_keep_their_pace_when_the_slots_are_never_free(spark):
    """Eight connectors' tiny two-task batches, back to back on local[2] for 15 s: each gets its share. Before
    the stage ids were levelled, four such threads ran 130 jobs each and the other four 1 or 2."""
    sc, done, stop = spark.sparkContext, Counter(), time.monotonic() + 15.0

    def connector(i: int) -> None:
        with in_pool(spark, CONNECTORS_POOL):
            while time.monotonic() < stop:
                sc.parallelize(range(2), 2).foreach(lambda _: time.sleep(0.02))
                done[i] += 1

    threads = [threading.Thread(target=connector, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    counts = [done[i] for i in range(8)]
    assert min(counts) >= max(counts) / 2, f"jobs per connector in 15 s: {counts}"
