"""A driver process to SIGKILL: runs one Delta-sink query and pauses inside the crash window.

``python -m tests.integration.connectors.delta_driver PLAN_JSON STORE_DIR MARKERS_DIR``: starts the
plan's query in a fresh local Spark session. Its ``on_batch`` runs after the batch's Delta commit and
before Spark commits the batch to its checkpoint (as the herder's does); there it writes the
offsets store, drops a marker file named after the batch id and sleeps, so a test that kills the
process on seeing a marker kills it between the two commits.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from sparkcat.spark.query_plan import BatchResult, QueryPlan
from sparkcat.spark.driver.queries import register_sources, start_query
from sparkcat.storage.local.log import LocalLog
from sparkcat.storage.offsets import OffsetStore
from tests.spark_fixture import make_spark


def main(plan_json: str, store_dir: str, markers: str) -> None:
    plan = QueryPlan.from_json(Path(plan_json).read_text())
    store = OffsetStore(LocalLog(Path(store_dir), "offsets"))

    def on_batch(plan: QueryPlan, result: BatchResult) -> None:
        store.put(plan.connector, [o for t in result.tasks.values() for o in t.offsets])
        (Path(markers) / str(result.batch_id)).write_text("written")
        time.sleep(2.0 if result.batch_id < 2 else 600.0)  # from batch 2 on: wait here to be killed

    spark = make_spark()
    register_sources(spark)
    start_query(spark, plan, on_batch).awaitTermination()


if __name__ == "__main__":
    main(*sys.argv[1:4])
