"""The Kafka positions a Delta table already holds, so a Kafka-fed append never writes a record twice when its
query starts from positions behind the table.

Delta's streaming sink skips a replayed batch by the query's id and batch id: exactly once per checkpoint.
When leadership moves to a driver with a checkpoint of its own (a fresh one, or one from when it led before),
the query starts from the offsets store, which the runtime writes after Delta's commit, so it can be behind
the table by the batches the previous leader committed last. The table's ``kafka_topic``,
``kafka_partition`` and ``kafka_offset`` columns say what it holds: at the query's start the sink reads, per
topic-partition, the largest offset at or past where the query starts (Delta skips the files whose
``kafka_offset`` statistics end before it) and drops the records up to it, as the JDBC sink does with its
positions table. This assumes one connector writes a topic's records into the table.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from sparkcat.connectors.delta_settings import DeltaSinkSettings

__all__ = ["held_positions", "without_held"]


def held_positions(spark: Any, settings: DeltaSinkSettings, starting: Mapping[tuple[str, int], int]
                   ) -> dict[tuple[str, int], int]:
    """``{(topic, partition): next offset}`` the table holds beyond ``starting`` (where the query starts)."""
    if not starting:
        return {}
    table = _table(spark, settings)
    if table is None or not {"kafka_topic", "kafka_partition", "kafka_offset"} <= set(table.columns):
        return {}
    past = _any_partition(starting, "kafka_topic", "kafka_partition", lambda start: F.col("kafka_offset") >= start)
    rows = (table.where(past).groupBy("kafka_topic", "kafka_partition")
            .agg(F.max("kafka_offset").alias("last")).collect())
    return {(r["kafka_topic"], int(r["kafka_partition"])): int(r["last"]) + 1 for r in rows}


def without_held(records: DataFrame, held: Mapping[tuple[str, int], int]) -> DataFrame:
    """Spark's Kafka records minus those the table already holds (a column filter; none when nothing is held)."""
    if not held:
        return records
    return records.where(~_any_partition(held, "topic", "partition", lambda end: F.col("offset") < end))


def _any_partition(bounds: Mapping[tuple[str, int], int], topic: str, partition: str,
                   test: Callable[[int], Column]) -> Column:
    """True for a row of one of ``bounds``' topic-partitions that passes ``test(bound)``."""
    matched: Column = F.lit(False)
    for (name, number), bound in bounds.items():
        matched = matched | ((F.col(topic) == name) & (F.col(partition) == number) & test(bound))
    return matched


def _table(spark: Any, settings: DeltaSinkSettings) -> DataFrame | None:
    """The table as a DataFrame, or None when it does not exist yet."""
    from delta.tables import DeltaTable

    if settings.table_path:
        if not DeltaTable.isDeltaTable(spark, settings.table_path):
            return None
        return spark.read.format("delta").load(settings.table_path)
    if not spark.catalog.tableExists(settings.table_name):
        return None
    return spark.read.table(settings.table_name)
