"""A streaming source over the config log, so the herder rebuilds cluster state in ``foreachBatch``.

Offsets are the log's own offsets (``{"next": n}``). Reading happens on the driver in
``partitions`` (the records travel inside the single InputPartition): the log is
small and must be read in order, so there is nothing to parallelise.
"""

from __future__ import annotations

import json

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
