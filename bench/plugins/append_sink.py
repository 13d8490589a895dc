"""A sink that appends each record's value as a line, at least once: Kafka Connect's FileStreamSink's guarantee.

sparkcat's own ``file-sink`` is exactly once with one task (a sidecar per task, fsynced with each batch); this
one, like Connect's, only appends and flushes. Both share a query with other sinks
(``spark/driver/shared_sinks.py``); the benchmarks run this one to price sparkcat at Connect's guarantee.
"""

from __future__ import annotations

import os

from sparkcat.api import ConfigDef, CopiesConfigToTasks, SinkConnector, SinkTask, Type
from sparkcat.api.records import record_text


class AppendLineTask(SinkTask):
    """Appends each value to ``file`` and flushes it with each batch."""

    def start(self, config: dict[str, str]) -> None:
        os.makedirs(os.path.dirname(os.path.abspath(config["file"])), exist_ok=True)  # as file-sink does
        self.out = open(config["file"], "ab")
        self.pending: list[bytes] = []

    def put(self, records: list) -> None:
        self.pending += [record_text(r.value).encode() + b"\n" for r in records]

    def flush(self, batch_id: int) -> None:
        self.out.write(b"".join(self.pending))
        self.out.flush()
        self.pending = []

    def stop(self) -> None:
        self.out.close()


class AppendLineSink(CopiesConfigToTasks, SinkConnector):
    def config_def(self) -> ConfigDef:
        return ConfigDef().define("file", Type.STRING, documentation="the file each value is appended to")

    def task_class(self) -> type[SinkTask]:
        return AppendLineTask
