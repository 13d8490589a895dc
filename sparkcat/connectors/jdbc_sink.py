"""JDBC sink: Kafka topics into PostgreSQL tables, exactly once, with Connect JDBC's keys.

Name: ``jdbc-sink`` (also ``io.confluent.connect.jdbc.JdbcSinkConnector``, ``JdbcSinkConnector``).

Options (Connect JDBC's)
------------------------
- ``connection.url`` / ``connection.user`` / ``connection.password``: as for the source.
- ``insert.mode``: ``insert`` (default), ``upsert`` (``INSERT ... ON CONFLICT``), ``update``.
- ``pk.mode``: ``none`` (default), ``kafka`` (columns ``__connect_topic``, ``__connect_partition``,
  ``__connect_offset``, or the three ``pk.fields``), ``record_key`` (a struct key's fields, or a
  primitive key as the one ``pk.fields`` column), ``record_value`` (value fields).
- ``pk.fields`` (LIST): the key columns (record_value/record_key: default all fields).
- ``fields.whitelist`` (LIST): the value fields to write (default all).
- ``auto.create`` / ``auto.evolve`` (false): create a missing table (with the primary key), add
  missing columns. Column types come from the decoded values (int BIGINT, float DOUBLE
  PRECISION, text TEXT, bool BOOLEAN, bytes BYTEA, Decimal NUMERIC, date DATE, datetime
  TIMESTAMP, structs and lists JSONB).
- ``delete.enabled`` (false): a tombstone (null value) deletes the row with its key; needs
  ``pk.mode=record_key``, as in Connect.
- ``table.name.format`` (``${topic}``): the table per topic (``table`` or ``schema.table``).
- ``batch.size`` (3000): records per COPY and statement.

Delivery guarantee
------------------
Each task writes its share of a micro-batch in one PostgreSQL transaction, together with the
next Kafka offset of every topic-partition it wrote in the table ``sparkcat_jdbc_positions``
(connector, topic, kafka_partition, next_offset). A record whose offset is below the stored
position is already in the table and is skipped; so a batch replayed after a crash (whether the
crash came before or after the commit) writes each record exactly once, in every insert.mode.
Records must be structs (JSON objects, Spark rows); a value that is not fails the task, naming
the record's topic, partition and offset.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sparkcat import __version__
from sparkcat.api.config import ConfigDef, Importance, Range, Type, ValidString
from sparkcat.api.configured import ConfiguredConnector, Versioned, parse_checked
from sparkcat.api.connector import CopiesConfigToTasks, ExactlyOnceSupport, SinkConnector, SinkTask
from sparkcat.api.records import SinkRecord
from sparkcat.connectors.jdbc_common import ConnectionSettings, connect, connection_settings, define_connection, \
    split_name
from sparkcat.connectors.jdbc_writer import Positions, Table, TableWriter
from sparkcat.errors import ConfigError, ConnectorError

__all__ = ["JdbcSinkConnector", "JdbcSinkTask", "JdbcSinkSettings", "CONFIG_DEF"]

log = logging.getLogger(__name__)

INSERT_MODE, PK_MODE, PK_FIELDS, FIELDS = "insert.mode", "pk.mode", "pk.fields", "fields.whitelist"
AUTO_CREATE, AUTO_EVOLVE, DELETE, TABLE_FORMAT, BATCH_SIZE = "auto.create", "auto.evolve", "delete.enabled", \
    "table.name.format", "batch.size"
INSERT, UPSERT, UPDATE = "insert", "upsert", "update"
NONE, KAFKA, RECORD_KEY, RECORD_VALUE = "none", "kafka", "record_key", "record_value"
KAFKA_PK = ("__connect_topic", "__connect_partition", "__connect_offset")
BATCH_MARKER = "__sparkcat_batch__"  # positions row of a source's sink: next_offset = its last committed batch

CONFIG_DEF: ConfigDef = (
    define_connection(ConfigDef())
    .define(INSERT_MODE, Type.STRING, INSERT, ValidString.in_(INSERT, UPSERT, UPDATE), Importance.HIGH,
            "insert: INSERT every record; upsert: INSERT ... ON CONFLICT DO UPDATE; update: UPDATE by key.")
    .define(PK_MODE, Type.STRING, NONE, ValidString.in_(NONE, KAFKA, RECORD_KEY, RECORD_VALUE), Importance.HIGH,
            "Where the primary key comes from: none, kafka (topic, partition, offset), record_key, record_value.")
    .define(PK_FIELDS, Type.LIST, "", importance=Importance.MEDIUM,
            documentation="Primary key columns (kafka: three names; record_key/record_value: fields, default all).")
    .define(FIELDS, Type.LIST, "", importance=Importance.MEDIUM,
            documentation="Value fields to write; empty: all.")
    .define(AUTO_CREATE, Type.BOOLEAN, False, importance=Importance.MEDIUM,
            documentation="Create a missing table (CREATE TABLE with the primary key).")
    .define(AUTO_EVOLVE, Type.BOOLEAN, False, importance=Importance.MEDIUM,
            documentation="Add columns a record has and the table lacks (ALTER TABLE ADD COLUMN).")
    .define(DELETE, Type.BOOLEAN, False, importance=Importance.MEDIUM,
            documentation="A tombstone deletes the row with its key; needs pk.mode=record_key.")
    .define(TABLE_FORMAT, Type.STRING, "${topic}", importance=Importance.MEDIUM,
            documentation="The table of a topic, ${topic} replaced by the topic name.")
    .define(BATCH_SIZE, Type.INT, 3000, Range.at_least(1), Importance.MEDIUM, "Records per COPY and statement.")
    .freeze()
)


def config_problems(config: Mapping[str, Any]) -> dict[str, list[str]]:
    """Connect JDBC's checks across keys."""
    problems: dict[str, list[str]] = {}
    mode = str(config.get(INSERT_MODE) or INSERT).strip()
    pk_mode = str(config.get(PK_MODE) or NONE).strip()
    pk_fields = [f for f in str(config.get(PK_FIELDS) or "").split(",") if f.strip()]
    if mode in (UPSERT, UPDATE) and pk_mode == NONE:
        problems[PK_MODE] = [f"insert.mode {mode} needs a primary key: set pk.mode to kafka, record_key or "
                             "record_value"]
    if str(config.get(DELETE) or "false").strip().lower() == "true" and pk_mode != RECORD_KEY:
        problems[DELETE] = ["Deletes are only supported for pk.mode record_key"]
    if pk_mode == KAFKA and pk_fields and len(pk_fields) != 3:
        problems[PK_FIELDS] = ["pk.mode kafka needs exactly three pk.fields (topic, partition, offset) or none"]
    if "${topic}" not in str(config.get(TABLE_FORMAT) or "${topic}"):
        try:
            split_name(str(config.get(TABLE_FORMAT)))
        except ConfigError as e:
            problems[TABLE_FORMAT] = [str(e)]
    return problems


@dataclass(frozen=True)
class JdbcSinkSettings:
    """A JDBC sink's parsed settings."""

    connection: ConnectionSettings
    insert_mode: str
    pk_mode: str
    pk_fields: tuple[str, ...]
    fields: tuple[str, ...]
    auto_create: bool
    auto_evolve: bool
    delete_enabled: bool
    table_format: str
    batch_size: int

    @classmethod
    def parse(cls, config: Mapping[str, Any]) -> JdbcSinkSettings:
        parsed = parse_checked(CONFIG_DEF, config, config_problems, "JDBC sink")
        return cls(connection_settings(parsed), parsed[INSERT_MODE], parsed[PK_MODE],
                   tuple(f.strip() for f in parsed[PK_FIELDS] if f.strip()),
                   tuple(f.strip() for f in parsed[FIELDS] if f.strip()), parsed[AUTO_CREATE],
                   parsed[AUTO_EVOLVE], parsed[DELETE], parsed[TABLE_FORMAT], parsed[BATCH_SIZE])

    def table_of(self, topic: str) -> tuple[str, ...]:
        """The table records of ``topic`` go to (``table`` or ``(schema, table)``)."""
        return split_name(self.table_format.replace("${topic}", topic))


class JdbcSinkConnector(ConfiguredConnector, CopiesConfigToTasks, SinkConnector):
    """Hands ``tasks.max`` copies of its config to its tasks."""

    plugin_version = __version__
    definition = CONFIG_DEF
    config_problems = staticmethod(config_problems)

    def check_config(self, config: dict[str, str]) -> None:
        JdbcSinkSettings.parse(config)

    def exactly_once_support(self, config: Mapping[str, str]) -> ExactlyOnceSupport:
        """Always: each batch commits with its Kafka positions, and replayed records below them are skipped."""
        return ExactlyOnceSupport.SUPPORTED

    def task_class(self) -> type[JdbcSinkTask]:
        return JdbcSinkTask

    def alter_offsets(self, config: Mapping[str, str], offsets: list[tuple[dict[str, Any], Any]] | None) -> bool:
        """The positions table follows an offsets alter or reset, so Kafka's re-delivered records are written."""
        settings = JdbcSinkSettings.parse(config)
        conn = connect(settings.connection)
        try:
            positions = Positions(conn, str(config.get("name") or ""))
            positions.load()
            positions.replace(None if offsets is None else
                              {(str(p["kafka_topic"]), int(p["kafka_partition"])):
                               None if o is None else int(o["kafka_offset"]) for p, o in offsets})
            conn.commit()
        finally:
            conn.close()
        return True


def _struct(value: Any) -> dict[str, Any] | None:
    if type(value) is dict:
        return value
    if hasattr(value, "asDict"):
        value = value.asDict(recursive=True)
    return value if isinstance(value, dict) else None


class JdbcSinkTask(Versioned, SinkTask):
    """Writes one micro-batch per transaction: ``begin_batch`` opens it, ``put`` writes, ``flush`` commits."""

    skips_by_position = True  # fed from Kafka, it skips what the positions table holds, whatever the batch id

    plugin_version = __version__

    def __init__(self) -> None:
        self.settings: JdbcSinkSettings | None = None
        self.connector = "jdbc-sink"
        self._conn: Any = None
        self._positions: Positions | None = None
        self._next: dict[tuple[str, int], int] = {}
        self._ends: dict[tuple[str, int], int] = {}
        self._tables: dict[tuple[str, ...], TableWriter] = {}
        self._skipped = 0
        self._key_names: list[str] = []
        self._pending: list[SinkRecord] = []
        self._topic_tables: dict[str, tuple[str, ...]] = {}
        self._task_id = 0
        self._kafka_fed = True

    def start(self, config: dict[str, str]) -> None:
        self.settings = JdbcSinkSettings.parse(config)
        context = getattr(self, "context", None)
        self.connector = context.connector if context is not None else str(config.get("name") or self.connector)
        self._task_id = context.task_id if context is not None else int(config.get("task.id") or 0)
        # The sink of a source connector (sink.* keys) gets no Kafka positions: its batches are counted instead.
        self._kafka_fed = bool(str(config.get("topics") or "").strip() or str(config.get("topics.regex") or "").strip())

    def begin_batch(self, batch_id: int) -> bool:
        """Open the batch's transaction and read the positions already written."""
        assert self.settings is not None
        self._conn = connect(self.settings.connection)
        self._positions = Positions(self._conn, self.connector)
        self._next = self._positions.load()
        self._ends, self._tables, self._skipped, self._pending = {}, {}, 0, []
        if self._kafka_fed:
            return True
        marker = (BATCH_MARKER, self._task_id)
        if batch_id <= self._next.get(marker, -1):
            log.info("%s: batch %d of task %d is already in the database; skipping it", self.connector, batch_id,
                     self._task_id)
            self._close()
            return False
        self._ends[marker] = batch_id
        return True

    def put(self, records: list[SinkRecord]) -> None:
        """Write the records not yet in the database, in chunks of ``batch.size``."""
        if self._conn is None and not self.begin_batch(-1):  # a runtime without begin_batch: one transaction
            return
        assert self.settings is not None
        if not self._kafka_fed:
            self._pending += records
            records = []
        fresh = []
        for r in records:
            tp = (r.topic, r.kafka_partition)
            if r.kafka_offset < self._next.get(tp, 0):
                self._skipped += 1
                continue
            self._ends[tp] = max(self._ends.get(tp, 0), r.kafka_offset + 1)
            fresh.append(r)
        self._pending += fresh
        size = self.settings.batch_size
        while len(self._pending) >= size:
            chunk, self._pending = self._pending[:size], self._pending[size:]
            self._write(chunk)

    def _table_of(self, topic: str) -> tuple[str, ...]:
        parts = self._topic_tables.get(topic)
        if parts is None:
            assert self.settings is not None
            parts = self._topic_tables[topic] = self.settings.table_of(topic)
        return parts

    def _write(self, records: list[SinkRecord]) -> None:
        by_table: dict[tuple[str, ...], list[SinkRecord]] = {}
        for r in records:
            by_table.setdefault(self._table_of(r.topic), []).append(r)
        for parts, group in by_table.items():
            writer = self._tables.get(parts)
            if writer is None:
                s = self.settings
                assert s is not None
                writer = TableWriter(self._conn, Table(parts), [], s.auto_create, s.auto_evolve)
                self._tables[parts] = writer
            self._write_table(writer, group)

    def _write_table(self, writer: TableWriter, records: list[SinkRecord]) -> None:
        s = self.settings
        assert s is not None
        ops = [self._op(r) for r in records]
        if not writer.pk and ops:
            writer.pk = self._pk_names(ops)
        if s.insert_mode == INSERT:
            run: list[dict[str, Any]] = []
            deleting = False
            for is_delete, row in ops:
                if run and is_delete != deleting:
                    (writer.delete if deleting else writer.insert)(run)
                    run = []
                deleting = is_delete
                run.append(row)
            if run:
                (writer.delete if deleting else writer.insert)(run)
            return
        last: dict[Any, tuple[bool, dict[str, Any]]] = {}
        if len(writer.pk) == 1:
            pk = writer.pk[0]
            for op in ops:
                last[op[1].get(pk)] = op
        else:
            for op in ops:
                last[tuple(op[1].get(n) for n in writer.pk)] = op
        writes = [row for d, row in last.values() if not d]
        (writer.upsert if s.insert_mode == UPSERT else writer.update)(writes)
        writer.delete([{n: row[n] for n in writer.pk} for d, row in last.values() if d])

    def _pk_names(self, ops: list[tuple[bool, dict[str, Any]]]) -> list[str]:
        s = self.settings
        assert s is not None
        if s.pk_mode == NONE:
            return []
        if s.pk_mode == KAFKA:
            return list(s.pk_fields or KAFKA_PK)
        if s.pk_fields:
            return list(s.pk_fields)
        return list(self._key_names if s.pk_mode == RECORD_KEY else
                    dict.fromkeys(k for d, row in ops if not d for k in row))

    def _op(self, r: SinkRecord) -> tuple[bool, dict[str, Any]]:
        """``(is_delete, row)`` of a record: its columns by pk.mode and fields.whitelist."""
        s = self.settings
        assert s is not None
        value = _struct(r.value)
        if r.value is None and s.delete_enabled:
            return True, self._key_row(r)
        if value is None:
            raise ConnectorError(f"JDBC sink needs struct values (JSON objects); the record at topic={r.topic} "
                                 f"partition={r.kafka_partition} offset={r.kafka_offset} has "
                                 f"{'a null' if r.value is None else type(r.value).__name__} value")
        row = {k: v for k, v in value.items() if k in s.fields} if s.fields else dict(value)
        if s.pk_mode == KAFKA:
            names = s.pk_fields or KAFKA_PK
            row.update(zip(names, (r.topic, r.kafka_partition, r.kafka_offset)))
        elif s.pk_mode == RECORD_KEY:
            row.update(self._key_row(r))
        elif s.pk_mode == RECORD_VALUE and s.pk_fields:
            missing = [f for f in s.pk_fields if f not in value]
            if missing:
                raise ConnectorError(f"Record at topic={r.topic} partition={r.kafka_partition} offset="
                                     f"{r.kafka_offset} has no value field(s) {', '.join(missing)} of pk.fields")
            row.update({f: value[f] for f in s.pk_fields})
        return False, row

    def _key_row(self, r: SinkRecord) -> dict[str, Any]:
        s = self.settings
        assert s is not None
        key = _struct(r.key)
        if key is not None:
            row = {k: v for k, v in key.items() if k in s.pk_fields} if s.pk_fields else dict(key)
        elif r.key is not None and len(s.pk_fields) == 1:
            row = {s.pk_fields[0]: r.key}
        else:
            raise ConnectorError(f"pk.mode record_key needs a struct key, or a primitive key with one pk.fields "
                                 f"name; the record at topic={r.topic} partition={r.kafka_partition} offset="
                                 f"{r.kafka_offset} has {'no' if r.key is None else 'a primitive'} key")
        if len(row) > len(self._key_names):
            self._key_names = list(row)
        return row

    def flush(self, batch_id: int) -> None:
        """Save the batch's positions and commit the transaction."""
        if self._conn is None or self._positions is None:
            return
        if self._pending:
            chunk, self._pending = self._pending, []
            self._write(chunk)
        self._positions.save(self._ends)
        self._conn.commit()
        if self._skipped:
            log.info("%s: skipped %d record(s) already written (positions in the table)", self.connector,
                     self._skipped)
        self._close()

    def _close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()  # rolls back whatever was not committed
            finally:
                self._conn, self._positions = None, None

    def stop(self) -> None:
        self._close()
