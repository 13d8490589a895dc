"""Three sink connectors that write each record's value as a line under ``out.dir``, one per connector kind.

A third-party plugin in all but its location: it imports ``sparkcat.api`` and pyspark only, so what
the built-in connectors can do (Delta's merge writer, the Kafka copy) a plugin can do too.

- ``RecordLineSink``: a record sink; its task's ``put`` runs on executors (``task-N.txt`` per task).
- ``BatchLineSink``: a whole-batch writer; each batch is one ``batch-ID`` directory of text files,
  written once per batch id (a replayed id whose write completed is skipped).
- ``NativeLineSink``: a native sink; Spark's own JSON file sink writes ``{"line": ...}`` rows, no
  Python per batch.
"""

from __future__ import annotations

from pathlib import Path

from sparkcat.api import (
    BatchWriteContext, BatchWriter, ConfigDef, CopiesConfigToTasks, NativeWrite, NativeWriteContext, SinkConnector,
    SinkTask, Type,
)


def _config_def() -> ConfigDef:
    return ConfigDef().define("out.dir", Type.STRING, documentation="the directory the lines go to")


class LineTask(SinkTask):
    """Appends each record's value (text) to ``out.dir/task-N.txt``."""

    wants_raw_bytes = True

    def start(self, config: dict[str, str]) -> None:
        self.path = Path(config["out.dir"]) / f"task-{config['task.id']}.txt"
        self.pending: list[str] = []

    def put(self, records: list) -> None:
        self.pending += [bytes(r.value).decode() for r in records]

    def flush(self, batch_id: int) -> None:
        with self.path.open("a") as out:
            out.writelines(line + "\n" for line in self.pending)
        self.pending = []


class RecordLineSink(CopiesConfigToTasks, SinkConnector):
    def config_def(self) -> ConfigDef:
        return _config_def()

    def task_class(self) -> type[SinkTask]:
        return LineTask


class LineBatches(BatchWriter):
    """Each batch's values as text files under ``batch-ID``; an id already written is skipped."""

    def __init__(self, out_dir: str) -> None:
        self.out_dir = Path(out_dir)

    def write(self, batch, batch_id: int) -> None:
        target = self.out_dir / f"batch-{batch_id}"
        if (target / "_SUCCESS").exists():  # a replay of a batch whose write completed
            return
        batch.selectExpr("CAST(value AS STRING) AS line").write.mode("overwrite").text(str(target))


class BatchLineSink(RecordLineSink):
    def batch_writer(self, context: BatchWriteContext) -> BatchWriter:
        return LineBatches(context.config["out.dir"])


class NativeLineSink(RecordLineSink):
    def native_write(self, context: NativeWriteContext) -> NativeWrite:
        return NativeWrite("json", {}, lambda records: records.selectExpr("CAST(value AS STRING) AS line"),
                           path=context.config["out.dir"])
