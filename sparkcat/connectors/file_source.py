"""File source: each line appended to a text file becomes a record, like Kafka Connect's FileStreamSource.

Name: ``file-source`` (also ``org.apache.kafka.connect.file.FileStreamSourceConnector``,
``FileStreamSourceConnector``, ``FileStreamSource``), so Connect configs paste in unchanged.

Options
-------
- ``file`` (STRING, required): the file to read, as a path the driver and every
  executor can open (a local path for local mode, a shared mount otherwise).
  Connect reads standard input when it is unset; Spark executors have no useful
  standard input, so it is required here.
- ``topic`` (STRING, required): the one topic the records go to. A comma-separated
  list is rejected with Connect's message.
- ``batch.size`` (INT, default 2000): Connect's cap on records per ``poll()``.
  Accepted and validated so Connect configs work; micro-batches are bounded by the
  runtime's ``batch.max.records`` instead, so it has no other effect.

There is exactly one task whatever ``tasks.max`` says, as in Connect: one file is
one stream.

Offsets
-------
Source partition ``{"filename": <file as configured>}`` and source offset
``{"position": <byte offset just after the record's line>}``, the same keys and
values Connect's FileStreamSourceTask stores, so Connect's stored offsets resume
here and vice versa. (For ASCII files the two agree byte for byte; with multi-byte
UTF-8 text Connect counts characters but skips bytes when it resumes, while
sparkcat counts bytes throughout.)

Lines end at ``\\n``, ``\\r\\n`` or a lone ``\\r``, as in Connect; the terminator is
not part of the value. Only complete lines are read: a trailing line without its
terminator (or ending in a ``\\r`` whose next byte is not written yet) waits for
the next micro-batch. The file is expected to grow by appends only; lines are
decoded as UTF-8 (bad bytes become U+FFFD). Record values are strings (schema
``STRING``); keys are none.

Example
-------
::

    {"name": "local-file-source", "config": {"connector.class": "FileStreamSource",
        "tasks.max": "1", "file": "/data/test.txt", "topic": "connect-test"}}
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterator
from typing import Any

from sparkcat import __version__
from sparkcat.api import partition_key
from sparkcat.api.config import ConfigDef, Custom, Importance, NonEmptyString, Range, Type
from sparkcat.api.configured import ConfiguredConnector, Versioned
from sparkcat.api.connector import CopiesConfigToTasks, ExactlyOnceSupport, SourceConnector, SourceTask
from sparkcat.api.records import SourceRecord

__all__ = ["FileStreamSourceConnector", "FileStreamSourceTask", "CONFIG_DEF", "FILENAME_FIELD", "POSITION_FIELD"]

log = logging.getLogger(__name__)

FILE_CONFIG = "file"
TOPIC_CONFIG = "topic"
TASK_BATCH_SIZE_CONFIG = "batch.size"
DEFAULT_TASK_BATCH_SIZE = 2000

FILENAME_FIELD = "filename"
POSITION_FIELD = "position"

SINGLE_TOPIC_MESSAGE = "'topic' in FileStreamSourceConnector configuration requires definition of a single topic"

_READ_CHUNK = 1 << 20  # forward reads in poll/advance
_TAIL_BLOCK = 1 << 16  # backward reads when looking for the last complete line
_TERMINATOR = re.compile(rb"\r\n|\r|\n")


def _check_topic(name: str, value: str | None) -> str | None:
    if not value:
        return "String must be non-empty"
    if "," in value:
        return SINGLE_TOPIC_MESSAGE
    return None


CONFIG_DEF: ConfigDef = (
    ConfigDef()
    .define(FILE_CONFIG, Type.STRING, validator=NonEmptyString(), importance=Importance.HIGH,
            documentation="Source filename, readable at the same path on the driver and every executor. Required:"
                          " unlike Connect, standard input is not supported (executors have none worth reading).")
    .define(TOPIC_CONFIG, Type.STRING, validator=Custom(_check_topic, "a single non-empty topic name"),
            importance=Importance.HIGH, documentation="The topic to publish data to")
    .define(TASK_BATCH_SIZE_CONFIG, Type.INT, DEFAULT_TASK_BATCH_SIZE, Range.at_least(1), Importance.LOW,
            "The maximum number of records the Source task can read from file one time. Accepted for Connect"
            " compatibility; micro-batches are bounded by batch.max.records.")
    .freeze()
)
"""The connector's keys (Connect's names); the task accepts the same config."""


def _position(offset: Any) -> int:
    """The byte position in an offset dict (None, before the first record, is 0)."""
    if offset is None:
        return 0
    if isinstance(offset, dict):
        value = offset.get(POSITION_FIELD)
        return 0 if value is None else int(value)
    return int(offset)


def last_line_end(path: str, floor: int = 0) -> int:
    """The byte offset just after the last complete line of ``path`` (never below ``floor``).

    Reads backwards from the end, so it costs little however much is unread.
    Raises ``FileNotFoundError`` when the file does not exist.
    """
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        hi = size
        while hi > floor:
            lo = max(floor, hi - _TAIL_BLOCK)
            f.seek(lo)
            block = f.read(hi - lo)
            best = block.rfind(b"\n")
            # A lone \r ends a line only once the next byte shows it is not the start of \r\n.
            cr = block.rfind(b"\r", 0, len(block) - 1 if hi == size else len(block))
            best = max(best, cr)
            if best >= 0:
                return lo + best + 1
            hi = lo
    return floor


def scan_lines(path: str, start: int, end: int, limit: int | None = None) -> Iterator[tuple[bytes, int]]:
    """Yield ``(line without terminator, byte offset after it)`` for the lines in bytes ``[start, end)``.

    Splits like Connect (``\\n``, ``\\r\\n``, lone ``\\r``). A ``\\r`` that is the last
    byte of the range counts as a terminator, since range ends come from
    ``last_line_end``. Bytes after the last terminator (a range that ends mid-line)
    come out as a final line ending at ``end``, so offsets stay consistent.
    """
    if end <= start or (limit is not None and limit <= 0):
        return
    count = 0
    with open(path, "rb") as f:
        f.seek(start)
        remaining = end - start
        buf = b""
        pos = start  # file offset of buf[0]
        while True:
            if remaining > 0:
                chunk = f.read(min(_READ_CHUNK, remaining))
                if not chunk:
                    log.warning("%s is shorter than offset %d (truncated or replaced?); reading what is left",
                                path, end)
                    remaining = 0
                else:
                    remaining -= len(chunk)
                    buf += chunk
            final = remaining == 0
            i = 0
            while True:
                m = _TERMINATOR.search(buf, i)
                if m is None or (not final and m.group() == b"\r" and m.end() == len(buf)):
                    break
                yield buf[i:m.start()], pos + m.end()
                i = m.end()
                count += 1
                if limit is not None and count >= limit:
                    return
            buf, pos = buf[i:], pos + i
            if final:
                if buf:
                    log.warning("Range of %s ends mid-line at offset %d; emitting the partial line", path, pos)
                    yield buf, pos + len(buf)
                return


class FileStreamSourceConnector(ConfiguredConnector, CopiesConfigToTasks, SourceConnector):
    """Validates the config and hands it to its one task, as Connect's FileStreamSourceConnector does."""

    path_keys = (FILE_CONFIG,)  # checked against the worker's file.allowed.dirs by the runtime
    task_id_key = None
    plugin_version = __version__
    definition = CONFIG_DEF

    def task_class(self) -> type[FileStreamSourceTask]:
        return FileStreamSourceTask

    def exactly_once_support(self, config: Any) -> ExactlyOnceSupport:
        """Connect's answer: supported when reading a real file (that is only appended to), not without one."""
        return ExactlyOnceSupport.SUPPORTED if str(config.get(FILE_CONFIG) or "").strip() \
            else ExactlyOnceSupport.UNSUPPORTED

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        """Exactly one task: only one reader of a stream makes sense."""
        return super().task_configs(1)


class FileStreamSourceTask(Versioned, SourceTask):
    """Reads complete lines of one file by byte range; a range always yields the same lines."""

    plugin_version = __version__

    def __init__(self) -> None:
        self._filename = ""
        self._key = ""
        self._topic = ""
        self._batch_size = DEFAULT_TASK_BATCH_SIZE
        self._warned: str | None = None

    def start(self, config: dict[str, str]) -> None:
        parsed = CONFIG_DEF.parse(config)
        self._filename = parsed[FILE_CONFIG]
        self._key = partition_key({FILENAME_FIELD: self._filename})  # asked at every trigger
        self._topic = parsed[TOPIC_CONFIG]
        self._batch_size = parsed[TASK_BATCH_SIZE_CONFIG]
        self._warned = None

    def partitions(self) -> list[dict[str, Any]]:
        return [{FILENAME_FIELD: self._filename}]

    def _warn_once(self, kind: str, message: str, *args: Any) -> None:
        if self._warned != kind:
            log.warning(message, *args)
            self._warned = kind

    def latest_offsets(self, current: dict[str, Any]) -> dict[str, Any]:
        """The end of the last complete line now; a missing or shrunken file keeps the current offset."""
        key = self._key
        offset = current.get(key)
        position = _position(offset)
        try:
            size = os.path.getsize(self._filename)
            if size < position:
                self._warn_once("shrunk", "%s is shorter (%d bytes) than the committed offset %d; waiting for it"
                                " to grow (a truncated file is not re-read)", self._filename, size, position)
                return {key: offset}
            end = position if size == position else last_line_end(self._filename, position)  # idle: no open
        except FileNotFoundError:
            self._warn_once("missing", "Couldn't find file %s for FileStreamSourceTask, waiting for it to be"
                            " created", self._filename)
            return {key: offset}
        self._warned = None
        return {key: {POSITION_FIELD: end}}

    def advance(self, partition: dict[str, Any], start: Any, end: Any, max_records: int) -> Any:
        """The offset after at most ``max_records`` lines from ``start`` (``end`` if fewer)."""
        start_pos, end_pos = _position(start), _position(end)
        if max_records <= 0 or end_pos <= start_pos:
            return {POSITION_FIELD: start_pos}
        path = str(partition.get(FILENAME_FIELD, self._filename))
        last, count = start_pos, 0
        try:
            for _, last in scan_lines(path, start_pos, end_pos, limit=max_records):
                count += 1
        except FileNotFoundError:
            log.warning("Couldn't find file %s; admitting nothing this micro-batch", path)
            return {POSITION_FIELD: start_pos}
        return {POSITION_FIELD: last if count >= max_records else end_pos}

    def poll(self, partition: dict[str, Any], start: Any, end: Any) -> Iterator[SourceRecord]:
        """One record per line in bytes ``[start, end)``; its offset is the position after the line."""
        path = str(partition.get(FILENAME_FIELD, self._filename))
        source_partition = {FILENAME_FIELD: path}
        for line, after in scan_lines(path, _position(start), _position(end)):
            yield SourceRecord(
                source_partition=source_partition,
                source_offset={POSITION_FIELD: after},
                topic=self._topic,
                key=None,
                value=line.decode("utf-8", errors="replace"),
            )

    def value_schema(self) -> str:
        return "STRING"
