"""What a query's checkpoint says about its positions: Spark's offset log (``offsets/N``) and commit log (``commits/N``).

Spark writes ``offsets/N`` before it runs micro-batch N (the end of N's range, one JSON line per source
after a version line and a metadata line) and ``commits/N`` once the batch's sink returned. It keeps the
last ``spark.sql.streaming.minBatchesToRetain`` (100) of each. sparkcat's queries have one source, so
each batch's end is one JSON text: ``{"offsets": {partition key: source offset}}`` for a source
connector's ``sparkcat-connector`` stream, ``{"topic": {"partition": next offset}}`` for Spark's Kafka
source. Read through Hadoop's FileSystem API (``hadoop_fs``), so a checkpoint on HDFS or S3 is read there.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from typing import Any

from sparkcat.spark.driver import hadoop_fs

__all__ = ["OffsetLog", "read_offset_log", "parse_offset_file"]

log = logging.getLogger(__name__)


class OffsetLog:
    """The retained batch ends of a checkpoint, read newest first and only as far as asked, and the newest
    batch Spark committed. ``read(batch)`` returns the parsed end of one batch (``parse_offset_file``)."""

    def __init__(self, batches: list[int], last_committed: int | None, read: Callable[[int], Any]):
        self.batches = sorted(batches)
        self.last_committed = last_committed
        self._read = read
        self._ends: dict[int, Any] = {}

    @classmethod
    def of(cls, ends: dict[int, Any], last_committed: int | None = None) -> OffsetLog:
        """A log whose batch ends are given (tests, and what was read already)."""
        return cls(list(ends), last_committed, ends.__getitem__)

    @property
    def empty(self) -> bool:
        """No batch was ever planned: the query would start from its source's initial (stored) positions."""
        return not self.batches

    def end(self, batch: int) -> Any:
        """The end offset of ``batch`` (read once)."""
        if batch not in self._ends:
            self._ends[batch] = self._read(batch)
        return self._ends[batch]

    def newest_first(self) -> Iterator[Any]:
        """Batch ends from the newest planned one back to the oldest retained one."""
        return (self.end(b) for b in reversed(self.batches))

    def latest(self) -> Any:
        """The end of the newest planned batch (a restart replays it when it was not committed), or None."""
        return self.end(self.batches[-1]) if self.batches else None

    def committed_end(self) -> Any:
        """The end of the newest committed batch, or None."""
        return None if self.last_committed not in self.batches else self.end(self.last_committed)


def parse_offset_file(text: str) -> Any:
    """The first source's offset in an ``offsets/N`` file, parsed; None for a source with no offset (``-``).

    >>> parse_offset_file('v1\\n{"batchWatermarkMs":0}\\n{"offsets": {"a": 5}}')
    {'offsets': {'a': 5}}
    >>> parse_offset_file('v1\\n{"batchWatermarkMs":0}\\n{"orders":{"0":12,"1":3}}')
    {'orders': {'0': 12, '1': 3}}
    """
    lines = text.splitlines()
    if len(lines) < 3 or not lines[0].startswith("v"):
        raise ValueError(f"not a Spark offset log entry: {text[:80]!r}")
    first = lines[2].strip()
    return None if first in ("", "-") else json.loads(first)


def _batch_ids(spark: Any, directory: str) -> list[int]:
    """Batch ids of the completed entries of a metadata log directory (Spark's temporary files are skipped)."""
    return sorted(int(name) for name in hadoop_fs.list_names(spark, directory) if name.isdigit())


def read_offset_log(spark: Any, checkpoint_dir: str) -> OffsetLog:
    """The checkpoint's offset log (batch ends read on demand) and its last committed batch; empty without one."""
    root = checkpoint_dir.rstrip("/")

    def read(batch: int) -> Any:
        text = hadoop_fs.read_text(spark, f"{root}/offsets/{batch}")
        return None if text is None else parse_offset_file(text)

    committed = _batch_ids(spark, f"{root}/commits")
    return OffsetLog(_batch_ids(spark, f"{root}/offsets"), committed[-1] if committed else None, read)
