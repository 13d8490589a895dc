"""The SQL of the JDBC source's modes, and its offsets in Connect JDBC's format.

A source is a table (``"schema"."table"``) or a ``query`` (wrapped as a subquery, so it may have
its own WHERE). Each mode orders its rows by a position and reads ranges ``(start, end]`` of it:

- ``incrementing``: the position is the incrementing column; offset ``{"incrementing": N}``;
- ``timestamp``: the timestamp column (or ``COALESCE`` of several); offset ``{"timestamp": ms,
  "timestamp_nanos": nanos of the second}``, Connect's ``TimestampIncrementingOffset``;
- ``timestamp+incrementing``: the pair, compared as a row; offset with all three keys;
- ``bulk``: no position; each poll reads the whole table; offset ``{"bulk_poll_ms": ms}`` (Connect
  stores none for bulk; sparkcat needs one to plan a batch).

Only rows older than ``CURRENT_TIMESTAMP - timestamp.delay.interval.ms`` are admitted in the
timestamp modes, so rows committed late within that delay are still read.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

__all__ = ["BULK", "INCREMENTING", "TIMESTAMP", "TIMESTAMP_INCREMENTING", "MODES", "SourceQuery", "encode_ts",
           "decode_ts", "position_of"]

BULK, INCREMENTING, TIMESTAMP, TIMESTAMP_INCREMENTING = "bulk", "incrementing", "timestamp", "timestamp+incrementing"
MODES = (BULK, INCREMENTING, TIMESTAMP, TIMESTAMP_INCREMENTING)
INC_KEY, TS_KEY, NANOS_KEY, BULK_KEY = "incrementing", "timestamp", "timestamp_nanos", "bulk_poll_ms"
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def encode_ts(value: dt.datetime) -> dict[str, int]:
    """A timestamp as Connect JDBC stores it: epoch millis and the nanos of its second.

    >>> encode_ts(dt.datetime(2024, 1, 2, 3, 4, 5, 678901, tzinfo=dt.timezone.utc))
    {'timestamp': 1704164645678, 'timestamp_nanos': 678901000}
    """
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.timezone.utc)
    micros = (value - _EPOCH) // dt.timedelta(microseconds=1)
    return {TS_KEY: micros // 1000, NANOS_KEY: (micros % 1_000_000) * 1000}


def decode_ts(offset: dict[str, Any]) -> dt.datetime:
    """The timestamp of an offset (``timestamp_nanos``, when present, gives the sub-millisecond part).

    >>> decode_ts({"timestamp": 1704164645678, "timestamp_nanos": 678901000}).isoformat()
    '2024-01-02T03:04:05.678901+00:00'
    """
    millis = int(offset[TS_KEY])
    nanos = offset.get(NANOS_KEY)
    if nanos is None:
        return _EPOCH + dt.timedelta(milliseconds=millis)
    return _EPOCH + dt.timedelta(seconds=millis // 1000, microseconds=int(nanos) // 1000)


def position_of(mode: str, offset: Any) -> tuple | None:
    """The comparable position of an offset in ``mode`` (None: before the first row)."""
    if not isinstance(offset, dict):
        return None
    if mode == INCREMENTING and offset.get(INC_KEY) is not None:
        return (int(offset[INC_KEY]),)
    if mode == TIMESTAMP and offset.get(TS_KEY) is not None:
        return (decode_ts(offset),)
    if mode == TIMESTAMP_INCREMENTING and offset.get(TS_KEY) is not None and offset.get(INC_KEY) is not None:
        return decode_ts(offset), int(offset[INC_KEY])
    return None


def offset_of(mode: str, position: tuple) -> dict[str, Any]:
    """The Connect-format offset of a position."""
    if mode == INCREMENTING:
        return {INC_KEY: int(position[0])}
    if mode == TIMESTAMP:
        return encode_ts(position[0])
    return {**encode_ts(position[0]), INC_KEY: int(position[1])}


@dataclass(frozen=True)
class SourceQuery:
    """The SQL of one source (a table or a query) in one mode."""

    relation: Any  # psycopg.sql.Composable: a quoted table or "(query) AS sparkcat_query"
    mode: str
    incrementing_column: str | None
    timestamp_columns: tuple[str, ...]
    delay_ms: int

    def _sql(self) -> Any:
        from psycopg import sql
        return sql

    def _position_cols(self) -> list[Any]:
        sql = self._sql()
        cols = []
        if self.mode in (TIMESTAMP, TIMESTAMP_INCREMENTING):
            ts = [sql.Identifier(c) for c in self.timestamp_columns]
            cols.append(ts[0] if len(ts) == 1 else sql.SQL("COALESCE({})").format(sql.SQL(", ").join(ts)))
        if self.mode in (INCREMENTING, TIMESTAMP_INCREMENTING):
            cols.append(sql.Identifier(str(self.incrementing_column)))
        return cols

    def _row(self) -> Any:
        sql = self._sql()
        cols = self._position_cols()
        return cols[0] if len(cols) == 1 else sql.SQL("({})").format(sql.SQL(", ").join(cols))

    def _bound(self, op: str, position: tuple) -> tuple[Any, list[Any]]:
        sql = self._sql()
        marks = sql.SQL(", ").join(sql.Placeholder() for _ in position)
        rhs = marks if len(position) == 1 else sql.SQL("({})").format(marks)
        return sql.SQL("{} {} {}").format(self._row(), sql.SQL(op), rhs), list(position)

    def _where(self, start: tuple | None, end: tuple | None, delayed: bool = False) -> tuple[Any, list[Any]]:
        sql = self._sql()
        conds, params = [], []
        for op, position in ((">", start), ("<=", end)):
            if position is not None:
                cond, values = self._bound(op, position)
                conds.append(cond)
                params += values
        if delayed and self.mode in (TIMESTAMP, TIMESTAMP_INCREMENTING):
            conds.append(sql.SQL("{} < CURRENT_TIMESTAMP - make_interval(secs => {})").format(
                self._position_cols()[0], sql.Placeholder()))
            params.append(self.delay_ms / 1000.0)
        if not conds:
            return sql.SQL(""), params
        return sql.SQL(" WHERE ") + sql.SQL(" AND ").join(conds), params

    def _order(self, descending: bool = False) -> Any:
        sql = self._sql()
        direction = sql.SQL(" DESC" if descending else " ASC")
        return sql.SQL(" ORDER BY ") + sql.SQL(", ").join(c + direction for c in self._position_cols())

    def latest(self) -> tuple[Any, list[Any]]:
        """SQL for the newest admissible position (one row of the position columns, or none)."""
        sql = self._sql()
        where, params = self._where(None, None, delayed=True)
        query = sql.SQL("SELECT {} FROM {}").format(sql.SQL(", ").join(self._position_cols()), self.relation)
        return query + where + self._order(descending=True) + sql.SQL(" LIMIT 1"), params

    def nth(self, start: tuple | None, end: tuple, n: int) -> tuple[Any, list[Any]]:
        """SQL for the position of the ``n``-th row after ``start`` (at most ``end``)."""
        sql = self._sql()
        where, params = self._where(start, end)
        query = sql.SQL("SELECT {} FROM {}").format(sql.SQL(", ").join(self._position_cols()), self.relation)
        return query + where + self._order() + sql.SQL(" LIMIT 1 OFFSET {}").format(sql.Literal(max(0, n - 1))), \
            params

    def rows(self, start: tuple | None, end: tuple | None) -> tuple[Any, list[Any]]:
        """SQL for every row in ``(start, end]`` in position order, position columns first (bulk: the table)."""
        sql = self._sql()
        if self.mode == BULK:
            return sql.SQL("SELECT * FROM {}").format(self.relation), []
        where, params = self._where(start, end)
        query = sql.SQL("SELECT {}, * FROM {}").format(sql.SQL(", ").join(self._position_cols()), self.relation)
        return query + where + self._order(), params

    @property
    def position_width(self) -> int:
        """How many position columns lead each row of ``rows``."""
        return 0 if self.mode == BULK else len(self._position_cols())
