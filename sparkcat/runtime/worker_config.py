"""Worker settings: ``conf/worker.yaml`` parsed once into a dataclass, then overridden by flags."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from sparkcat.errors import ConfigError
from sparkcat.runtime import rest_config
from sparkcat.runtime.rest_config import Listener, RestSecurityConfig

_KEYS = {
    "state.dir": "state_dir",
    "bootstrap.servers": "bootstrap_servers",
    "group.id": "group_id",
    "config.storage.topic": "config_topic",
    "offset.storage.topic": "offset_topic",
    "status.storage.topic": "status_topic",
    "rest.host": "rest_host",
    "rest.port": "rest_port",
    "pipelines.dir": "pipelines_dir",
}


@dataclass
class WorkerConfig:
    """How one driver runs: where state lives, which broker (if any), which REST port."""

    state_dir: str = "state"
    bootstrap_servers: str = ""
    group_id: str = "sparkcat-cluster"
    config_topic: str = "connect-configs"
    offset_topic: str = "connect-offsets"
    status_topic: str = "connect-status"
    rest_host: str = "127.0.0.1"
    rest_port: int = 8083
    pipelines_dir: str = "pipelines"
    kafka: dict[str, str] = field(default_factory=dict)
    rest_security: RestSecurityConfig = field(default_factory=RestSecurityConfig)

    @property
    def uses_kafka(self) -> bool:
        return bool(self.bootstrap_servers.strip())

    @property
    def rest_listeners(self) -> tuple[Listener, ...]:
        """``listeners`` when set, else plain HTTP on ``rest.host``/``rest.port``."""
        return rest_config.rest_listeners(self.rest_security, self.rest_host, self.rest_port)

    def with_overrides(self, **overrides: Any) -> WorkerConfig:
        """A copy with every non-None override applied (flags win over the file)."""
        return dataclasses.replace(self, **{k: v for k, v in overrides.items() if v is not None})


def load_worker_config(path: str | Path | None) -> WorkerConfig:
    """Read a worker YAML file; unknown keys are errors that name the key and the file.

    Keys under ``kafka.`` (e.g. ``kafka.security.protocol``) are passed to every client.
    """
    if path is None:
        return WorkerConfig()
    if not Path(path).exists():
        raise ConfigError(f"worker config file {path} does not exist")
    raw = yaml.safe_load(Path(path).read_text()) or {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: a worker config must be a mapping of keys to values")
    values: dict[str, Any] = {}
    kafka: dict[str, str] = {}
    rest: dict[str, Any] = {}
    for key, value in raw.items():
        if key.startswith("kafka."):
            kafka[key[len("kafka."):]] = str(value)
        elif key in _KEYS:
            values[_KEYS[key]] = value
        elif key in rest_config.KEYS:
            rest[key] = value
        else:
            known = ", ".join([*_KEYS, *rest_config.KEYS])
            raise ConfigError(f"{path}: unknown worker config key {key!r}; known keys: {known}",
                              {key: ["unknown worker config key"]})
    if rest.get("listeners") and ({"rest.host", "rest.port"} & raw.keys()):
        raise ConfigError(f"{path}: set either listeners or rest.host/rest.port, not both (listeners replaces "
                          f"them, as in Kafka Connect)", {"listeners": ["conflicts with rest.host/rest.port"]})
    try:
        values["rest_port"] = int(values.get("rest_port", 8083))
    except (TypeError, ValueError):
        raise ConfigError(f"{path}: rest.port must be a number", {"rest.port": ["not a number"]}) from None
    values = {k: ("" if v is None else v) for k, v in values.items()}
    return WorkerConfig(**values, kafka=kafka, rest_security=rest_config.parse_rest_config(rest, str(path)))
