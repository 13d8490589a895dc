"""A standby's warm-up (spark/warm_up.py) on a real Spark session: it runs a query of the connectors' kind,
leaves no query and no checkpoint behind, and the next Python job finds sparkcat's handler modules imported."""

from __future__ import annotations

from pathlib import Path

from sparkcat.config.names import WARM_UP_QUERY
from sparkcat.spark.driver.warm_up import run_warm_up


def _handler_module_imported(batches):
    import sys

    import pyarrow as pa

    for _ in batches:
        pass
    yield pa.RecordBatch.from_arrays([pa.array(["sparkcat.spark.executor.source_txn" in sys.modules])], names=["warm"])


def test_warm_up_leaves_nothing_running_and_its_workers_warm(spark, tmp_path: Path):
    checkpoint = tmp_path / "warm-up-checkpoint"
    took = run_warm_up(spark, WARM_UP_QUERY, str(checkpoint))
    assert took > 0
    assert not checkpoint.exists(), "the warm-up's checkpoint is deleted"
    assert WARM_UP_QUERY not in [q.name for q in spark.streams.active]
    rows = spark.range(0, 1, 1, 1).mapInArrow(_handler_module_imported, "warm BOOLEAN").collect()
    assert rows and all(r.warm for r in rows), "the next Python worker has the handlers imported"
