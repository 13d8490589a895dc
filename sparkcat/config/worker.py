"""Worker settings: ``conf/worker.yaml`` parsed once into a dataclass, then overridden by flags."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from sparkcat.api.config import ConfigDef, Importance, Type, ValidString
from sparkcat.errors import ConfigError
from sparkcat.plugins import DEFAULT_PACKAGES
from sparkcat.config import rest as rest_config
from sparkcat.policy.config_providers import ConfigProviders, has_placeholder
from sparkcat.config.rest import Listener, RestSecurityConfig
from sparkcat.config import worker_converters
from sparkcat.kafka.client_settings import worker_setting_errors
from sparkcat.policy.paths import local_root, scheme

#: The worker's own keys, typed and documented once; Kafka Connect's names where it has one.
WORKER_CONFIG = (
    ConfigDef()
    .define("state.dir", Type.STRING, "state", importance=Importance.HIGH,
            documentation="Where the local stores, query checkpoints and Spark's scheduler pools live (a local path).")
    .define("checkpoint.dir", Type.STRING, "",
            documentation="Where query checkpoints live, on any Hadoop file system (hdfs://, s3a://, file:); "
                          "empty: state.dir/checkpoints.")
    .define("bootstrap.servers", Type.STRING, "", importance=Importance.HIGH,
            documentation="Kafka brokers for the internal topics and connectors; empty: local stores, no Kafka.")
    .define("group.id", Type.STRING, "sparkcat-cluster",
            documentation="The cluster: drivers with the same group.id elect one active leader.")
    .define("config.storage.topic", Type.STRING, "connect-configs", documentation="The config log's topic.")
    .define("offset.storage.topic", Type.STRING, "connect-offsets", documentation="The offsets store's topic.")
    .define("status.storage.topic", Type.STRING, "connect-status", documentation="The status store's topic.")
    .define("exactly.once.source.support", Type.STRING, "enabled", ValidString.in_("disabled", "preparing", "enabled"),
            importance=Importance.HIGH,
            documentation="Connect's key: 'enabled' writes each source task's micro-batch and its source offsets in "
                          "one Kafka transaction and fences earlier task instances; 'disabled' writes at least once. "
                          "Connect's default is 'disabled'; sparkcat's is 'enabled'. 'preparing' is refused.")
    .define("rest.host", Type.STRING, "127.0.0.1", documentation="The REST API's host (unless listeners is set).")
    .define("rest.port", Type.INT, 8083, documentation="The REST API's port (unless listeners is set).")
    .define("pipelines.dir", Type.STRING, "pipelines", documentation="Pipeline specs applied and watched.")
    # Security (docs/running.md, "Connector configs, plugins, files and secrets"): what hostile connector configs can reach.
    .define("plugin.packages", Type.LIST, list(DEFAULT_PACKAGES), importance=Importance.HIGH,
            documentation="The packages connector and converter classes may come from.")
    .define("plugin.path", Type.LIST, "", importance=Importance.HIGH,
            documentation="Kafka Connect's key: directories holding Java plugins (plugin directories, uber-jars, "
                          "class directories), each isolated in its own class loader by Connect's own classes. "
                          "Their connectors are listed, described and validated; running them is not built yet. "
                          "A connector class found there is the one its name means, even where a built-in "
                          "answers to that Java name.")
    .define("plugin.discovery", Type.STRING, "hybrid_warn",
            ValidString.in_ignore_case("only_scan", "hybrid_warn", "hybrid_fail", "service_load"),
            documentation="Kafka Connect's key (KIP-898): how plugins on plugin.path are found: by scanning, by "
                          "their ServiceLoader manifests, or both.")
    # Converters of the connectors that name none (config/worker_converters.py); their settings are the
    # worker's key.converter.*, value.converter.* keys.
    .define("key.converter", Type.STRING, "", documentation=worker_converters.DOCS["key.converter"])
    .define("value.converter", Type.STRING, "", documentation=worker_converters.DOCS["value.converter"])
    .define("header.converter", Type.STRING, "", documentation=worker_converters.DOCS["header.converter"])
    .define("file.allowed.dirs", Type.LIST, None, importance=Importance.HIGH,
            documentation="Directories file connectors may use; unset: state.dir and pipelines.dir.")
    # Internal topics, with Connect's keys; -1 is the broker's default.
    .define("config.storage.replication.factor", Type.INT, -1, documentation="Replication of the config topic.")
    .define("offset.storage.replication.factor", Type.INT, -1, documentation="Replication of the offsets topic.")
    .define("status.storage.replication.factor", Type.INT, -1, documentation="Replication of the status topic.")
    .define("offset.storage.partitions", Type.INT, 25, documentation="Partitions of the offsets topic when "
            "sparkcat creates it (Connect's default); an existing topic is used with any count. -1: the broker's.")
    .define("status.storage.partitions", Type.INT, 5, documentation="Partitions of the status topic when "
            "sparkcat creates it (Connect's default); an existing topic is used with any count. -1: the broker's.")
    # Strimzi's auto-restart of FAILED connectors and tasks (runtime/recovery.py); conf/worker.yaml turns it on.
    .define("auto.restart.enable", Type.BOOLEAN, False,
            documentation="Restart FAILED connectors and tasks automatically, with Strimzi's backoff.")
    .define("auto.restart.max.restarts", Type.INT, -1,
            documentation="Automatic restarts before a connector is left FAILED; -1: no limit.")
    .define("auto.restart.backoff.unit.ms", Type.INT, 60000,
            documentation="Restart n+1 comes min(n*n+n, 60) of these after restart n (Strimzi: minutes).")
    # The group of drivers (runtime/membership.py): Connect's keys, defaults chosen for failover < 10 s.
    .define("session.timeout.ms", Type.INT, 6000, importance=Importance.HIGH,
            documentation="How long the group coordinator waits for a driver's heartbeat before another driver "
                          "takes over (Kafka Connect: 10000). Within the broker's group.min/max.session.timeout.ms.")
    .define("heartbeat.interval.ms", Type.INT, 1000,
            documentation="How often a driver heartbeats to the group coordinator (Kafka Connect: 3000).")
    .define("rebalance.timeout.ms", Type.INT, 60000,
            documentation="How long the coordinator waits for every driver to rejoin during a rebalance.")
    # KIP-158 and KIP-558, Connect's keys and defaults (config/topic_creation.py, runtime/execution/active_topics.py)
    .define("topic.creation.enable", Type.BOOLEAN, True,
            documentation="Whether source connectors may create their topics with their topic.creation.* keys "
                          "(KIP-158); with false those keys are refused.")
    .define("topic.tracking.enable", Type.BOOLEAN, True,
            documentation="Record the topics each connector uses in the status topic (KIP-558); false: "
                          "GET /connectors/NAME/topics answers 403.")
    .define("topic.tracking.allow.reset", Type.BOOLEAN, True,
            documentation="Whether PUT /connectors/NAME/topics/reset may forget a connector's topics.")
    .freeze()
)
PREPARING_REFUSED = (
    "exactly.once.source.support=preparing is the first step of turning exactly-once source support on in a running "
    "Kafka Connect cluster, one worker at a time; a sparkcat cluster is one driver, so there is nothing to prepare: "
    "set enabled or disabled")
#: Worker key -> attribute of ``WorkerConfig``: dots as underscores, ``.storage.`` dropped
#: (``config.storage.topic`` -> ``config_topic``).
_KEYS = {name: name.replace(".storage.", "_").replace(".", "_") for name in WORKER_CONFIG.names()}
#: Keys under this prefix configure Connect's ConfigProviders (``config.providers``, ``config.providers.NAME.*``).
PROVIDERS_PREFIX = "config.providers"


def _default(key: str) -> Any:
    return WORKER_CONFIG.keys[key].default


@dataclass(frozen=True)
class AutoRestartPolicy:
    """The worker's ``auto.restart.*`` keys."""

    enabled: bool = False
    max_restarts: int = -1
    backoff_unit_ms: int = 60000

    def backoff_s(self, count: int) -> float:
        """Strimzi's ``min(n * n + n, 60)`` units after the n-th restart.

        >>> [AutoRestartPolicy(backoff_unit_ms=60000).backoff_s(n) / 60 for n in range(9)]
        [0.0, 2.0, 6.0, 12.0, 20.0, 30.0, 42.0, 56.0, 60.0]
        """
        return min(count * count + count, 60) * self.backoff_unit_ms / 1000.0


@dataclass
class WorkerConfig:
    """How one driver runs: where state lives, which broker (if any), which REST port."""

    state_dir: str = _default("state.dir")
    checkpoint_dir: str = _default("checkpoint.dir")
    bootstrap_servers: str = _default("bootstrap.servers")
    group_id: str = _default("group.id")
    config_topic: str = _default("config.storage.topic")
    offset_topic: str = _default("offset.storage.topic")
    status_topic: str = _default("status.storage.topic")
    exactly_once_source_support: str = _default("exactly.once.source.support")
    rest_host: str = _default("rest.host")
    rest_port: int = _default("rest.port")
    pipelines_dir: str = _default("pipelines.dir")
    kafka: dict[str, str] = field(default_factory=dict)
    rest_security: RestSecurityConfig = field(default_factory=RestSecurityConfig)
    plugin_packages: list[str] = field(default_factory=lambda: list(_default("plugin.packages")))
    plugin_path: list[str] = field(default_factory=list)      # Connect's plugin.path: Java plugins
    plugin_discovery: str = _default("plugin.discovery")
    file_allowed_dirs: list[str] | None = None          # None: state_dir and pipelines_dir
    config_providers: dict[str, str] = field(default_factory=dict)   # config.providers* keys as written
    key_converter: str = ""                             # "": each connector's own, else JsonConverter
    value_converter: str = ""
    header_converter: str = ""
    converter_settings: dict[str, str] = field(default_factory=dict)   # key.converter.* ... as written
    config_replication_factor: int = _default("config.storage.replication.factor")
    offset_replication_factor: int = _default("offset.storage.replication.factor")
    status_replication_factor: int = _default("status.storage.replication.factor")
    offset_partitions: int = _default("offset.storage.partitions")
    status_partitions: int = _default("status.storage.partitions")
    auto_restart_enable: bool = _default("auto.restart.enable")
    auto_restart_max_restarts: int = _default("auto.restart.max.restarts")
    auto_restart_backoff_unit_ms: int = _default("auto.restart.backoff.unit.ms")
    session_timeout_ms: int = _default("session.timeout.ms")
    heartbeat_interval_ms: int = _default("heartbeat.interval.ms")
    rebalance_timeout_ms: int = _default("rebalance.timeout.ms")
    topic_creation_enable: bool = _default("topic.creation.enable")
    topic_tracking_enable: bool = _default("topic.tracking.enable")
    topic_tracking_allow_reset: bool = _default("topic.tracking.allow.reset")

    def __post_init__(self) -> None:
        if scheme(self.state_dir) is not None:
            raise ConfigError(
                f"state.dir is {self.state_dir!r}, but it must be a local directory (it holds the local stores and "
                f"Spark's scheduler pools file); put query checkpoints on HDFS, S3 or another Hadoop file system "
                f"with checkpoint.dir", {"state.dir": ["must be a local path, not a URI"]})
        for key, value in (("offset.storage.partitions", self.offset_partitions),
                           ("status.storage.partitions", self.status_partitions)):
            if value == 0 or value < -1:
                raise ConfigError(f"{key} must be -1 (the broker's num.partitions) or at least 1, not {value}",
                                  {key: ["must be -1 or >= 1"]})
        if self.exactly_once_source_support == "preparing":
            raise ConfigError(PREPARING_REFUSED, {"exactly.once.source.support": [PREPARING_REFUSED]})
        refused = worker_setting_errors(self.kafka)
        if refused:
            raise ConfigError("; ".join(f"kafka.{k} cannot be honoured: {why}; remove it" for k, why in refused.items()),
                              {f"kafka.{k}": [why] for k, why in refused.items()})
        # an unknown provider class fails at start, naming config.providers.NAME.class
        ConfigProviders(dict(self.config_providers), plugin_packages=tuple(self.plugin_packages)).check_classes()
        checked = worker_converters.checked_worker_converters(self.converters, self.plugin_packages)
        self.key_converter, self.value_converter, self.header_converter = (
            checked.get("key.converter", ""), checked.get("value.converter", ""), checked.get("header.converter", ""))
        for key, value in (("config.storage.replication.factor", self.config_replication_factor),
                           ("offset.storage.replication.factor", self.offset_replication_factor),
                           ("status.storage.replication.factor", self.status_replication_factor)):
            if value == 0 or value < -1:
                raise ConfigError(f"{key} must be -1 (the broker's default) or at least 1, not {value}",
                                  {key: ["must be -1 or >= 1"]})
        if not 0 < self.heartbeat_interval_ms < self.session_timeout_ms <= self.rebalance_timeout_ms:
            raise ConfigError("heartbeat.interval.ms must be above 0 and below session.timeout.ms, which must not "
                              "exceed rebalance.timeout.ms", {"session.timeout.ms": ["out of range"]})
        self.plugin_discovery = self.plugin_discovery.strip().lower()
        for entry in self.plugin_path:
            if not Path(entry).is_dir() and not entry.endswith(".jar"):
                raise ConfigError(f"plugin.path entry {entry!r} is not a directory or a jar",
                                  {"plugin.path": [f"{entry}: not a directory or a jar"]})
        if self.auto_restart_max_restarts < -1 or self.auto_restart_backoff_unit_ms < 0:
            raise ConfigError("auto.restart.max.restarts must be -1 or more and auto.restart.backoff.unit.ms 0 or "
                              "more", {"auto.restart": ["out of range"]})

    @property
    def converters(self) -> dict[str, str]:
        """The converter keys the worker sets (classes and settings), which connectors naming none inherit."""
        classes = {"key.converter": self.key_converter, "value.converter": self.value_converter,
                   "header.converter": self.header_converter}
        return {**{k: v for k, v in classes.items() if v}, **self.converter_settings}

    @property
    def auto_restart(self) -> AutoRestartPolicy:
        """The ``auto.restart.*`` keys together."""
        return AutoRestartPolicy(self.auto_restart_enable, self.auto_restart_max_restarts,
                                 self.auto_restart_backoff_unit_ms)

    @property
    def checkpoint_root(self) -> str:
        """The directory of every query checkpoint: ``checkpoint.dir`` (any Hadoop URI), else state.dir/checkpoints.

        Resolved once per value: every connector's plan names it at every reconciler tick, and resolving a local
        path walks the file system (at 200 connectors, a quarter of the idle driver's Python time)."""
        raw = self.checkpoint_dir or str(Path(self.state_dir) / "checkpoints")
        cached = self.__dict__.get("_checkpoint_root_cache")
        if cached is None or cached[0] != raw:
            cached = (raw, local_root(raw))
            self.__dict__["_checkpoint_root_cache"] = cached
        return cached[1]

    @property
    def uses_kafka(self) -> bool:
        return bool(self.bootstrap_servers.strip())

    @property
    def exactly_once_source(self) -> bool:
        """Whether source connectors writing to Kafka do so in transactions (``exactly.once.source.support``)."""
        return self.exactly_once_source_support == "enabled"

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


def load_worker_config(path: str | Path | None, resolve_placeholders: bool = True) -> WorkerConfig:
    """Read a worker YAML file; unknown keys are errors that name the key and the file.

    Placeholders are resolved (``resolve_worker_placeholders``) unless ``resolve_placeholders`` is
    False: the CLI looking up the REST URL needs no secret, and may lack the driver's.

    Keys under ``kafka.`` (e.g. ``kafka.security.protocol``) configure the Kafka clients: every client, or
    only producers, consumers or admin clients under ``kafka.producer.``, ``kafka.consumer.``,
    ``kafka.admin.`` (``sparkcat.kafka.client_settings`` shares them out).
    """
    if path is None:
        return WorkerConfig()
    if not Path(path).exists():
        raise ConfigError(f"worker config file {path} does not exist")
    raw = yaml.safe_load(Path(path).read_text()) or {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: a worker config must be a mapping of keys to values")
    if resolve_placeholders:
        raw = resolve_worker_placeholders(raw, str(path))
    present: dict[str, Any] = {}
    kafka: dict[str, str] = {}
    rest: dict[str, Any] = {}
    providers: dict[str, str] = {}
    converter_settings: dict[str, str] = {}
    for key, value in raw.items():
        if key.startswith("kafka."):
            kafka[key[len("kafka."):]] = str(value)
        elif worker_converters.is_worker_converter_key(key) and key not in _KEYS:
            converter_settings[key] = _text(value)
        elif key == PROVIDERS_PREFIX or key.startswith(PROVIDERS_PREFIX + "."):
            providers[key] = _text(value)
        elif key in _KEYS:
            present[key] = value
        elif rest_config.is_rest_key(key):
            rest[key] = value
        elif key in rest_config.NOT_IMPLEMENTED:
            raise ConfigError(f"{path}: {key} is a Kafka Connect key sparkcat refuses: "
                              f"{rest_config.NOT_IMPLEMENTED[key]}", {key: ["not implemented"]})
        else:
            known = ", ".join([*_KEYS, *rest_config.KEYS])
            raise ConfigError(f"{path}: unknown worker config key {key!r}; known keys: {known}",
                              {key: ["unknown worker config key"]})
    if rest.get("listeners") and ({"rest.host", "rest.port"} & raw.keys()):
        raise ConfigError(f"{path}: set either listeners or rest.host/rest.port, not both (listeners replaces "
                          f"them, as in Kafka Connect)", {"listeners": ["conflicts with rest.host/rest.port"]})
    values = {_KEYS[key]: value for key, value in _parsed(present, path).items()}
    rest_security = rest_config.parse_rest_config(rest, str(path))
    try:
        return WorkerConfig(**values, kafka=kafka, config_providers=providers, rest_security=rest_security,
                            converter_settings=converter_settings)
    except ConfigError as e:
        raise ConfigError(f"{path}: {e.message}", e.errors) from None


def resolve_worker_placeholders(raw: dict[str, Any], source: str) -> dict[str, Any]:
    """KIP-421: ``${NAME:PATH:KEY}`` in any worker value, resolved with the worker's own ``config.providers``.

    The ``config.providers*`` keys themselves are taken as written (as in Connect). A file or
    directory provider without ``allowed.paths`` may read any file here: the worker config is the
    operator's, unlike a connector config. Every resolved value is a secret to ``sparkcat.redact``
    (scrubbed from logs and traces); a placeholder naming a provider that is not configured, or a
    value the provider lacks, is a ConfigError naming the key.
    """
    providers = {k: _text(v) for k, v in raw.items() if k == PROVIDERS_PREFIX or k.startswith(PROVIDERS_PREFIX + ".")}
    wanted = {k: v for k, v in raw.items() if k not in providers and _holds_placeholder(v)}
    if not wanted:
        return raw
    packages = raw.get("plugin.packages", list(DEFAULT_PACKAGES))
    packages = packages if isinstance(packages, list) else str(packages).split(",")
    resolver = ConfigProviders(providers, ("/",), tuple(str(p).strip() for p in packages if str(p).strip()))
    try:
        flat = resolver.resolved({f"{k}\0{i}": str(item) for k, v in wanted.items()
                                  for i, item in enumerate(v if isinstance(v, list) else [v])})
    except ConfigError as e:
        errors = {k.split("\0")[0]: m for k, m in e.errors.items()}
        details = "; ".join(f"{k}: {' '.join(m)}" for k, m in errors.items())
        raise ConfigError(f"{source}: {details}", errors) from None
    out = dict(raw)
    for key, value in wanted.items():
        items = [flat[f"{key}\0{i}"] for i in range(len(value) if isinstance(value, list) else 1)]
        out[key] = items if isinstance(value, list) else items[0]
    return out


def _holds_placeholder(value: Any) -> bool:
    return has_placeholder(value) or (isinstance(value, list) and any(map(has_placeholder, value)))


def _parsed(present: dict[str, Any], path: str | Path) -> dict[str, Any]:
    """The keys a file sets, parsed by ``WORKER_CONFIG``; lists drop empty items, an empty text is ``""``."""
    try:
        parsed = WORKER_CONFIG.parse(present)
    except ConfigError as e:
        raise ConfigError(f"{path}: {e.message}", e.errors) from None
    out: dict[str, Any] = {}
    for key in present:
        value, type_ = parsed[key], WORKER_CONFIG.keys[key].type
        if type_ is Type.INT and value is None:
            raise ConfigError(f"{path}: {key} must be a number", {key: ["not a number"]})
        if type_ is Type.LIST:
            value = [item.strip() for item in value or [] if item.strip()]
        out[key] = "" if value is None else value
    return out


def _text(value: Any) -> str:
    """A YAML value as Connect's text: lists joined with commas, booleans as ``true``/``false``."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return "" if value is None else str(value)

