"""First use of Spark's Kafka reader and writer and of Delta's writer, done before a connector needs them,
reading only sparkcat's own config topic and writing nowhere a user sees.

A connector's first batch through these pays, once per JVM, for loading and JIT-compiling their classes and for
their first-use set-up: Spark's Kafka source (its consumer and admin client, offset fetching), Spark's Kafka
writer (its producer pool), Delta's ``DeltaLog``, optimistic transaction, Parquet writer and statistics
collection. Each function here runs one tiny batch job through one of them:

- ``warm_kafka_reader``: reads the config topic (sparkcat's own, small, read by the driver anyway) once with
  ``spark.read.format("kafka")`` and counts it.
- ``warm_kafka_writer``: writes an empty partition with ``write.format("kafka")``: the task acquires a producer
  (classes, producer pool), sends no record, so no topic is created or written.
- ``warm_delta``: appends one row to a Delta table in a scratch directory of the driver's checkpoint root,
  reads it back, and deletes the directory (only when Delta is on the class path).
"""

from __future__ import annotations

import json
from typing import Any

from sparkcat.spark.driver import hadoop_fs
from sparkcat.spark.driver.pools import CONNECTORS_POOL, in_pool

__all__ = ["warm_kafka_reader", "warm_kafka_writer", "warm_delta", "NO_TOPIC"]

#: The topic option of the empty Kafka write; no record is sent, so it is never created (``_`` keeps it apart from
#: topics a user names: Kafka refuses no such name, but sparkcat's reserved names start so).
NO_TOPIC = "_sparkcat-warm-up-writes-nothing"
_DELTA_CLASS = "io.delta.tables.DeltaTable"


def warm_kafka_reader(spark: Any, bootstrap_servers: str, config_topic: str) -> int:
    """Read partition 0 of the config topic with Spark's Kafka source; the records it holds."""
    with in_pool(spark, CONNECTORS_POOL):
        return (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap_servers)
                .option("assign", json.dumps({config_topic: [0]})).option("startingOffsets", "earliest")
                .option("endingOffsets", "latest").load().count())


def warm_kafka_writer(spark: Any, bootstrap_servers: str) -> None:
    """One empty partition through Spark's Kafka writer: a producer is made and closed, nothing is sent."""
    rows = spark.range(0, 0, 1, 1).selectExpr("CAST(id AS STRING) AS value")
    with in_pool(spark, CONNECTORS_POOL):
        (rows.write.format("kafka").option("kafka.bootstrap.servers", bootstrap_servers)
         .option("topic", NO_TOPIC).save())


def delta_available(spark: Any) -> bool:
    """Whether Delta Lake's classes are on the driver's class path (Spark's class loader: ``--jars`` too)."""
    try:
        spark.sparkContext._jvm.org.apache.spark.util.Utils.classForName(_DELTA_CLASS, True, False)
        return True
    except Exception:  # noqa: BLE001 - py4j raises its own error for a missing class
        return False


def warm_delta(spark: Any, scratch_dir: str) -> bool:
    """Append one row to a Delta table at ``scratch_dir``, read it back, delete the directory; False without Delta."""
    if not delta_available(spark):
        return False
    hadoop_fs.delete(spark, scratch_dir)
    try:
        with in_pool(spark, CONNECTORS_POOL):
            row = spark.range(0, 1, 1, 1).selectExpr("CAST(CAST(id AS STRING) AS BINARY) AS value",
                                                     "CAST(id AS BIGINT) AS offset")
            row.write.format("delta").mode("append").save(scratch_dir)
            spark.read.format("delta").load(scratch_dir).count()
    finally:
        hadoop_fs.delete(spark, scratch_dir)
    return True
