"""Spark fair-scheduler pools: the herder's config-log stream ahead of connector batches.

With Spark's default FIFO scheduler every micro-batch job queues behind all jobs submitted
before it: with 50 connectors on two cores a config-log batch (the herder reading back a
request it just wrote) waited for ~50 connector batches, several seconds per request. In FAIR
mode the config-log query runs in ``CONTROL_POOL``, whose ``minShare`` gives its tasks the next
free slot, and every connector's query in ``CONNECTORS_POOL``, first come first served (FIFO)
as before.

Not one pool per connector (Spark's usual recipe for sharing between streaming queries): with
more pools than task slots, FAIR breaks ties between idle pools by pool name, and connectors
whose names sort last starved (measured: 25 connectors on local[2], some waited 76 s for a
batch while others ran every second).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["CONTROL_POOL", "CONNECTORS_POOL", "scheduler_conf", "in_pool"]

CONTROL_POOL = "sparkcat-control"
CONNECTORS_POOL = "sparkcat-connectors"  # every connector's query (not one pool each, see above)
POOL_PROPERTY = "spark.scheduler.pool"
ALLOCATIONS = f"""<?xml version="1.0"?>
<!-- Written by sparkcat (sparkcat/spark/pools.py). -->
<allocations>
  <pool name="{CONTROL_POOL}">
    <schedulingMode>FIFO</schedulingMode>
    <weight>10</weight>
    <minShare>1</minShare>
  </pool>
  <pool name="{CONNECTORS_POOL}">
    <schedulingMode>FIFO</schedulingMode>
    <weight>1</weight>
    <minShare>0</minShare>
  </pool>
</allocations>
"""


def scheduler_conf(directory: str | Path | None = None) -> dict[str, str]:
    """Spark settings for FAIR scheduling with sparkcat's pools; writes the allocation file.

    For a SparkSession the caller builds; settings already given (spark-submit ``--conf``)
    should win, see ``bootstrap.main``.
    """
    target = Path(directory) if directory is not None else Path(tempfile.mkdtemp(prefix="sparkcat-pools-"))
    target.mkdir(parents=True, exist_ok=True)
    path = target / "fairscheduler.xml"
    path.write_text(ALLOCATIONS)
    return {"spark.scheduler.mode": "FAIR", "spark.scheduler.allocation.file": str(path.resolve())}


@contextmanager
def in_pool(spark: Any, pool: str) -> Iterator[None]:
    """Jobs of queries started inside run in ``pool`` (a query keeps its starting thread's pool)."""
    sc = spark.sparkContext
    previous = sc.getLocalProperty(POOL_PROPERTY)
    sc.setLocalProperty(POOL_PROPERTY, pool)
    try:
        yield
    finally:
        sc.setLocalProperty(POOL_PROPERTY, previous)
