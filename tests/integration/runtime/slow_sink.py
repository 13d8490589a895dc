"""A sink connector whose ``put`` blocks until a release file exists (imported by executors in tests).

``put`` first creates ``entered.file``, so a test knows the task is inside it, then waits for
``release.file`` (at most ``max.wait.s``), then appends the values it got to ``out.file``.
"""

from __future__ import annotations

import time
from pathlib import Path

from sparkcat.api import ConfigDef, SinkConnector, SinkTask, Type


class SlowSinkConnector(SinkConnector):
    """One task that holds its batch in ``put`` until the test releases it."""

    def config_def(self) -> ConfigDef:
        return (ConfigDef().define("out.file", Type.STRING, documentation="where the task writes its lines")
                .define("entered.file", Type.STRING, documentation="created when put starts")
                .define("release.file", Type.STRING, documentation="put returns once this exists")
                .define("max.wait.s", Type.INT, 300, documentation="put returns after this long regardless"))

    def start(self, config):
        self.config = config

    def task_class(self):
        return SlowSinkTask

    def task_configs(self, max_tasks):
        return [dict(self.config) for _ in range(max_tasks)]


class SlowSinkTask(SinkTask):
    wants_raw_bytes = True

    def start(self, config):
        self.config = config
        self.lines: list[str] = []

    def put(self, records):
        if not records:
            return
        Path(self.config["entered.file"]).touch()
        release, deadline = Path(self.config["release.file"]), time.monotonic() + int(self.config.get("max.wait.s", 300))
        while not release.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        self.lines += [r.value.decode() for r in records if r.value is not None]

    def flush(self, batch_id):
        if self.lines:
            with open(self.config["out.file"], "a") as f:
                f.write("".join(line + "\n" for line in self.lines))
            self.lines = []
