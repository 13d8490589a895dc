"""Fair-scheduler pools: the herder's stream runs ahead of connector batches (sparkcat/spark/pools.py)."""

from __future__ import annotations

import time

import pytest

from sparkcat.spark.pools import CONNECTORS_POOL, CONTROL_POOL, POOL_PROPERTY, in_pool

pytestmark = pytest.mark.integration


def _pool_of_tasks(df) -> set:
    from pyspark import TaskContext
    return set(df.rdd.map(lambda _: TaskContext.get().getLocalProperty("spark.scheduler.pool")).collect())


def test_the_session_schedules_fairly_with_the_control_pool_first(spark):
    sc = spark.sparkContext._jsc.sc()
    assert sc.getSchedulingMode().toString() == "FAIR"
    control = sc.getPoolForName(CONTROL_POOL).get()
    connectors = sc.getPoolForName(CONNECTORS_POOL).get()
    assert control.minShare() >= 1 > connectors.minShare()  # a waiting control task takes the next free slot
    assert connectors.schedulingMode().toString() == "FIFO"  # connectors: first come, first served


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
