"""What the worker lets connector configs reach, carried from the worker config to validation and to tasks.

``InputPolicy`` holds the worker's ``plugin.packages``, ``file.allowed.dirs``,
config providers, and the converters a connector naming none inherits (``converters``). The driver validates every config against it; and because tasks
start on executors, which never see the worker config, the driver attaches the
policy to each task config of a query plan (``attach``) and the executor strips it
off again where the task starts (``prepare``): there the config's placeholders are
resolved and its path keys checked once more, so a resolved secret or an unchecked
path never exists anywhere else.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sparkcat import redact
from sparkcat.errors import ConfigError
from sparkcat.plugins import DEFAULT_PACKAGES
from sparkcat.policy.config_providers import ConfigProviders
from sparkcat.policy.paths import allowed_path_problem
from sparkcat.policy.worker_converters import inherit

#: Directories under state.dir that sparkcat writes itself (stores, query checkpoints, Spark's pool file).
SPARKCAT_STATE_DIRS = ("stores", "checkpoints", "spark")

#: Set by the driver on the task configs of a query plan only; never stored, never accepted from users.
POLICY_KEY = "sparkcat.internal.input.policy"


@dataclass(frozen=True)
class InputPolicy:
    """The worker's limits on connector configs, as plain data (it is serialised into query plans)."""

    plugin_packages: tuple[str, ...] = DEFAULT_PACKAGES
    allowed_dirs: tuple[str, ...] = ()
    providers: dict[str, str] = field(default_factory=dict)
    denied_dirs: tuple[str, ...] = ()     # the state dir's stores, checkpoints and spark: never connector files
    # What connector configs may ask of delivery (validation only; not sent to tasks): the worker's
    # exactly.once.source.support is "enabled", and its stores (offsets) are Kafka topics.
    exactly_once_source: bool = True
    kafka_stores: bool = False
    # The Java connectors on the worker's plugin.path (a ``plugins.JavaPluginCatalog``; driver only, never
    # serialised): a class found there is the one its name means.
    java_plugins: Any = field(default=None, compare=False, repr=False)
    # The worker's key.converter, value.converter, header.converter and their settings (driver only: plans
    # carry the configs with them inherited, policy/worker_converters.py).
    converters: dict[str, str] = field(default_factory=dict)
    # The worker's topic.creation.enable (KIP-158): whether source connectors' topic.creation.* keys apply.
    topic_creation: bool = True

    @classmethod
    def of(cls, worker, java_plugins: Any = None) -> InputPolicy:
        """The policy of a ``WorkerConfig``; relative directories are resolved on the driver."""
        policy = cls.build(worker.plugin_packages, worker.allowed_dirs, worker.config_providers, worker.state_dir)
        return dataclasses.replace(policy, exactly_once_source=worker.exactly_once_source,
                                   kafka_stores=worker.uses_kafka, java_plugins=java_plugins,
                                   converters=dict(worker.converters), topic_creation=worker.topic_creation_enable)

    def with_worker_converters(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """``config`` as the connector runs it: the worker's converters on every side it names none for."""
        return inherit(config, self.converters)

    def java_connector(self, name: object) -> str | None:
        """``"source"`` or ``"sink"`` when ``name`` is a Java connector on the worker's plugin.path, else None."""
        if self.java_plugins is None or not isinstance(name, str):
            return None
        return self.java_plugins.connector_type(name)

    @classmethod
    def build(cls, plugin_packages: Sequence[str], allowed_dirs: Sequence[str], providers: Mapping[str, str],
              state_dir: str) -> InputPolicy:
        """The policy of these worker settings; relative directories are resolved here."""
        state = Path(state_dir).resolve()
        return cls(tuple(plugin_packages), tuple(str(Path(d).resolve()) for d in allowed_dirs),
                   dict(providers), tuple(str(state / d) for d in SPARKCAT_STATE_DIRS))

    @classmethod
    def default(cls) -> InputPolicy:
        """The policy of a worker with no settings (``conf/worker.yaml``'s defaults: ``state``, ``pipelines``)."""
        return cls.build(DEFAULT_PACKAGES, ("state", "pipelines"), {}, "state")

    @property
    def config_providers(self) -> ConfigProviders:
        return ConfigProviders(dict(self.providers), self.allowed_dirs, self.plugin_packages)

    def path_problems(self, config: Mapping[str, str], path_keys: Sequence[str]) -> dict[str, list[str]]:
        """The errors of each of ``path_keys`` whose value lies outside ``allowed_dirs``."""
        out = {}
        for key in path_keys:
            problem = allowed_path_problem(str(config.get(key) or ""), self.allowed_dirs, self.denied_dirs)
            if problem is not None:
                out[key] = [problem]
        return out

    def to_json(self) -> str:
        return json.dumps({"plugin_packages": list(self.plugin_packages), "allowed_dirs": list(self.allowed_dirs),
                           "providers": self.providers, "denied_dirs": list(self.denied_dirs)}, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> InputPolicy:
        raw = json.loads(text)
        return cls(tuple(raw["plugin_packages"]), tuple(raw["allowed_dirs"]), dict(raw["providers"]),
                   tuple(raw.get("denied_dirs", ())))


def attach(config: Mapping[str, str], policy: InputPolicy, path_keys: Sequence[str] = ()) -> dict[str, str]:
    """``config`` plus the policy and the keys that name files, for ``prepare`` where the task starts."""
    return {**config, POLICY_KEY: json.dumps({"policy": policy.to_json(), "path_keys": list(path_keys)})}


def prepare(config: Mapping[str, str]) -> dict[str, str]:
    """The config a task starts with: placeholders resolved, path keys checked, the policy key removed.

    Raises ConfigError (naming the keys, never a secret) when a placeholder cannot be
    resolved or a path lies outside the allowed directories. A config without the
    policy key (a unit test's) comes back as it is.
    """
    config = dict(config)
    attached = config.pop(POLICY_KEY, None)
    if attached is None:
        return config
    raw = json.loads(attached)
    policy = InputPolicy.from_json(raw["policy"])
    resolved = policy.config_providers.resolved(config, "task config")
    redact.remember_config_secrets(resolved)
    problems = policy.path_problems(resolved, raw["path_keys"])
    if problems:
        details = "; ".join(f"{k}: {' '.join(m)}" for k, m in problems.items())
        raise ConfigError(f"task config: {details}", problems)
    return resolved
