"""The JVM side of sparkcat's Spark session: Spark's Kafka connector and Delta Lake.

``./spark-submit.sh`` passes the jars that ``scripts/jars.sh`` resolved (``.jars/spark``) with
``--jars`` and Delta's session settings come from ``conf/spark-defaults.conf``; sessions built in
Python (tests, benchmarks) take the same settings from ``jvm_conf()``.
"""

from __future__ import annotations

import os
from pathlib import Path

#: Delta Lake's SQL extension and catalog, so ``format("delta")`` and Delta catalog tables work, and the
#: partitions Delta rebuilds a table's snapshot with after each commit: Delta's default (50) runs 50 tasks
#: per micro-batch, 6.6 s of the driver's CPU for a 20-record batch on local[2] (bench ``batchcost``).
DELTA_CONF = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
    "spark.databricks.delta.snapshotPartitions": "2",
}


def spark_jars(root: Path | None = None) -> list[str]:
    """The resolved jars: ``$SPARKCAT_SPARK_JARS`` (set by scripts/jars.sh), else ``ROOT/.jars/spark/*.jar``."""
    listed = os.environ.get("SPARKCAT_SPARK_JARS", "")
    if listed:
        return [j for j in listed.split(",") if j]
    folder = (root or Path(__file__).resolve().parents[3]) / ".jars" / "spark"
    return sorted(str(p) for p in folder.glob("*.jar"))


def jvm_conf(root: Path | None = None) -> dict[str, str]:
    """Spark settings for a session built in Python: the jars and Delta's extension.

    Raises RuntimeError when the jars were never resolved (run tests/run.sh or ./spark-submit.sh once).
    """
    jars = spark_jars(root)
    if not jars:
        raise RuntimeError("Spark's Kafka connector and Delta jars are missing (.jars/spark): "
                           "run ./spark-submit.sh or tests/run.sh once, they resolve them with Maven")
    return {"spark.jars": ",".join(jars), **DELTA_CONF}
