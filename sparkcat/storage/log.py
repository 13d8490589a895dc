"""The keyed, append-only log every store is built on (a Kafka topic, a local file, or memory)."""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

from sparkcat.errors import LogRewound

# Where a reader of a log is: the next offset (one partition), {partition: next offset} (several), None at the start.
Cursor = Any


@dataclass(frozen=True)
class LogRecord:
    """One record of a keyed log; ``value`` None is a tombstone."""

    offset: int
    key: str
    value: bytes | None


class KeyedLog(ABC):
    """An append-only log of (key, value) records, always readable from its beginning.

    Offsets are dense per log (0, 1, 2, ...) for the local and memory backends and
    are the Kafka offsets (possibly with gaps after compaction) for the Kafka one.
    Implementations are used on the driver only and are not picklable.
    """

    @abstractmethod
    def append(self, records: list[tuple[str, bytes | None]]) -> None:
        """Write records in order; durable (acknowledged) when this returns.

        Raises ``StorageError`` when the write fails, ``FencedError`` when a newer
        writer fenced this one.
        """

    @abstractmethod
    def read(self, start: int = 0) -> list[LogRecord]:
        """Every record from offset ``start`` up to the end of the log as of now."""

    def read_since(self, cursor: Cursor) -> tuple[list[LogRecord], Cursor]:
        """Records after ``cursor`` (None: from the start) and the cursor after them; a multi-partition log overrides it."""
        start = cursor or 0
        records = self.read(start)
        return records, (records[-1].offset + 1 if records else start)

    @abstractmethod
    def end_offset(self) -> int:
        """The offset the next appended record will get (Kafka's high watermark)."""

    def wait_stable(self, timeout_s: float = 150.0) -> None:
        """Wait until every transaction open in the log now has ended; logs without transactions return at once."""

    def close(self) -> None:
        """Release clients, files and locks."""


class MemoryLog(KeyedLog):
    """A log in memory, for unit tests and throw-away runs."""

    def __init__(self) -> None:
        self._records: list[LogRecord] = []
        self._next = 0

    def append(self, records: list[tuple[str, bytes | None]]) -> None:
        for key, value in records:
            self._records.append(LogRecord(self._next, key, value))
            self._next += 1

    def read(self, start: int = 0) -> list[LogRecord]:
        if start > self._next:
            raise LogRewound(f"memory log ends at offset {self._next}, before offset {start} already read")
        return [r for r in self._records if r.offset >= start]

    def recreate(self) -> None:
        """Empty the log and restart its offsets at 0, as a Kafka topic deleted and created again (tests use this)."""
        self._records, self._next = [], 0

    def end_offset(self) -> int:
        return self._next

    def compact(self) -> None:
        """Keep only the newest record per key, as Kafka's log cleaner would (tests use this)."""
        newest = {r.key: r.offset for r in self._records}
        self._records = [r for r in self._records if newest[r.key] == r.offset]


class LogView:
    """A store's in-memory view of its keyed log: ``refresh`` applies what anyone wrote since.

    Subclasses say how one record changes the view (``_apply``); they hold ``_lock``
    while they read or change it.
    """

    def __init__(self, backend: KeyedLog):
        self.backend = backend
        self._lock = threading.RLock()  # query threads and the herder write concurrently
        self._cursor: Cursor = None

    def refresh(self) -> None:
        with self._lock:
            self._refresh()

    def _refresh(self) -> None:
        """Apply records written since the last refresh, by anyone."""
        records, cursor = self.backend.read_since(self._cursor)
        for record in records:
            self._apply(record.key, record.value)
        self._cursor = cursor

    def _apply(self, key: str, value: bytes | None) -> None:
        raise NotImplementedError

    def close(self) -> None:
        self.backend.close()
