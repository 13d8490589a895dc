"""A sink connector whose task ``fail.task`` fails: always, or once (imported by executors in tests).

Each task appends the values it gets to ``out.dir/task-N.txt``, one line per record (raw bytes as
text), so a test sees which task got which records.
"""

from __future__ import annotations

import os
from pathlib import Path

from sparkcat.api import ConfigDef, SinkConnector, SinkTask, Type


class FlakySinkConnector(SinkConnector):
    """``tasks.max`` tasks; task ``fail.task`` raises in ``put`` (with ``fail.once.file``: only the first time)."""

    def config_def(self) -> ConfigDef:
        return (ConfigDef().define("out.dir", Type.STRING, documentation="where each task writes its lines")
                .define("fail.task", Type.INT, -1, documentation="the task id that fails (-1: none)")
                .define("fail.once.file", Type.STRING, "",
                        documentation="when set, the task fails only while this file does not exist (it creates it)"))

    def start(self, config):
        self.config = config

    def task_class(self):
        return FlakySinkTask

    def task_configs(self, max_tasks):
        return [{**self.config, "task.id": str(i)} for i in range(max_tasks)]


class FlakySinkTask(SinkTask):
    wants_raw_bytes = True

    def start(self, config):
        self.id = int(config["task.id"])
        self.out = Path(config["out.dir"]) / f"task-{self.id}.txt"
        self.fails = int(config.get("fail.task", "-1")) == self.id
        self.once = config.get("fail.once.file") or ""
        self.lines: list[str] = []

    def put(self, records):
        if self.fails and records:
            if not self.once:
                raise ValueError(f"task {self.id} always fails")
            try:
                fd = os.open(self.once, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                pass  # failed once already
            else:
                os.close(fd)
                raise ValueError(f"task {self.id} fails this once")
        self.lines += [r.value.decode() for r in records if r.value is not None]

    def flush(self, batch_id):
        if self.lines:
            with self.out.open("a") as f:
                f.write("".join(line + "\n" for line in self.lines))
        self.lines = []

    def stop(self):
        pass
