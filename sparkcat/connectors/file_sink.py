"""File sink: appends each record's value to a text file as one line, like Kafka Connect's FileStreamSink.

Name: ``file-sink`` (also ``org.apache.kafka.connect.file.FileStreamSinkConnector``,
``FileStreamSinkConnector``, ``FileStreamSink``), so Connect configs paste in unchanged.

Options
-------
- ``file`` (STRING, required): the file to append to, at a path every executor can
  write (a local path for local mode, a shared mount otherwise). Connect writes to
  standard output when it is unset; an executor's standard output ends up in a
  Spark log nobody reads as data, so it is required here.
- ``topics`` / ``topics.regex``: the runtime's common sink keys.

Connect starts ``tasks.max`` identical tasks; so does this connector, adding
``task.id`` (``0``..``n-1``) and ``task.count`` to each task config. With several
tasks the lines of different tasks interleave in the file, as in Connect.

Line format
-----------
Connect writes ``value.toString()``. Here: strings as they are; ``None`` as
``null`` and booleans as ``true``/``false`` (Java's spelling); ``bytes`` decoded as
UTF-8; dicts, lists and Spark Rows as compact JSON (``{"a":1}``), since their
Python ``str`` is not a useful data format; anything else with ``str()``. Lines
end with ``\\n`` and are UTF-8.

Delivery guarantee
------------------
Each task keeps a sidecar file ``<file>.task-<task.id>.batches`` (small JSON,
replaced atomically) holding its latest micro-batch: ``{"batch": id, "state":
"started"|"committed", "start_length": L, ...}``. Before writing batch ``id`` the
task records ``started`` with the file length ``L``; ``flush`` then flushes and
fsyncs the file and records ``committed``. When the runtime replays a batch
(``begin_batch(id)`` before ``put``):

- ``committed`` for ``id`` (or a later batch): the batch is skipped entirely;
- ``started`` for ``id`` (the previous attempt died mid-batch): the file is cut back
  to ``L`` and the batch written again.

So with one task per file (``task.count`` = 1, the usual case) every batch's lines
appear exactly once, whatever the moment of a crash. With several tasks on one
file, cutting the file back could remove other tasks' lines, so it is not done: a
crash between writing lines and recording ``committed`` leaves that attempt's
lines in place and the replay writes them again (at-least-once for that window;
committed batches are still never repeated). Without ``begin_batch`` (a runtime
that does not call it) the task appends like Connect: at-least-once.

In a query shared with other sinks (``SinkTaskContext.shared_query``; docs/running.md) a
batch is never replayed with its id: a connector that stopped or crashed comes back from
its stored positions, in a batch of a new id. So there the sidecar also records, at each
``committed``, the next Kafka offset of every partition the task wrote
(``"positions": {"topic:partition": next}``), and ``put`` skips every record below it;
a ``started`` batch of any id is cut back. Lines appear exactly once with one task there
too (``skips_by_position``), and after it: a connector moved to a query of its own (a
slow task, or ``transforms`` added) keeps skipping by the positions in its sidecar.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable, Mapping
from typing import IO, Any

from sparkcat import __version__
from sparkcat.api.config import ConfigDef, Importance, NonEmptyString, Type
from sparkcat.api.configured import ConfiguredConnector, Versioned
from sparkcat.api.connector import CopiesConfigToTasks, ExactlyOnceSupport, SinkConnector, SinkTask
from sparkcat.api.records import SinkRecord, record_text
from sparkcat.errors import ConnectorError

__all__ = ["FileStreamSinkConnector", "FileStreamSinkTask", "CONFIG_DEF", "sidecar_path"]

log = logging.getLogger(__name__)

FILE_CONFIG = "file"
TASK_ID_CONFIG = "task.id"
TASK_COUNT_CONFIG = "task.count"

STARTED = "started"
COMMITTED = "committed"

CONFIG_DEF: ConfigDef = (
    ConfigDef()
    .define(FILE_CONFIG, Type.STRING, validator=NonEmptyString(), importance=Importance.HIGH,
            documentation="Destination filename, writable at the same path on every executor. Required: unlike"
                          " Connect, standard output is not supported (an executor's stdout is just a Spark log).")
    .freeze()
)
"""The connector's keys (Connect's name); ``task.id`` and ``task.count`` are added to task configs."""


def sidecar_path(file: str, task_id: str) -> str:
    """Where task ``task_id`` records its micro-batch state for ``file``."""
    return f"{file}.task-{task_id}.batches"


def _fsync_dir(path: str) -> None:
    """Make a rename in ``path``'s directory durable (best effort where directories cannot be opened)."""
    try:
        fd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class FileStreamSinkConnector(ConfiguredConnector, CopiesConfigToTasks, SinkConnector):
    """Hands ``tasks.max`` copies of its config to tasks that all append to the one file.

    Each copy has its ``task.id`` and the ``task.count``.
    """

    path_keys = (FILE_CONFIG,)  # checked against the worker's file.allowed.dirs by the runtime
    task_id_key = TASK_ID_CONFIG
    task_count_key = TASK_COUNT_CONFIG
    plugin_version = __version__
    definition = CONFIG_DEF

    def task_class(self) -> type[FileStreamSinkTask]:
        return FileStreamSinkTask

    def exactly_once_support(self, config: Mapping[str, str]) -> ExactlyOnceSupport:
        """Supported with one task (it cuts the file back to the batch's start on a replay); with several
        tasks on one file a replay can repeat the lines of a batch that died before its sidecar commit."""
        return ExactlyOnceSupport.SUPPORTED if str(config.get("tasks.max", "1")).strip() == "1" \
            else ExactlyOnceSupport.UNSUPPORTED


class FileStreamSinkTask(Versioned, SinkTask):
    """Appends lines; a sidecar of the latest micro-batch makes replays write each batch once."""

    plugin_version = __version__
    skips_by_position = True  # in a shared query: by the Kafka positions in its sidecar (module doc)

    def __init__(self) -> None:
        self._filename = ""
        self._task_id = "0"
        self._sole_writer = True
        self._out: IO[bytes] | None = None
        self._state: dict[str, Any] | None = None
        self._positions: dict[str, int] = {}  # next offset per "topic:partition" made durable (shared queries)
        self._seen: dict[str, int] = {}       # the same for this batch's records, until its commit
        self._skipping = False
        self._batch: int | None = None
        self._start_length: int | None = None

    def start(self, config: dict[str, str]) -> None:
        parsed = CONFIG_DEF.parse(config)
        self._filename = parsed[FILE_CONFIG]
        self._task_id = str(config.get(TASK_ID_CONFIG, "0")).strip() or "0"
        self._sole_writer = str(config.get(TASK_COUNT_CONFIG, "1")).strip() == "1"
        try:
            # Unlike Connect we create missing parent directories: executors start in
            # directories the user does not choose, so a relative layout is the common case.
            os.makedirs(os.path.dirname(os.path.abspath(self._filename)), exist_ok=True)
            self._out = open(self._filename, "ab")
        except OSError as e:
            raise ConnectorError(f"Couldn't find or create file '{self._filename}' for FileStreamSinkTask: {e}") from e
        self._state = self._read_state()
        self._positions = dict((self._state or {}).get("positions") or {})
        self._seen = {}
        self._skipping = False
        self._batch = None
        self._start_length = None

    @property
    def _by_position(self) -> bool:
        """In a shared query (the runtime's context says so) a replay comes with a new id: skip by position. So
        does a task whose sidecar holds positions (it ran in a shared query), in a query of its own too: that
        query's batch ids are not the shared query's, and compared with them its first batches were skipped."""
        context = getattr(self, "context", None)
        return bool(context is not None and context.shared_query) or bool(self._positions)

    # ---- sidecar

    @property
    def sidecar(self) -> str:
        """This task's sidecar file."""
        return sidecar_path(self._filename, self._task_id)

    def _read_state(self) -> dict[str, Any] | None:
        try:
            with open(self.sidecar, encoding="utf-8") as f:
                text = f.read()
        except FileNotFoundError:
            return None
        try:
            state = json.loads(text)
        except ValueError as e:
            raise ConnectorError(f"Corrupt batch sidecar {self.sidecar}: {e}") from e
        return state if isinstance(state, dict) else None

    def _write_state(self, state: dict[str, Any]) -> None:
        tmp = self.sidecar + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(state, f, separators=(",", ":"))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.sidecar)
        _fsync_dir(self.sidecar)
        self._state = state

    def _file_length(self) -> int:
        assert self._out is not None
        self._out.flush()
        return os.fstat(self._out.fileno()).st_size

    # ---- batches

    def begin_batch(self, batch_id: int) -> bool:
        """Prepare micro-batch ``batch_id``; False means it was already committed and its records are skipped."""
        if self._out is None:
            raise ConnectorError("FileStreamSinkTask is not started")
        state = self._state or {}
        last = state.get("batch")
        if not self._by_position and isinstance(last, int) and (
                batch_id < last or (batch_id == last and state.get("state") == COMMITTED)):
            log.info("Batch %d already committed to %s by task %s; skipping it", batch_id, self._filename,
                     self._task_id)
            self._skipping, self._batch = True, batch_id
            return False
        length = self._file_length()
        # A replay of a batch that died mid-way: the same id, or in a shared query any id (module doc).
        if state.get("state") == STARTED and (last == batch_id or self._by_position):
            length = self._cut_back(state, last, length)
        self._write_state({"batch": batch_id, "state": STARTED, "task": self._task_id, "start_length": length,
                           "positions": self._positions})
        self._skipping, self._batch, self._start_length = False, batch_id, length
        self._seen = {}
        return True

    def _cut_back(self, state: dict[str, Any], last: Any, length: int) -> int:
        """The file without the lines of batch ``last``, which started and never committed (sole writer only)."""
        start_length = int(state["start_length"])
        if self._sole_writer and length > start_length:
            log.warning("Batch %s did not commit: cutting %s back from %d to %d bytes", last, self._filename,
                        length, start_length)
            os.truncate(self._filename, start_length)
            return self._file_length()
        if length > start_length:
            log.warning("Batch %s of %s, shared with other tasks, did not commit: its lines stay", last,
                        self._filename)
        return length

    def put(self, records: Iterable[SinkRecord]) -> None:
        """Append each record's value as one line (nothing while skipping a committed batch)."""
        if self._skipping:
            return
        if self._out is None:
            raise ConnectorError("FileStreamSinkTask is not started")
        write = self._out.write
        by_position = self._by_position
        for record in records:
            if by_position:
                key = f"{record.topic}:{record.kafka_partition}"
                if record.kafka_offset < self._positions.get(key, -1):
                    continue  # made durable before: its batch's positions were not stored when the driver stopped
                self._seen[key] = max(self._seen.get(key, -1), record.kafka_offset + 1)
            write(record_text(record.value).encode("utf-8") + b"\n")

    def flush(self, batch_id: int) -> None:
        """Flush and fsync the file, then record ``batch_id`` as committed."""
        if self._out is None:
            raise ConnectorError("FileStreamSinkTask is not started")
        if self._skipping and self._batch == batch_id:
            self._skipping, self._batch = False, None
            return
        self._out.flush()
        os.fsync(self._out.fileno())
        start_length = self._start_length if self._batch == batch_id else None
        self._positions.update(self._seen)
        self._write_state({
            "batch": batch_id,
            "state": COMMITTED,
            "task": self._task_id,
            "start_length": start_length,
            "end_length": os.fstat(self._out.fileno()).st_size,
            "positions": self._positions,
        })
        self._skipping, self._batch, self._start_length, self._seen = False, None, None, {}

    def stop(self) -> None:
        if self._out is not None:
            try:
                self._out.close()
            finally:
                self._out = None
