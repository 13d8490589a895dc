"""Delta sink: each micro-batch becomes one Delta Lake commit, written by delta-spark as a DataFrame.

Name: ``delta`` (also ``delta-sink``, ``DeltaSinkConnector``, ``DeltaSink``). There is no Kafka
Connect Java class to mimic (Delta's own Kafka connectors are not Connect plugins), so no
``io.delta...`` alias is claimed.

Two ways to use it:

- as a sink connector reading Kafka: ``connector.class: delta`` with ``topics`` (or
  ``topics.regex``);
- as the sink of a source connector, skipping Kafka: ``sink.connector.class: delta`` and the keys
  below prefixed with ``sink.`` (``sink.table.path: ...``).

Options
-------
- ``table.path`` (STRING): the table's location, any Hadoop file system path
  (``/data/orders``, ``s3a://bucket/orders``, ``hdfs:///orders``).
- ``table.name`` (STRING): a table in the session catalog (``db.orders``). Exactly one of
  ``table.path`` and ``table.name`` is required. A missing table is created by the first batch.
- ``partition.columns`` (LIST, default empty): columns to partition a new table by; for an
  existing table Delta checks that they match its partitioning.
- ``schema.evolution`` (BOOLEAN, default false): add new columns of a batch to the table
  (Delta's ``mergeSchema`` / schema auto-merge, for appends and merges). When false, a batch
  with a column the table lacks fails its tasks with a schema mismatch error (in merge mode too,
  where Delta alone would drop such columns silently).
- ``write.mode`` (STRING, ``append`` or ``merge``, default ``append``): ``merge`` upserts by the
  record key (``MERGE INTO``: update the row with the same key, else insert). A batch holding a
  key several times keeps its last record. A record without a key fails the batch in merge mode.
- ``delete.enabled`` (BOOLEAN, default false; needs ``write.mode=merge``): a tombstone deletes
  the row with its key, as in Connect's JDBC sink. A tombstone is a record whose value the value
  converter decodes to null: a null value, and for JsonConverter also ``{"schema": ...,
  "payload": null}`` (how it writes a null value that has a schema, as Debezium's
  ``ExtractNewRecordState`` makes deletes) or, without schemas, ``null``. Without
  ``delete.enabled`` a tombstone is upserted like any record, its value columns null.
- ``key.schema`` (STRING, Spark DDL field list such as ``id BIGINT, region STRING``): the key's
  fields become columns (and the merge key). Without it the key is one column ``key`` (JSON text
  for a source connector's keys, for JsonConverter keys; text or bytes for String/ByteArray keys);
  a source connector's rows get that column only in merge mode.
- ``value.schema`` (STRING, Spark DDL field list): the fields of JsonConverter values read from
  Kafka, which become columns. Required with JsonConverter values (Kafka-fed only).
- ``txn.app.id`` (STRING, default: the connector's name): Delta's transaction app id for this
  connector's merges (and appends behind a source's ``sink.*`` keys). Two connectors writing one
  table need different ids (their names already differ); set it only to keep the id when renaming a
  connector. Refused for a Kafka-fed append, which Delta's streaming sink writes under the query's id.

Rows written
------------
A source connector's record value, when a struct, becomes the row's columns (a non-struct value
is one column ``value``). A Kafka record becomes its decoded key and value, as the connector's
converters would decode them, done with Spark expressions: StringConverter is a ``decode`` of
the bytes in its ``encoding`` (a STRING column), ByteArrayConverter keeps the bytes (BINARY),
JsonConverter is ``from_json`` with ``value.schema``/``key.schema`` (inside Connect's
``schema``/``payload`` envelope when ``schemas.enable`` is true, the default). Other converters
are refused. Kafka rows also get ``kafka_topic``, ``kafka_partition``, ``kafka_offset`` and
``kafka_timestamp`` (TIMESTAMP) columns.

How batches are written, and the delivery guarantee
---------------------------------------------------
A Kafka-fed **append** is a native sink (``native_write``): one streaming query from Spark's Kafka
source to Delta's own streaming sink (``writeStream.format("delta")``), no Python per batch. Delta
records each batch as its query id and batch id in the table's log and skips a replayed one: exactly
once per checkpoint. Positions reach the offsets store from the query's progress, after the commit, so a
query that starts from the store (leadership moved to a driver with a checkpoint of its own) can start
behind the table: at its start the sink reads the table's largest ``kafka_offset`` past the start, per
topic-partition, and drops the records up to it (``sparkcat.connectors.delta_positions``). The table's
contents decide: positions moved back with the offsets API re-deliver only what the table no longer holds.

A **merge**, and a Delta sink behind a source's ``sink.*`` keys, are written by a foreachBatch batch
writer (``sparkcat.connectors.delta_writer``): each commit carries Delta's transaction id (``txn.app.id``,
version = the runtime's ``sink_batch_id``: checkpoint creation time in ms * 1000 + batch id), set
through the session settings ``spark.databricks.delta.write.txnAppId``/``txnVersion``, which
Delta honours for appends and MERGE alike. A batch replayed after a crash between the Delta
commit and Spark's checkpoint commit has a version the table already recorded, and Delta skips
it. A fresh checkpoint has a larger creation time, so its batches are never mistaken for old ones.

Tasks
-----
A DataFrame write has no per-task split: Spark spreads the writing over the batch's partitions
and the driver makes one Delta commit per micro-batch. ``tasks.max`` still sets how many tasks the
connector has in Connect's sense: for a Kafka-fed connector, how many parts the reading of each
batch is split into (the topic-partitions are shared out as for any sink); as an embedded sink,
it follows the source's tasks. Each task is reported with its records, offsets and the executor
(``worker_id``) that ran its part of the batch; a failed Delta commit fails every task, since
they share it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from sparkcat import __version__
from sparkcat.api.batch_writer import BatchWriteContext, BatchWriter
from sparkcat.api.configured import ConfiguredConnector, Versioned
from sparkcat.api.connector import CopiesConfigToTasks, ExactlyOnceSupport, SinkConnector, SinkTask
from sparkcat.api.native import NativeWrite, NativeWriteContext
from sparkcat.api.records import SinkRecord
from sparkcat.connectors.delta_settings import APPEND, CONFIG_DEF, MERGE, TASK_ID, DeltaSinkSettings, config_problems
from sparkcat.errors import ConnectorError

log = logging.getLogger("sparkcat.connectors.delta")

__all__ = ["DeltaSinkConnector", "DeltaSinkTask", "DeltaSinkSettings", "CONFIG_DEF", "config_problems",
           "APPEND", "MERGE"]

class DeltaSinkConnector(ConfiguredConnector, CopiesConfigToTasks, SinkConnector):
    """Hands ``tasks.max`` copies of its config to its tasks (see "Tasks" in the module docstring)."""

    task_id_key = TASK_ID
    plugin_version = __version__
    definition = CONFIG_DEF
    config_problems = staticmethod(config_problems)

    def check_config(self, config: dict[str, str]) -> None:
        DeltaSinkSettings.parse(config)

    def exactly_once_support(self, config: Mapping[str, str]) -> ExactlyOnceSupport:
        """Always: each micro-batch is one Delta commit carrying its transaction id, which Delta skips on replay."""
        return ExactlyOnceSupport.SUPPORTED

    def task_class(self) -> type[DeltaSinkTask]:
        return DeltaSinkTask

    def native_write(self, context: NativeWriteContext) -> NativeWrite | None:
        """Appends run as Delta's own streaming sink (exactly once by the query's id and batch id in the table's
        log); merges keep the batch writer (``batch_writer``), which MERGE needs."""
        settings = DeltaSinkSettings.parse(context.config)
        if settings.merges:
            return None
        from pyspark.sql import SparkSession  # pyspark: imported where the query starts

        from sparkcat.connectors.delta_positions import held_positions, without_held
        from sparkcat.connectors.delta_rows import kafka_rows
        config = dict(context.config)
        options = {"mergeSchema": "true"} if settings.schema_evolution else {}
        # getActiveSession is per thread, and a query starter thread has none: the driver's one session
        spark = SparkSession.getActiveSession() or SparkSession.builder.getOrCreate()
        held = held_positions(spark, settings, context.starting_offsets)
        if held:
            log.info("Connector %s: the table already holds records past the committed positions in %d "
                     "partition(s) (another driver committed them last); they are skipped: %s", context.connector,
                     len(held), ", ".join(f"{t}:{p} up to {o}" for (t, p), o in sorted(held.items())[:5]))
        return NativeWrite("delta", options, lambda records: kafka_rows(without_held(records, held), config, settings),
                           path=settings.table_path, table=settings.table_name,
                           partition_by=settings.partition_columns)

    def batch_writer(self, context: BatchWriteContext) -> BatchWriter:
        """Merges, and a source connector's records (``sink.*`` keys): one Delta commit per micro-batch, on the
        driver (``delta_writer``)."""
        from sparkcat.connectors.delta_writer import DeltaBatchWriter  # pyspark: imported where the query starts
        return DeltaBatchWriter(context)


class DeltaSinkTask(Versioned, SinkTask):
    """A Delta sink's task: its rows are written natively or by the connector's ``batch_writer``, never by ``put``."""

    plugin_version = __version__

    def start(self, config: dict[str, str]) -> None:
        DeltaSinkSettings.parse(config)

    def put(self, records: list[SinkRecord]) -> None:
        raise ConnectorError("the delta sink writes whole micro-batches with delta-spark on the driver; "
                             "its task takes no records through put")
