"""A source connector that remembers the config it was started with, to see what config providers resolved.

``probe.password`` is PASSWORD-typed; with ``probe.fail=true`` ``start`` raises an
error whose message carries that password, as a careless connector would.
"""

from __future__ import annotations

from sparkcat.api.config import ConfigDef, Importance, Type
from sparkcat.api.connector import SourceConnector, SourceTask

#: Every config a probe was started with, in this process (driver side).
STARTED: list[dict[str, str]] = []


class SecretProbeTask(SourceTask):
    def start(self, config):
        self.config = dict(config)

    def partitions(self):
        return [{"probe": 0}]

    def latest_offsets(self, current):
        return current

    def poll(self, partition, start, end):
        return []

    def stop(self):
        pass

    def value_schema(self):
        return "STRING"


class SecretProbeConnector(SourceConnector):
    def version(self) -> str:
        return "0"

    def config_def(self) -> ConfigDef:
        return (ConfigDef()
                .define("probe.password", Type.PASSWORD, "", None, Importance.HIGH, "A secret.")
                .define("probe.user", Type.STRING, "", None, Importance.LOW, "Not a secret.")
                .define("probe.fail", Type.BOOLEAN, False, None, Importance.LOW, "Fail in start, naming the secret."))

    def start(self, config):
        STARTED.append(dict(config))
        self.config = dict(config)
        if self.config.get("probe.fail") == "true":
            raise RuntimeError(f"cannot log in with password {self.config.get('probe.password')}")

    def task_class(self):
        return SecretProbeTask

    def task_configs(self, max_tasks):
        return [dict(self.config)]

    def stop(self):
        pass
