"""The config log as a stream, so the herder rebuilds cluster state in ``foreachBatch``.

``config_log_stream`` is the one entry point: rows ``(offset, key, value)`` with key and value
as strings and a tombstone's value null, from the log's beginning.

- Kafka stores: Spark's own Kafka source over the config topic (``startingOffsets=earliest``,
  ``read_committed``, so records of a writer's aborted or open transaction never reach the herder;
  DESIGN §6 has the leader write through a transactional producer).
- Local stores (no broker): ``sparkcat-config-log``, a small Python data source below. Offsets are
  the log's own offsets (``{"next": n}``); reading happens on the driver in ``partitions`` (the
  records travel inside the single InputPartition): the log is small and must be read in order,
  so there is nothing to parallelise.

Either way a batch has one Spark partition per log partition (the config topic has one), and
the herder sorts a batch's rows by offset before it applies them.
"""

from __future__ import annotations

import json
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.types import LongType, StringType, StructField, StructType

SCHEMA = StructType([StructField("offset", LongType()), StructField("key", StringType()),
                     StructField("value", StringType())])


def open_log(spec: dict[str, str]):
    """The config log described by a store spec (``{"backend": "local"|"kafka", ...}``), read-only."""
    if spec.get("backend") == "kafka":
        from sparkcat.storage.kafka.log import KafkaLog
        client = {k[len("kafka."):]: v for k, v in spec.items() if k.startswith("kafka.")}
        return KafkaLog(spec["bootstrap.servers"], spec["topic"], client_config=client)
    from sparkcat.storage.local.log import LocalLog
    return LocalLog(spec["dir"], spec["name"])


class _Records(InputPartition):
    def __init__(self, rows: list[tuple[int, str, str | None]]):
        self.rows = rows


class ConfigLogReader(DataSourceStreamReader):
    """Driver side reads new records; the executor side only replays what the partition carries."""

    def __init__(self, spec: dict[str, str]):
        self.spec = spec
        self._log = None

    def _backend(self):
        if self._log is None:
            self._log = open_log(self.spec)
        return self._log

    def initialOffset(self) -> dict:
        return {"next": 0}

    def latestOffset(self) -> dict:
        return {"next": self._backend().end_offset()}

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        records = [r for r in self._backend().read(start["next"]) if r.offset < end["next"]]
        rows = [(r.offset, r.key, None if r.value is None else r.value.decode("utf-8")) for r in records]
        return [_Records(rows)]

    def read(self, partition: _Records):
        yield from partition.rows

    def commit(self, end: dict) -> None:
        pass


class ConfigLogSource(DataSource):
    """Format ``sparkcat-config-log``; option ``spec`` is the JSON store spec of the config log."""

    @classmethod
    def name(cls) -> str:
        return "sparkcat-config-log"

    def schema(self) -> StructType:
        return SCHEMA

    def streamReader(self, schema: StructType) -> ConfigLogReader:
        return ConfigLogReader(json.loads(self.options["spec"]))


def config_log_stream(spark: Any, spec: dict[str, str]) -> Any:
    """A streaming DataFrame ``(offset BIGINT, key STRING, value STRING)`` over the config log of ``spec``.

    ``spec`` is ``runtime.stores.config_log_spec(worker)``. The caller gives the query a fresh
    checkpoint on every start: the herder's state is rebuilt from the log's beginning.
    """
    if spec.get("backend") != "kafka":
        spark.dataSource.register(ConfigLogSource)
        return spark.readStream.format(ConfigLogSource.name()).option("spec", json.dumps(spec)).load()
    from pyspark.sql import functions as F

    from sparkcat.spark.kafka_input import client_options
    worker_kafka = {k[len("kafka."):]: v for k, v in spec.items() if k.startswith("kafka.")}
    options = client_options(spec["bootstrap.servers"], worker_kafka, defaults={"isolation.level": "read_committed"})
    df = (spark.readStream.format("kafka").options(**options)
          .option("subscribe", spec["topic"]).option("startingOffsets", "earliest")
          .option("failOnDataLoss", "false")  # compaction leaves gaps in a config topic's offsets
          .load())
    return df.select(F.col("offset"), F.coalesce(F.col("key").cast("string"), F.lit("")).alias("key"),
                     F.col("value").cast("string").alias("value"))
