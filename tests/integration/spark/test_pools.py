"""Fair-scheduler pools: the herder's stream runs ahead of connector batches (sparkcat/spark/pools.py)."""

from __future__ import annotations

import threading
import time

import pytest

from sparkcat.spark.pools import CONNECTORS_POOL, CONTROL_POOL, POOL_PROPERTY, in_pool

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


def test_a_control_job_overtakes_queued_connector_tasks(spark):
    """Both slots busy with a connector job and more of its tasks queued: the herder's job gets the next slot."""
    sc = spark.sparkContext
    finished: dict[str, float] = {}

    def run(pool: str, tasks: int, seconds: float) -> None:
        with in_pool(spark, pool):
            sc.parallelize(range(tasks), tasks).foreach(lambda _: time.sleep(seconds))
        finished[pool] = time.monotonic()

    connectors = threading.Thread(target=run, args=(CONNECTORS_POOL, 8, 1.0))  # local[2]: about 4 s
    connectors.start()
    try:
        _wait_for_running_tasks(sc, 2)
        run(CONTROL_POOL, 1, 0.0)
    finally:
        connectors.join(120)
    # FIFO would run the control task only after the last connector task started (the end of that job)
    assert finished[CONNECTORS_POOL] - finished[CONTROL_POOL] > 1.0


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
