"""A source connector with a PASSWORD key, to see how the REST API shows secrets."""

from __future__ import annotations

from sparkcat.api import ConfigDef, Importance, SourceConnector, Type
from sparkcat.connectors.increment import IncrementSourceTask

CONFIG_DEF = (ConfigDef()
              .define("increments", Type.LIST, "1", None, Importance.HIGH, "Increments.")
              .define("db.password", Type.PASSWORD, None, None, Importance.HIGH, "A secret.")
              .define("db.port", Type.INT, 5432, None, Importance.LOW, "A port."))


class SecretSourceConnector(SourceConnector):
    def config_def(self) -> ConfigDef:
        return CONFIG_DEF

    def start(self, config: dict[str, str]) -> None:
        self._config = dict(config)

    def task_class(self) -> type[IncrementSourceTask]:
        return IncrementSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{"increments": self._config.get("increments", "1")}]
