"""A keyed log in one append-only JSON-lines file, with one writer guarded by a lock file.

Each line is ``{"o": offset, "k": key, "v": value text or null}``, fsync'ed before
``append`` returns, so a killed driver loses nothing it acknowledged. A torn last
line (a crash mid-write) is ignored on read and cut off when the next writer opens.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
from pathlib import Path

from sparkcat.errors import StorageError
from sparkcat.storage.log import KeyedLog, LogRecord

log = logging.getLogger(__name__)


class LocalLog(KeyedLog):
    """A keyed log stored at ``directory/name.log``; values must be UTF-8 text (JSON)."""

    def __init__(self, directory: str | os.PathLike, name: str):
        self.path = Path(directory) / f"{name}.log"
        self._lock_path = Path(directory) / f"{name}.lock"
        self._lock_fd: int | None = None
        self._pos = 0          # byte position just after the last complete line read
        self._pos_offset = 0   # offset of the next record at _pos
        self._next_offset: int | None = None

    def _acquire(self) -> None:
        """Take the writer lock once; a second writer (another driver) fails clearly."""
        if self._lock_fd is not None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise StorageError(f"{self.path} is locked by another sparkcat driver "
                               f"(lock file {self._lock_path}); only one driver may write a state directory")
        self._lock_fd = fd
        self._truncate_torn_tail()

    def _truncate_torn_tail(self) -> None:
        if not self.path.exists():
            return
        data = self.path.read_bytes()
        end = data.rfind(b"\n") + 1
        if end != len(data):
            log.warning("Cutting a torn last record (%d bytes) from %s", len(data) - end, self.path)
            with open(self.path, "r+b") as f:
                f.truncate(end)

    def append(self, records: list[tuple[str, bytes | None]]) -> None:
        self._acquire()
        next_offset = self.end_offset()
        lines = []
        for key, value in records:
            text = None if value is None else _decode(value, key)
            lines.append(json.dumps({"o": next_offset, "k": key, "v": text}, ensure_ascii=False) + "\n")
            next_offset += 1
        try:
            with open(self.path, "a", encoding="utf-8") as f:
                f.write("".join(lines))
                f.flush()
                os.fsync(f.fileno())
        except OSError as e:
            raise StorageError(f"cannot write {self.path}: {e}") from e
        self._next_offset = next_offset

    def read(self, start: int = 0) -> list[LogRecord]:
        if not self.path.exists():
            return []
        if start < self._pos_offset or self.path.stat().st_size < self._pos:
            # Re-reading from an earlier offset, or the file was compacted under us.
            self._pos, self._pos_offset = 0, 0
        out = []
        with open(self.path, "rb") as f:
            f.seek(self._pos)
            for line in f:
                if not line.endswith(b"\n"):
                    break  # a write in progress; read it next time
                self._pos += len(line)
                rec = self._parse(line)
                self._pos_offset = rec.offset + 1
                if rec.offset >= start:
                    out.append(rec)
        return out

    def _parse(self, line: bytes) -> LogRecord:
        try:
            d = json.loads(line)
            value = None if d["v"] is None else d["v"].encode("utf-8")
            return LogRecord(int(d["o"]), d["k"], value)
        except (ValueError, KeyError, TypeError) as e:
            raise StorageError(f"{self.path} is corrupt near byte {self._pos}: {e}") from e

    def end_offset(self) -> int:
        if self._next_offset is None or self._lock_fd is None:
            self.read(self._pos_offset)
            self._next_offset = self._pos_offset
        return max(self._next_offset, self._pos_offset)

    def compact(self) -> None:
        """Rewrite the file keeping the newest record per key (offsets kept), like Kafka's cleaner."""
        self._acquire()
        records = self.read(0)
        newest = {r.key: r.offset for r in records}
        last = records[-1].offset if records else -1
        # The last record is kept even if it is a tombstone, so offsets never go backwards.
        kept = [r for r in records if newest[r.key] == r.offset and (r.value is not None or r.offset == last)]
        tmp = self.path.with_suffix(".compacting")
        with open(tmp, "w", encoding="utf-8") as f:
            for r in kept:
                text = None if r.value is None else r.value.decode("utf-8")
                f.write(json.dumps({"o": r.offset, "k": r.key, "v": text},
                                   ensure_ascii=False) + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        self._pos, self._pos_offset = 0, 0

    def close(self) -> None:
        if self._lock_fd is not None:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)
            self._lock_fd = None


def _decode(value: bytes, key: str) -> str:
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError as e:
        raise StorageError(f"local log values must be UTF-8 text; record {key!r} is not: {e}") from e

