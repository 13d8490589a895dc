"""A source connector whose task 1 fails after a few records (imported by executors in tests)."""

from __future__ import annotations

import os

from sparkcat.api import ConfigDef, SourceConnector, SourceRecord, SourceTask, Type, partition_key


class FailingSourceConnector(SourceConnector):
    """Two tasks counting upwards; task ``fail.task`` raises once its position passes ``fail.after``."""

    def config_def(self) -> ConfigDef:
        return (ConfigDef().define("topic", Type.STRING, documentation="output topic")
                .define("fail.task", Type.INT, 1, documentation="task id that fails (-1: every task)")
                .define("fail.after", Type.INT, 20, documentation="position after which it fails")
                .define("fail.while.file", Type.STRING, "",
                        documentation="if set, the task fails only while this file exists (a restart after "
                                      "removing it succeeds)"))

    def start(self, config):
        self.config = config

    def task_class(self):
        return FailingSourceTask

    def task_configs(self, max_tasks):
        return [{**self.config, "task.id": str(i)} for i in range(2)]


class FailingSourceTask(SourceTask):
    def start(self, config):
        self.id = int(config["task.id"])
        self.topic = config["topic"]
        self.fail_task = int(config.get("fail.task", "1"))
        self.fail_after = int(config.get("fail.after", "20"))
        self.fail_while = config.get("fail.while.file", "")

    def partitions(self):
        return [{"counter": self.id}]

    def latest_offsets(self, current):
        key = partition_key(self.partitions()[0])
        pos = (current.get(key) or {"n": 0})["n"]
        return {key: {"n": pos + 10}}

    def poll(self, partition, start, end):
        for n in range((start or {"n": 0})["n"] + 1, end["n"] + 1):
            if self.fail_task in (self.id, -1) and n > self.fail_after and (not self.fail_while
                                                                      or os.path.exists(self.fail_while)):
                raise ValueError(f"counter {self.id} cannot go past {self.fail_after}")
            yield SourceRecord(partition, {"n": n}, self.topic, value=str(n))

    def advance(self, partition, start, end, max_records):
        return {"n": min(end["n"], (start or {"n": 0})["n"] + max_records)}
