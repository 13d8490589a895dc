"""A source connector whose every ``poll`` takes ``poll.seconds`` (imported by executors in tests)."""

from __future__ import annotations

import time

from sparkcat.api import ConfigDef, SourceConnector, SourceRecord, SourceTask, Type, partition_key


class SlowSourceConnector(SourceConnector):
    """One task counting upwards by 10 per batch, each poll ``poll.seconds`` long."""

    def config_def(self) -> ConfigDef:
        return (ConfigDef().define("topic", Type.STRING, documentation="output topic")
                .define("poll.seconds", Type.DOUBLE, 6.0, documentation="how long each poll takes"))

    def start(self, config):
        self.config = config

    def task_class(self):
        return SlowSourceTask

    def task_configs(self, max_tasks):
        return [dict(self.config)]


class SlowSourceTask(SourceTask):
    def start(self, config):
        self.topic = config["topic"]
        self.seconds = float(config.get("poll.seconds", "6"))

    def partitions(self):
        return [{"slow": 0}]

    def latest_offsets(self, current):
        key = partition_key(self.partitions()[0])
        return {key: {"n": (current.get(key) or {"n": 0})["n"] + 10}}

    def poll(self, partition, start, end):
        time.sleep(self.seconds)
        for n in range((start or {"n": 0})["n"] + 1, end["n"] + 1):
            yield SourceRecord(partition, {"n": n}, self.topic, value=str(n))

    def advance(self, partition, start, end, max_records):
        return {"n": min(end["n"], (start or {"n": 0})["n"] + max_records)}
