"""A source connector's stream without a Python process of its own: planned in the driver, read on executors.

Spark starts one long-lived Python process on the driver for every streaming query over a Python data
source, for its planning calls, and never shares it: about 100 MB and a second of start-up per source
connector. Here the stream is sparkcat's JVM source ``sparkcat-planned-source`` (``jvm/sparkcat``:
``org.sparkcat.source``), whose planning calls come back through py4j to a ``Planner`` in the driver's own
Python process (``ConnectorStreamReader``, ``connector_planning``: offsets, admission control, excluded tasks).
Each micro-batch is one row per connector task, ``(task, payload)``, the payload the pickled ``TaskRanges``;
a ``mapInArrow`` over those rows (``executor.connector_source.read_payloads``) runs each task's ``poll`` in
Spark's reused executor Python workers, which all of the driver's queries share.

Offsets are ``ConnectorStreamReader``'s JSON (``{"offsets": {...}}``), as when the stream was a Python data
source, so such checkpoints read back here.
"""

from __future__ import annotations

import base64
import json
import logging
import pickle
import uuid
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows
from pyspark.sql.types import StructType

from sparkcat.spark.driver.connector_planning import ConnectorStreamReader, task_value_schema
from sparkcat.spark.executor.connector_source import read_payloads, row_schema_ddl
from sparkcat.spark.query_plan import QueryPlan

__all__ = ["FORMAT", "Planner", "source_stream", "row_schema"]

log = logging.getLogger(__name__)

FORMAT = "sparkcat-planned-source"


class Planner:
    """``org.sparkcat.source.Planner`` in Python: the query's planning calls, from the JVM through py4j."""

    def __init__(self, spark: SparkSession, planner_id: str, plan: QueryPlan, schema: StructType,
                 store: Any = None) -> None:
        self.spark, self.planner_id = spark, planner_id
        self.reader = ConnectorStreamReader(plan, schema, store)

    def initialOffset(self) -> str:  # noqa: N802 - the Java interface's names
        return json.dumps(self.reader.initialOffset())

    def latestOffset(self, start: str, max_rows: int) -> str:  # noqa: N802
        limit = ReadMaxRows(int(max_rows)) if max_rows and max_rows > 0 else ReadAllAvailable()
        return json.dumps(self.reader.latestOffset(json.loads(start), limit))

    def reportLatestOffset(self) -> str | None:  # noqa: N802
        latest = self.reader.reportLatestOffset()
        return None if latest is None else json.dumps(latest)

    def planPartitions(self, start: str, end: str) -> str:  # noqa: N802
        parts = self.reader.partitions(json.loads(start), json.loads(end))
        return json.dumps([[p.task, base64.b64encode(pickle.dumps(p)).decode()] for p in parts])

    def commit(self, end: str) -> None:
        self.reader.commit(json.loads(end))

    def stop(self) -> None:
        """The query ended (Spark stops its stream): the driver-side tasks stop, and the planner is forgotten."""
        try:
            self.reader.stop()
        finally:
            _registry(self.spark).remove(self.planner_id)

    def metrics(self) -> str | None:
        """No source metrics in the query's progress beyond Spark's own."""
        return None

    class Java:
        implements = ["org.sparkcat.source.Planner"]


def _registry(spark: SparkSession) -> Any:
    return spark.sparkContext._jvm.org.sparkcat.source.Planners


def source_stream(spark: SparkSession, plan: QueryPlan, store: Any = None) -> DataFrame:
    """The streaming DataFrame of a source connector's records (``connector_source.row_schema_ddl``).

    Registers the query's planner in the driver JVM; it removes itself when Spark stops the stream.
    ``store``: the driver's open offsets store, which the planner reads committed offsets from.
    """
    from pyspark.java_gateway import ensure_callback_server_started

    schema = row_schema(spark, plan)
    planner_id = f"{plan.connector}-{uuid.uuid4().hex}"
    ensure_callback_server_started(spark.sparkContext._gateway)
    _registry(spark).register(planner_id, Planner(spark, planner_id, plan, schema, store))
    rows = (spark.readStream.format(FORMAT).option("planner", planner_id)
            .option("max.rows", str(plan.batch_max_records)).load())
    return rows.mapInArrow(read_payloads, schema)


def row_schema(spark: SparkSession, plan: QueryPlan) -> StructType:
    """The rows' schema, with the value type a started driver-side task declares (errors name the task)."""
    from pyspark.sql.types import _parse_datatype_string
    ddl = row_schema_ddl(task_value_schema(plan))
    parsed = _parse_datatype_string(ddl)
    if not isinstance(parsed, StructType):  # pragma: no cover - row_schema_ddl always gives a field list
        raise ValueError(f"not a row schema: {ddl}")
    return parsed
