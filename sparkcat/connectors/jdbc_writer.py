"""The JDBC sink's SQL: tables (auto.create, auto.evolve), batched writes, and the positions table.

Everything here runs inside the one transaction a sink task holds per micro-batch (``jdbc_sink``):
rows go in with ``COPY`` (straight into the table for inserts, into a temporary staging table for
``INSERT ... ON CONFLICT`` upserts and ``UPDATE ... FROM`` updates), deletes with one ``DELETE ...
USING``, and the consumed Kafka positions with an optimistic update of the positions table.
Identifiers are always quoted (psycopg.sql.Identifier), so names from topics or records cannot
change the statement.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from sparkcat.connectors.jdbc_types import sql_type_of_value
from sparkcat.errors import ConnectorError

__all__ = ["Table", "TableWriter", "Positions", "POSITIONS_TABLE"]

log = logging.getLogger(__name__)

POSITIONS_TABLE = "sparkcat_jdbc_positions"


def _sql() -> Any:
    from psycopg import sql
    return sql


def _ident_list(names: Iterable[str]) -> Any:
    sql = _sql()
    return sql.SQL(", ").join(sql.Identifier(n) for n in names)


_PLAIN = frozenset((int, float, str, bool, type(None)))


def _cell(value: Any) -> Any:
    """A record field as COPY takes it: JSON text for structs and lists, UTC wall time for instants."""
    if type(value) in _PLAIN:
        return value
    if hasattr(value, "asDict"):
        value = value.asDict(recursive=True)
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, separators=(",", ":"), default=str)
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return value


@dataclass
class Table:
    """A target table: its quoted name parts and the columns it has (None until looked up)."""

    parts: tuple[str, ...]
    columns: list[str] | None = None

    @property
    def ident(self) -> Any:
        return _sql().Identifier(*self.parts)

    @property
    def label(self) -> str:
        return ".".join(self.parts)


@dataclass
class TableWriter:
    """Creates, evolves and writes one table within the caller's transaction."""

    conn: Any
    table: Table
    pk: list[str]
    auto_create: bool
    auto_evolve: bool
    _stage: int = field(default=0)

    def _lookup(self) -> list[str]:
        schema = self.table.parts[0] if len(self.table.parts) == 2 else None
        rows = self.conn.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = %s AND table_schema = "
            "COALESCE(%s, current_schema()) ORDER BY ordinal_position", [self.table.parts[-1], schema]).fetchall()
        return [r[0] for r in rows]

    def prepare(self, rows: list[dict[str, Any]]) -> None:
        """Make sure the table exists with every column the rows have (auto.create / auto.evolve)."""
        if self.table.columns is None:
            self.table.columns = self._lookup()
        names = list(dict.fromkeys(k for row in rows for k in row))
        if self.table.columns and all(n in self.table.columns for n in names):
            return
        self._lock()  # another task may be creating or evolving the same table: look again once it is done
        self.table.columns = self._lookup()
        if not self.table.columns:
            self._create(names, rows)
            return
        missing = [n for n in names if n not in self.table.columns]
        if missing:
            self._evolve(missing, rows)

    def _lock(self) -> None:
        """Serialise DDL on this table among sparkcat writers (held until the batch's transaction ends)."""
        self.conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [f"sparkcat.jdbc:{self.table.label}"])

    def _type_of(self, name: str, rows: list[dict[str, Any]]) -> Any:
        sample = next((row[name] for row in rows if row.get(name) is not None), None)
        return _sql().SQL(sql_type_of_value(sample) if sample is not None else "TEXT")

    def _create(self, names: list[str], rows: list[dict[str, Any]]) -> None:
        if not self.auto_create:
            raise ConnectorError(f"Table {self.table.label} is missing and auto.create is disabled")
        sql = _sql()
        cols = [sql.SQL("{} {}{}").format(sql.Identifier(n), self._type_of(n, rows),
                                          sql.SQL(" NOT NULL" if n in self.pk else "")) for n in names]
        if self.pk:
            cols.append(sql.SQL("PRIMARY KEY ({})").format(_ident_list(self.pk)))
        self.conn.execute(sql.SQL("CREATE TABLE {} ({})").format(self.table.ident, sql.SQL(", ").join(cols)))
        self.table.columns = names
        log.info("Created table %s with columns %s", self.table.label, ", ".join(names))

    def _evolve(self, missing: list[str], rows: list[dict[str, Any]]) -> None:
        if not self.auto_evolve:
            raise ConnectorError(f"Table {self.table.label} is missing column(s) {', '.join(missing)} and "
                                 "auto.evolve is disabled")
        sql = _sql()
        adds = [sql.SQL("ADD COLUMN {} {}").format(sql.Identifier(n), self._type_of(n, rows)) for n in missing]
        self.conn.execute(sql.SQL("ALTER TABLE {} {}").format(self.table.ident, sql.SQL(", ").join(adds)))
        assert self.table.columns is not None
        self.table.columns += missing
        log.info("Added column(s) %s to table %s", ", ".join(missing), self.table.label)

    def _copy(self, target: Any, names: list[str], rows: list[dict[str, Any]]) -> None:
        sql = _sql()
        with self.conn.cursor() as cur:
            with cur.copy(sql.SQL("COPY {} ({}) FROM STDIN").format(target, _ident_list(names))) as copy:
                for row in rows:
                    copy.write_row([_cell(row.get(n)) for n in names])

    def _staged(self, names: list[str], rows: list[dict[str, Any]]) -> Any:
        """A temporary table (dropped at commit) shaped like the target, holding ``rows``."""
        sql = _sql()
        self._stage += 1
        stage = sql.Identifier(f"sparkcat_stage_{self._stage}")
        self.conn.execute(sql.SQL("CREATE TEMPORARY TABLE {} (LIKE {}) ON COMMIT DROP").format(stage,
                                                                                               self.table.ident))
        self._copy(stage, names, rows)
        return stage

    def insert(self, rows: list[dict[str, Any]]) -> None:
        """``insert.mode=insert``: every row with COPY (a duplicate key fails the batch, as in Connect)."""
        if rows:
            self.prepare(rows)
            self._copy(self.table.ident, self._names(rows), rows)

    def upsert(self, rows: list[dict[str, Any]]) -> None:
        """``insert.mode=upsert``: ``INSERT ... ON CONFLICT (pk) DO UPDATE``; rows hold distinct keys."""
        if not rows:
            return
        self.prepare(rows)
        sql = _sql()
        names = self._names(rows)
        stage = self._staged(names, rows)
        others = [n for n in names if n not in self.pk]
        action = sql.SQL("DO NOTHING") if not others else sql.SQL("DO UPDATE SET {}").format(sql.SQL(", ").join(
            sql.SQL("{} = EXCLUDED.{}").format(sql.Identifier(n), sql.Identifier(n)) for n in others))
        self.conn.execute(sql.SQL("INSERT INTO {} ({}) SELECT {} FROM {} ON CONFLICT ({}) {}").format(
            self.table.ident, _ident_list(names), _ident_list(names), stage, _ident_list(self.pk), action))

    def update(self, rows: list[dict[str, Any]]) -> None:
        """``insert.mode=update``: ``UPDATE ... FROM`` the staged rows; rows without a match change nothing."""
        if not rows:
            return
        self.prepare(rows)
        sql = _sql()
        names = self._names(rows)
        others = [n for n in names if n not in self.pk]
        if not others:
            return
        stage = self._staged(names, rows)
        sets = sql.SQL(", ").join(sql.SQL("{} = s.{}").format(sql.Identifier(n), sql.Identifier(n)) for n in others)
        self.conn.execute(sql.SQL("UPDATE {} AS t SET {} FROM {} AS s WHERE {}").format(
            self.table.ident, sets, stage, self._pk_match()))

    def delete(self, keys: list[dict[str, Any]]) -> None:
        """Tombstones (``delete.enabled``): delete the rows with these primary keys."""
        if not keys:
            return
        if self.table.columns is None:
            self.table.columns = self._lookup()
        if not self.table.columns:
            return  # nothing to delete from a table that does not exist yet
        sql = _sql()
        stage = self._staged(self.pk, keys)
        self.conn.execute(sql.SQL("DELETE FROM {} AS t USING {} AS s WHERE {}").format(
            self.table.ident, stage, self._pk_match()))

    def _pk_match(self) -> Any:
        sql = _sql()
        return sql.SQL(" AND ").join(sql.SQL("t.{} = s.{}").format(sql.Identifier(n), sql.Identifier(n))
                                     for n in self.pk)

    def _names(self, rows: list[dict[str, Any]]) -> list[str]:
        return list(dict.fromkeys(k for row in rows for k in row))


class Positions:
    """The positions table: per connector and topic-partition, the next Kafka offset the table lacks.

    Read when a batch begins; written in the batch's transaction with a compare-and-set on the
    value read, so a second writer of the same partitions (a zombie task) makes one of the two
    commits fail instead of writing a batch twice.
    """

    def __init__(self, conn: Any, connector: str, schema: str | None = None) -> None:
        sql = _sql()
        self.conn, self.connector = conn, connector
        self.ident = sql.Identifier(schema, POSITIONS_TABLE) if schema else sql.Identifier(POSITIONS_TABLE)
        self.read: dict[tuple[str, int], int] = {}

    def load(self) -> dict[tuple[str, int], int]:
        """Create the table when missing (in a transaction of its own), then read this connector's positions."""
        sql = _sql()
        self.conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [f"sparkcat.jdbc:{POSITIONS_TABLE}"])
        self.conn.execute(sql.SQL("CREATE TABLE IF NOT EXISTS {} (connector TEXT NOT NULL, topic TEXT NOT NULL, "
                                  "kafka_partition INT NOT NULL, next_offset BIGINT NOT NULL, "
                                  "PRIMARY KEY (connector, topic, kafka_partition))").format(self.ident))
        self.conn.commit()
        rows = self.conn.execute(sql.SQL("SELECT topic, kafka_partition, next_offset FROM {} WHERE connector = %s")
                                 .format(self.ident), [self.connector]).fetchall()
        self.read = {(t, p): o for t, p, o in rows}
        return dict(self.read)

    def replace(self, positions: dict[tuple[str, int], int | None] | None) -> None:
        """Set positions outright (an offsets request): None forgets one partition, or all when ``positions`` is None."""
        sql = _sql()
        if positions is None:
            self.conn.execute(sql.SQL("DELETE FROM {} WHERE connector = %s").format(self.ident), [self.connector])
            return
        for (topic, partition), offset in positions.items():
            self.conn.execute(sql.SQL("DELETE FROM {} WHERE connector = %s AND topic = %s AND kafka_partition = %s")
                              .format(self.ident), [self.connector, topic, partition])
            if offset is not None:
                self.conn.execute(sql.SQL("INSERT INTO {} VALUES (%s, %s, %s, %s)").format(self.ident),
                                  [self.connector, topic, partition, offset])

    def save(self, ends: dict[tuple[str, int], int]) -> None:
        """Record the new positions; ConnectorError when another writer moved one since ``load``."""
        sql = _sql()
        for (topic, partition), end in ends.items():
            before = self.read.get((topic, partition))
            if before is None:
                cur = self.conn.execute(sql.SQL("INSERT INTO {} VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING")
                                        .format(self.ident), [self.connector, topic, partition, end])
            else:
                cur = self.conn.execute(sql.SQL("UPDATE {} SET next_offset = %s WHERE connector = %s AND topic = %s "
                                                "AND kafka_partition = %s AND next_offset = %s").format(self.ident),
                                        [end, self.connector, topic, partition, before])
            if cur.rowcount != 1:
                raise ConnectorError(f"The position of {topic}-{partition} in {POSITIONS_TABLE} moved while this "
                                     "batch was written (another task wrote the same partition); rolled back")
