"""JDBC source: PostgreSQL tables (or a query) into Kafka, with Connect JDBC's keys, modes and offsets.

Name: ``jdbc-source`` (also ``io.confluent.connect.jdbc.JdbcSourceConnector``, ``JdbcSourceConnector``).

Options (Connect JDBC's)
------------------------
- ``connection.url`` (``jdbc:postgresql://host[:port]/db`` only, see ``jdbc_common``),
  ``connection.user``, ``connection.password`` (PASSWORD: hidden in responses and logs).
- ``mode``: ``bulk``, ``incrementing``, ``timestamp`` or ``timestamp+incrementing`` (required).
- ``incrementing.column.name``: a strictly increasing column (required by the incrementing modes;
  Connect would guess an auto-increment column, sparkcat asks).
- ``timestamp.column.name`` (LIST): one column, or several read as ``COALESCE(a, b, ...)``.
- ``table.whitelist`` / ``table.include.list``, ``table.blacklist`` / ``table.exclude.list``
  (LIST of ``table`` or ``schema.table``); without an include list every table of every
  non-system schema. Or ``query``: one SQL query instead of tables (wrapped as a subquery).
- ``topic.prefix`` (required): a table's records go to ``<prefix><table>``; a query's to ``<prefix>``.
- ``poll.interval.ms`` (5000): how often each task looks for new rows.
- ``batch.max.rows`` (100): rows fetched per round trip from the server-side cursor (a micro-batch
  is bounded by the runtime's ``batch.max.records``).
- ``timestamp.delay.interval.ms`` (0): rows newer than this are left for a later poll, so rows
  committed late (within the delay) with an older timestamp are not skipped.

Tables are shared out over ``tasks.max`` tasks with ``group_partitions``. The list of tables is
read when the connector starts (Connect also watches for new tables; restart the connector here).
A connector's records have one value schema (one Spark struct): every table of one connector must
have the same column names and types, otherwise ``start`` refuses them; use one connector per table.

Offsets
-------
Connect JDBC's own: partition ``{"protocol": "1", "table": "db.schema.table"}`` or ``{"query":
"query"}`` (a constant, as Connect JDBC writes it), offsets as in ``jdbc_queries``, so offsets move between Connect and sparkcat. Keys are
null, as in Connect. Values are structs of the row's columns (``jdbc_types``).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator, Mapping
from typing import Any

from sparkcat import __version__
from sparkcat.api import partition_key
from sparkcat.api.config import ConfigDef, Importance, NonEmptyString, Range, Type, ValidString
from sparkcat.api.configured import ConfiguredConnector, Versioned, parse_checked
from sparkcat.api.connector import SourceConnector, SourceTask
from sparkcat.api.records import SourceRecord
from sparkcat.api.util import group_partitions
from sparkcat.connectors import jdbc_queries as Q
from sparkcat.connectors.jdbc_common import connect, connection_settings, define_connection, qualified, split_name
from sparkcat.connectors.jdbc_types import SourceColumn, source_columns, value_ddl
from sparkcat.errors import ConfigError, ConnectorError

__all__ = ["JdbcSourceConnector", "JdbcSourceTask", "CONFIG_DEF"]

log = logging.getLogger(__name__)

MODE, INC_COL, TS_COL = "mode", "incrementing.column.name", "timestamp.column.name"
INCLUDE, INCLUDE_OLD, EXCLUDE, EXCLUDE_OLD = "table.include.list", "table.whitelist", "table.exclude.list", \
    "table.blacklist"
QUERY, TOPIC_PREFIX, POLL_MS, BATCH_ROWS, DELAY_MS = "query", "topic.prefix", "poll.interval.ms", \
    "batch.max.rows", "timestamp.delay.interval.ms"
TABLES = "tables"  # task configs: a JSON list of [schema, table]
_SYSTEM_SCHEMAS = ("pg_catalog", "information_schema")

CONFIG_DEF: ConfigDef = (
    define_connection(ConfigDef())
    .define(MODE, Type.STRING, validator=ValidString.in_(*Q.MODES), importance=Importance.HIGH,
            documentation="How each poll finds new rows: bulk, incrementing, timestamp, timestamp+incrementing.")
    .define(INC_COL, Type.STRING, "", importance=Importance.MEDIUM,
            documentation="The strictly increasing column of the incrementing modes.")
    .define(TS_COL, Type.LIST, "", importance=Importance.MEDIUM,
            documentation="The timestamp column(s) of the timestamp modes; several are read as COALESCE.")
    .define(INCLUDE, Type.LIST, "", importance=Importance.MEDIUM, documentation="Tables to read (table or "
            "schema.table); empty: every table of every non-system schema.")
    .define(INCLUDE_OLD, Type.LIST, "", importance=Importance.LOW, documentation="Old name of table.include.list.")
    .define(EXCLUDE, Type.LIST, "", importance=Importance.MEDIUM, documentation="Tables not to read.")
    .define(EXCLUDE_OLD, Type.LIST, "", importance=Importance.LOW, documentation="Old name of table.exclude.list.")
    .define(QUERY, Type.STRING, "", importance=Importance.MEDIUM,
            documentation="A query to read instead of tables (wrapped as a subquery: it may have its own WHERE).")
    .define(TOPIC_PREFIX, Type.STRING, validator=NonEmptyString(), importance=Importance.HIGH,
            documentation="Records of table T go to <prefix>T; a query's records to <prefix>.")
    .define(POLL_MS, Type.INT, 5000, Range.at_least(0), Importance.HIGH,
            "How often, in milliseconds, each task polls for new rows.")
    .define(BATCH_ROWS, Type.INT, 100, Range.at_least(1), Importance.LOW,
            "Rows fetched per round trip from the server-side cursor.")
    .define(DELAY_MS, Type.LONG, 0, Range.at_least(0), Importance.HIGH,
            "Rows whose timestamp is newer than now minus this delay wait for a later poll.")
    .define(TABLES, Type.STRING, "", importance=Importance.LOW, documentation="Internal: a task's tables (JSON).")
    .freeze()
)


def config_problems(config: Mapping[str, Any]) -> dict[str, list[str]]:
    """Checks across keys: what each mode needs, tables or a query, and not both."""
    problems: dict[str, list[str]] = {}
    mode = str(config.get(MODE) or "").strip()
    if mode in (Q.INCREMENTING, Q.TIMESTAMP_INCREMENTING) and not str(config.get(INC_COL) or "").strip():
        problems[INC_COL] = [f"mode {mode} needs {INC_COL}"]
    if mode in (Q.TIMESTAMP, Q.TIMESTAMP_INCREMENTING) and not str(config.get(TS_COL) or "").strip():
        problems[TS_COL] = [f"mode {mode} needs {TS_COL}"]
    if str(config.get(QUERY) or "").strip():
        for key in (INCLUDE, INCLUDE_OLD, EXCLUDE, EXCLUDE_OLD):
            if str(config.get(key) or "").strip():
                problems[key] = [f"{key} and query are mutually exclusive; set one of them"]
    for key in (INCLUDE, INCLUDE_OLD, EXCLUDE, EXCLUDE_OLD):
        for name in [n for n in str(config.get(key) or "").split(",") if n.strip()]:
            try:
                split_name(name)
            except ConfigError as e:
                problems.setdefault(key, []).append(str(e))
    return problems


def _parse(config: Mapping[str, Any]) -> dict[str, Any]:
    return parse_checked(CONFIG_DEF, config, config_problems, "JDBC source")


def _names(parsed: Mapping[str, Any], new: str, old: str) -> set[tuple[str, ...]]:
    return {split_name(n) for n in [*parsed[new], *parsed[old]] if n.strip()}


def list_tables(conn: Any, parsed: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The ``(schema, table)`` pairs to read: the include list (or every table), minus the exclude list."""
    rows = conn.execute("SELECT table_schema, table_name FROM information_schema.tables WHERE table_type = "
                        "'BASE TABLE' AND table_schema <> ALL(%s) AND table_schema NOT LIKE 'pg\\_%%' "
                        "ORDER BY 1, 2", [list(_SYSTEM_SCHEMAS)]).fetchall()
    include, exclude = _names(parsed, INCLUDE, INCLUDE_OLD), _names(parsed, EXCLUDE, EXCLUDE_OLD)

    def listed(names: set[tuple[str, ...]], schema: str, table: str) -> bool:
        return (schema, table) in names or ((table,) in names)

    chosen = [(s, t) for s, t in rows if (not include or listed(include, s, t)) and not listed(exclude, s, t)]
    missing = [".".join(n) for n in include if not any(n in ((s, t), (t,)) for s, t in chosen)]
    if missing:
        raise ConnectorError(f"Tables not found (or excluded): {', '.join(sorted(missing))}")
    return chosen


def describe(conn: Any, relation: Any) -> list[SourceColumn]:
    """The columns of a table or query, from an empty result."""
    from psycopg import sql
    with conn.cursor() as cur:
        cur.execute(sql.SQL("SELECT * FROM {} LIMIT 0").format(relation))
        return source_columns(cur.description)


def _relation(source: Any) -> Any:
    from psycopg import sql
    if isinstance(source, str):
        return sql.SQL("({}) AS sparkcat_query").format(sql.SQL(source))  # type: ignore[arg-type]
    return qualified(tuple(source))


class JdbcSourceConnector(ConfiguredConnector, SourceConnector):
    """Lists the tables on the driver, checks they share one column layout, and shares them out."""

    plugin_version = __version__
    definition = CONFIG_DEF
    config_problems = staticmethod(config_problems)

    def __init__(self) -> None:
        self._props: dict[str, str] = {}
        self._tables: list[tuple[str, str]] = []

    def start(self, config: dict[str, str]) -> None:
        parsed = _parse(config)
        self._props = {k: v for k, v in config.items() if k != TABLES}
        if str(parsed[QUERY]).strip():
            self._tables = []
            log.info("JDBC source started with a query")
            return
        with connect(connection_settings(parsed), autocommit=True) as conn:
            self._tables = list_tables(conn, parsed)
            if not self._tables:
                raise ConnectorError("No tables to read: the database has none matching the include list")
            layouts = {t: [(c.name, c.spark_type) for c in describe(conn, qualified(t))] for t in self._tables}
        first = self._tables[0]
        odd = [".".join(t) for t in self._tables if layouts[t] != layouts[first]]
        if odd:
            raise ConnectorError(f"Tables {', '.join(odd)} have other columns than {'.'.join(first)}: a sparkcat "
                                 "connector has one value schema, use one connector per table layout")
        log.info("JDBC source started with tables %s", ", ".join(".".join(t) for t in self._tables))

    def task_class(self) -> type[JdbcSourceTask]:
        return JdbcSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        """A query: one task. Tables: ``min(max_tasks, tables)`` tasks, each with its group of tables."""
        if not self._tables:
            return [dict(self._props)]
        groups = group_partitions(self._tables, min(max_tasks, len(self._tables)))
        return [{**self._props, TABLES: json.dumps([list(t) for t in group])} for group in groups]


class JdbcSourceTask(Versioned, SourceTask):
    """Reads its tables (or the query) by ranges of positions; the driver side asks for the newest position."""

    plugin_version = __version__

    def __init__(self) -> None:
        self._parsed: dict[str, Any] = {}
        self._conn: Any = None
        self._sources: dict[str, tuple[dict[str, Any], Any, str]] = {}
        self._polled: dict[str, tuple[float, Any]] = {}

    def start(self, config: dict[str, str]) -> None:
        self._parsed = _parse(config)
        settings = connection_settings(self._parsed)
        self._sources, self._polled = {}, {}
        prefix, query = self._parsed[TOPIC_PREFIX], str(self._parsed[QUERY]).strip()
        if query:
            self._add({"query": "query"}, query, prefix)  # Connect JDBC's constant QUERY_NAME_VALUE
        for schema, table in json.loads(self._parsed[TABLES] or "[]"):
            partition = {"protocol": "1", "table": f"{settings.database}.{schema}.{table}"}
            self._add(partition, (schema, table), f"{prefix}{table}")
        self._conn = connect(settings, autocommit=True)

    def _add(self, partition: dict[str, Any], source: Any, topic: str) -> None:
        self._sources[partition_key(partition)] = (partition, source, topic)

    def _query(self, source: Any) -> Q.SourceQuery:
        ts = tuple(c.strip() for c in self._parsed[TS_COL] if c.strip())
        return Q.SourceQuery(_relation(source), self._parsed[MODE], self._parsed[INC_COL].strip() or None, ts,
                             int(self._parsed[DELAY_MS]))

    def stop(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def partitions(self) -> list[dict[str, Any]]:
        return [p for p, _, _ in self._sources.values()]

    def value_schema(self) -> str:
        _, source, _ = next(iter(self._sources.values()))
        return value_ddl(describe(self._conn, _relation(source)))

    def latest_offsets(self, current: dict[str, Any]) -> dict[str, Any]:
        """The newest admissible offset of each source, looked up at most every ``poll.interval.ms``."""
        now = time.monotonic()
        out = {}
        for key, offset in current.items():
            if key not in self._sources:
                continue
            polled = self._polled.get(key)
            if polled is not None and now - polled[0] < self._parsed[POLL_MS] / 1000.0:
                out[key] = polled[1] if Q.position_of(self._parsed[MODE], polled[1]) is not None else offset
                continue
            latest = self._latest(key, offset)
            self._polled[key] = (now, latest)
            out[key] = latest
        return out

    def _latest(self, key: str, offset: Any) -> Any:
        mode = self._parsed[MODE]
        if mode == Q.BULK:
            now_ms = int(time.time() * 1000)
            last = (offset or {}).get(Q.BULK_KEY) if isinstance(offset, dict) else None
            due = last is None or now_ms - int(last) >= self._parsed[POLL_MS]
            return {Q.BULK_KEY: now_ms} if due else offset
        query, params = self._query(self._sources[key][1]).latest()
        row = self._conn.execute(query, params).fetchone()
        current = Q.position_of(mode, offset)
        if row is None or any(v is None for v in row):
            return offset
        latest = Q.offset_of(mode, tuple(row))
        return offset if current is not None and Q.position_of(mode, latest) <= current else latest

    def advance(self, partition: dict[str, Any], start: Any, end: Any, max_records: int) -> Any:
        """The offset of the ``max_records``-th row after ``start`` (``end`` when there are fewer)."""
        mode = self._parsed[MODE]
        end_pos = Q.position_of(mode, end)
        if mode == Q.BULK or end_pos is None:
            return end
        query, params = self._query(self._sources[partition_key(partition)][1]).nth(
            Q.position_of(mode, start), end_pos, max_records)
        row = self._conn.execute(query, params).fetchone()
        return end if row is None else Q.offset_of(mode, tuple(row))

    def poll(self, partition: dict[str, Any], start: Any, end: Any) -> Iterator[SourceRecord]:
        """Every row in ``(start, end]``, in position order, each with its own offset (bulk: the table)."""
        mode = self._parsed[MODE]
        _, source, topic = self._sources[partition_key(partition)]
        sq = self._query(source)
        query, params = sq.rows(Q.position_of(mode, start), Q.position_of(mode, end))
        width = sq.position_width
        with self._conn.transaction(), self._conn.cursor(name="sparkcat_jdbc_poll") as cur:
            cur.itersize = self._parsed[BATCH_ROWS]
            cur.execute(query, params)
            columns: list[SourceColumn] | None = None
            for row in cur:
                if columns is None:
                    columns = source_columns(cur.description[width:])
                offset = end if width == 0 else Q.offset_of(mode, tuple(row[:width]))
                value = {c.name: c.value(v) for c, v in zip(columns, row[width:])}
                yield SourceRecord(source_partition=partition, source_offset=offset, topic=topic, value=value)
