"""Worker settings: ``conf/worker.yaml`` parsed once into a dataclass, then overridden by flags."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from sparkcat.errors import ConfigError
from sparkcat.plugins import DEFAULT_PACKAGES
from sparkcat.runtime import rest_config
from sparkcat.policy.config_providers import ConfigProviders
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
    # Security (README "Input and secrets"): what hostile connector configs can reach.
    "plugin.packages": "plugin_packages",
    "file.allowed.dirs": "file_allowed_dirs",
    # Internal topics, with Connect's keys; -1 is the broker's default.
    "config.storage.replication.factor": "config_replication_factor",
    "offset.storage.replication.factor": "offset_replication_factor",
    "status.storage.replication.factor": "status_replication_factor",
    "offset.storage.partitions": "offset_partitions",
    "status.storage.partitions": "status_partitions",
}
_LISTS = ("plugin_packages", "file_allowed_dirs")
_INTS = ("rest_port", "config_replication_factor", "offset_replication_factor", "status_replication_factor",
         "offset_partitions", "status_partitions")
#: Keys under this prefix configure Connect's ConfigProviders (``config.providers``, ``config.providers.NAME.*``).
PROVIDERS_PREFIX = "config.providers"


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
    plugin_packages: list[str] = field(default_factory=lambda: list(DEFAULT_PACKAGES))
    file_allowed_dirs: list[str] | None = None          # None: state_dir and pipelines_dir
    config_providers: dict[str, str] = field(default_factory=dict)   # config.providers* keys as written
    config_replication_factor: int = -1
    offset_replication_factor: int = -1
    status_replication_factor: int = -1
    offset_partitions: int = 1
    status_partitions: int = 1

    def __post_init__(self) -> None:
        for key, value in (("offset.storage.partitions", self.offset_partitions),
                           ("status.storage.partitions", self.status_partitions)):
            if value != 1:
                raise ConfigError(
                    f"{key} is {value}, but sparkcat reads only partition 0 of its internal topics: set it to 1 "
                    f"(an existing topic with more partitions is refused as well)", {key: ["must be 1"]})
        ConfigProviders(dict(self.config_providers)).providers()  # an unknown provider class fails at start
        for key, value in (("config.storage.replication.factor", self.config_replication_factor),
                           ("offset.storage.replication.factor", self.offset_replication_factor),
                           ("status.storage.replication.factor", self.status_replication_factor)):
            if value == 0 or value < -1:
                raise ConfigError(f"{key} must be -1 (the broker's default) or at least 1, not {value}",
                                  {key: ["must be -1 or >= 1"]})

    @property
    def uses_kafka(self) -> bool:
        return bool(self.bootstrap_servers.strip())

    @property
    def rest_listeners(self) -> tuple[Listener, ...]:
        """``listeners`` when set, else plain HTTP on ``rest.host``/``rest.port``."""
        return rest_config.rest_listeners(self.rest_security, self.rest_host, self.rest_port)

    @property
    def allowed_dirs(self) -> list[str]:
        """Directories file connectors may read and write: file.allowed.dirs, else state.dir and pipelines.dir."""
        if self.file_allowed_dirs is not None:
            return [d for d in self.file_allowed_dirs if d]
        return [self.state_dir, self.pipelines_dir]

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
    providers: dict[str, str] = {}
    for key, value in raw.items():
        if key.startswith("kafka."):
            kafka[key[len("kafka."):]] = str(value)
        elif key == PROVIDERS_PREFIX or key.startswith(PROVIDERS_PREFIX + "."):
            providers[key] = _text(value)
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
    names = {v: k for k, v in _KEYS.items()}
    for attr in _INTS:
        if attr in values:
            try:
                values[attr] = int(values[attr])
            except (TypeError, ValueError):
                raise ConfigError(f"{path}: {names[attr]} must be a number", {names[attr]: ["not a number"]}) \
                    from None
    for attr in _LISTS:
        if attr in values:
            values[attr] = _list(values[attr])
    values = {k: ("" if v is None else v) for k, v in values.items()}
    rest_security = rest_config.parse_rest_config(rest, str(path))
    try:
        return WorkerConfig(**values, kafka=kafka, config_providers=providers, rest_security=rest_security)
    except ConfigError as e:
        raise ConfigError(f"{path}: {e.message}", e.errors) from None


def _text(value: Any) -> str:
    """A YAML value as Connect's text: lists joined with commas."""
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return "" if value is None else str(value)


def _list(value: Any) -> list[str]:
    """A YAML list, or a comma-separated string, as a list of non-empty strings."""
    items = value if isinstance(value, (list, tuple)) else str(value or "").split(",")
    return [str(v).strip() for v in items if str(v).strip()]
