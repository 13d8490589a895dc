"""Spark's fair scheduler for the connectors' queries.

Every connector's query runs in ``CONNECTORS_POOL``, which schedules its task sets FAIR:
the one with the fewest running tasks gets the next free slot, so a connector whose batch has many
slow tasks (a sink whose ``put`` sleeps) does not hold every slot while the others' batches wait.

Not one pool per connector (Spark's usual recipe for sharing between streaming queries): with
more pools than task slots, FAIR breaks ties between idle pools by pool name, and connectors
whose names sort last starve (25 connectors on local[2]: some waited 76 s for a batch while others ran every
second).

Inside the pool, task sets with as many running tasks are ordered by name, ``TaskSet_<stageId>.<attempt>``
compared as strings; when stage ids gain a digit, the task sets waiting with the shorter ids lose every tie to
newer ones for ten times as many stages (8 threads of small jobs on local[2], 4 ran 130 jobs in 40 s
and 4 ran 1 or 2; 6 of 15 sources took 94% of the batches at the scale benchmark's 30 level). ``level_stage_ids``
starts stage ids at ten digits (``org.sparkcat.spark.StageIds``), where string order is numeric order, so
the oldest waiting task set is served first.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["CONNECTORS_POOL", "scheduler_conf", "in_pool", "level_stage_ids"]

log = logging.getLogger(__name__)

CONNECTORS_POOL = "sparkcat-connectors"  # every connector's query (not one pool each, see above)
POOL_PROPERTY = "spark.scheduler.pool"
ALLOCATIONS = f"""<?xml version="1.0"?>
<!-- Written by sparkcat (sparkcat/spark/driver/pools.py). -->
<allocations>
  <pool name="{CONNECTORS_POOL}">
    <schedulingMode>FAIR</schedulingMode>
    <weight>1</weight>
    <minShare>0</minShare>
  </pool>
</allocations>
"""


def scheduler_conf(directory: str | Path | None = None) -> dict[str, str]:
    """Spark settings for FAIR scheduling with sparkcat's pools; writes the allocation file.

    For a SparkSession the caller builds; settings already given (spark-submit ``--conf``)
    should win, see ``bootstrap.main``. The file is named by a ``file:`` URI: Spark opens it through Hadoop's
    ``FileSystem``, where a bare path is on ``fs.defaultFS``, HDFS on a YARN cluster's gateway.
    """
    target = Path(directory) if directory is not None else Path(tempfile.mkdtemp(prefix="sparkcat-pools-"))
    target.mkdir(parents=True, exist_ok=True)
    path = target / "fairscheduler.xml"
    path.write_text(ALLOCATIONS)
    return {"spark.scheduler.mode": "FAIR", "spark.scheduler.allocation.file": path.resolve().as_uri()}


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


def level_stage_ids(spark: Any) -> bool:
    """Start the session's stage ids at ten digits, so FAIR serves the oldest waiting task set first (see above).

    Call it right after the session is built. False when the session does not schedule FAIR (FIFO has no such
    tie), or (with a warning) when this Spark has no such counter.
    """
    sc = spark.sparkContext
    if str(sc.getConf().get("spark.scheduler.mode", "FIFO")).upper() != "FAIR":
        return False
    try:
        next_id = sc._jvm.org.sparkcat.spark.StageIds.startAtTenDigits(sc._jsc.sc())
    except Exception as e:  # sparkcat-jvm.jar missing, or a Spark whose DAGScheduler changed
        log.warning("Stage ids left as they are (%s): under load, FAIR scheduling may starve some connectors' "
                    "batches for minutes", str(e).splitlines()[0] if str(e) else type(e).__name__)
        return False
    log.info("Stage ids start at %d, so the FAIR scheduler serves waiting batches oldest first", next_id)
    return True
