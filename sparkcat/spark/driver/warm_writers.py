"""First use of Spark's Kafka reader and writer and of Delta's writer, done before a connector needs them,
reading only sparkcat's own config topic and writing nowhere a user sees.

A connector's first batch through these pays, once per JVM, for loading and JIT-compiling their classes and for
their first-use set-up: a streaming query's start, Spark's Kafka source (its consumer and admin client, offset fetching), Spark's Kafka
writer (its producer pool), Delta's ``DeltaLog``, optimistic transaction, Parquet writer and statistics
collection. Each function here runs one tiny batch job through one of them:

- ``warm_kafka_stream``: streams the config topic (sparkcat's own, small, read by the driver anyway) once with
  ``readStream.format("kafka")`` into Spark's ``noop`` sink: the streaming engine's start, checkpoint and
  micro-batch classes too.
- ``warm_kafka_writer``: writes an empty partition with ``write.format("kafka")``: the task acquires a producer
  (classes, producer pool), sends no record, so no topic is created or written.
- ``warm_delta``: appends one row to a Delta table in a scratch directory of the driver's checkpoint root,
  reads it back, streams the config topic once into a second table there with Delta's streaming sink (with
  Kafka stores), and deletes the directory (only when Delta is on the class path).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from sparkcat.errors import ConnectorError
from sparkcat.spark.driver import hadoop_fs
from sparkcat.spark.driver.pools import CONNECTORS_POOL, in_pool

__all__ = ["warm_kafka_stream", "warm_kafka_writer", "warm_delta", "NO_TOPIC"]

#: The topic option of the empty Kafka write; no record is sent, so it is never created (``_`` keeps it apart from
#: topics a user names: Kafka refuses no such name, but sparkcat's reserved names start so).
NO_TOPIC = "_sparkcat-warm-up-writes-nothing"
_DELTA_CLASS = "io.delta.tables.DeltaTable"


def warm_kafka_stream(spark: Any, bootstrap_servers: str, config_topic: str, query_name: str, checkpoint_dir: str,
                      timeout_s: float = 120.0, stopping: Callable[[], bool] = lambda: False) -> None:
    """Stream partition 0 of the config topic into Spark's ``noop`` sink once (``availableNow``), in a session
    of its own (its query is in no other session's ``streams.active``), then delete its checkpoint."""
    _stream_once(spark, (bootstrap_servers, config_topic), "noop", None, query_name, checkpoint_dir, timeout_s,
                 stopping)


def _stream_once(spark: Any, source: tuple[str, str], fmt: str, path: str | None, query_name: str,
                 checkpoint_dir: str, timeout_s: float, stopping: Callable[[], bool]) -> None:
    """Partition 0 of ``source`` (bootstrap servers, topic) written once to ``fmt`` (at ``path``) by a streaming
    query in a session of its own, stopped early once ``stopping()``; its checkpoint deleted after."""
    session = spark.newSession()
    hadoop_fs.delete(spark, checkpoint_dir)
    try:
        with in_pool(spark, CONNECTORS_POOL):  # the query's thread takes the starting thread's pool
            writer = (session.readStream.format("kafka").option("kafka.bootstrap.servers", source[0])
                      .option("assign", json.dumps({source[1]: [0]})).option("startingOffsets", "earliest").load()
                      .selectExpr("value", "offset").writeStream.format(fmt).queryName(query_name)
                      .option("checkpointLocation", checkpoint_dir).trigger(availableNow=True))
            query = writer.start(path) if path else writer.start()
        deadline = time.monotonic() + timeout_s
        try:
            while query.isActive and time.monotonic() < deadline and not stopping():
                query.awaitTermination(0.2)
        finally:
            query.stop()
        if query.exception() is not None:
            raise ConnectorError(f"the warm-up's stream into {fmt} failed: {query.exception()}")
    finally:
        hadoop_fs.delete(spark, checkpoint_dir)


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


def warm_delta(spark: Any, scratch_dir: str, source: tuple[str, str] | None = None, query_name: str = "",
               timeout_s: float = 120.0, stopping: Callable[[], bool] = lambda: False) -> bool:
    """Append one row to a Delta table at ``scratch_dir`` and read it back, ask Delta's Python API whether it is
    a table (as the delta sink does at its start), and with a ``source`` (bootstrap servers, topic) stream it
    once into a second table with Delta's streaming sink; delete the directory. False without Delta."""
    if not delta_available(spark):
        return False
    hadoop_fs.delete(spark, scratch_dir)
    try:
        with in_pool(spark, CONNECTORS_POOL):
            table = f"{scratch_dir}/batch"
            row = spark.range(0, 1, 1, 1).selectExpr("CAST(CAST(id AS STRING) AS BINARY) AS value",
                                                     "CAST(id AS BIGINT) AS offset")
            row.write.format("delta").mode("append").save(table)
            spark.read.format("delta").load(table).count()
            _python_api(spark, table)
        if source is not None:
            _stream_once(spark, source, "delta", f"{scratch_dir}/stream", query_name, f"{scratch_dir}/checkpoint",
                         timeout_s, stopping)
    finally:
        hadoop_fs.delete(spark, scratch_dir)
    return True


def _python_api(spark: Any, table: str) -> None:
    """Delta's Python package (``delta.tables``), imported and used once, when installed."""
    try:
        from delta.tables import DeltaTable
    except ImportError:
        return
    DeltaTable.isDeltaTable(spark, table)
