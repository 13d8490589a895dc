"""Kafka Connect's ConfigProviders: ``${env:VAR}``, ``${file:PATH:KEY}``, ``${directory:DIR:FILE}``.

A connector config keeps its placeholders everywhere it is stored (config log, task
configs, REST responses); they are resolved only where a connector or task starts
(driver or executor), and every value resolved is remembered by ``sparkcat.redact``
so that it is scrubbed from logs and traces.

Worker keys, as in Connect::

    config.providers: file,env,directory
    config.providers.file.class: org.apache.kafka.common.config.provider.FileConfigProvider
    config.providers.file.param.allowed.paths: /etc/sparkcat/secrets
    config.providers.env.class: org.apache.kafka.common.config.provider.EnvVarConfigProvider
    config.providers.env.param.allowlist.pattern: ^DB_.*
    config.providers.directory.class: org.apache.kafka.common.config.provider.DirectoryConfigProvider

Any other class is a Python ``sparkcat.api.ConfigProvider`` (a Vault client, say), named by
a ``module:Class`` or dotted path inside the worker's ``plugin.packages`` and refused before
any import otherwise; one instance per provider per process is configured with its
``param.*`` settings (``policy/provider_plugins.py``). Such a provider may give a path's values a
ttl (``ConfigData.ttl``); ``transform`` reports them per path, as Connect's ``ConfigTransformerResult.ttls()``,
for the driver to restart the connector when one ends (``runtime/execution/config_reloads.py``).

Unlike Connect, a file or directory provider without ``allowed.paths`` may read only
under the worker's ``file.allowed.dirs`` (in a connector config; the worker's own config
may name any file), and a placeholder naming a provider that is not configured is an error
rather than left as it is.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sparkcat import redact
from sparkcat.errors import ConfigError
from sparkcat.policy.paths import allowed_path_problem
from sparkcat.policy.provider_plugins import PluginProvider, plugin_provider, provider_class

#: Connect's ``ConfigTransformer.DEFAULT_PATTERN``: ``${provider:[path:]key}``.
PLACEHOLDER = re.compile(r"\$\{([^}]*?):(([^}]*?):)?([^}]*?)\}")

_JAVA = "org.apache.kafka.common.config.provider."
FILE, DIRECTORY, ENV = "FileConfigProvider", "DirectoryConfigProvider", "EnvVarConfigProvider"
_CLASSES = {_JAVA + FILE: FILE, FILE: FILE, _JAVA + DIRECTORY: DIRECTORY, DIRECTORY: DIRECTORY,
            _JAVA + ENV: ENV, ENV: ENV}


def has_placeholder(value: object) -> bool:
    return isinstance(value, str) and PLACEHOLDER.search(value) is not None


@dataclass(frozen=True)
class Provider:
    """One configured provider: its kind (FileConfigProvider, ...) and its ``param.*`` settings."""

    name: str
    kind: str
    params: dict[str, str] = field(default_factory=dict)
    default_paths: tuple[str, ...] = ()

    def allowed_paths(self) -> list[str]:
        raw = self.params.get("allowed.paths")
        return [p.strip() for p in raw.split(",") if p.strip()] if raw is not None else list(self.default_paths)

    def fetch(self, path: str | None, key: str) -> tuple[str, None]:
        """``get``; Kafka's three providers give their values no time to live."""
        return self.get(path, key), None

    def get(self, path: str | None, key: str) -> str:
        """The value of ``key`` (at ``path``); ValueError with a message that never holds a secret."""
        if self.kind == ENV:
            if path:
                raise ValueError(f"the env provider takes no path (write ${{{self.name}:VARIABLE}})")
            pattern = self.params.get("allowlist.pattern", ".*")
            if not re.fullmatch(pattern, key):
                raise ValueError(f"environment variable {key} does not match allowlist.pattern")
            if key not in os.environ:
                raise ValueError(f"environment variable {key} is not set")
            return os.environ[key]
        if not path:
            raise ValueError(f"the {self.name} provider needs a path: ${{{self.name}:PATH:KEY}}")
        problem = allowed_path_problem(path, self.allowed_paths())
        if problem is not None:
            raise ValueError(f"{problem.split(';')[0]} of config.providers.{self.name}.param.allowed.paths")
        if self.kind == FILE:
            values = read_properties(Path(path))
            if key not in values:
                raise ValueError(f"{path} has no key {key}")
            return values[key]
        target = Path(path) / key
        if "/" in key or key in ("", ".", "..") or not target.is_file():
            raise ValueError(f"{path} has no file {key}")
        return target.read_text(encoding="utf-8")


def read_properties(path: Path) -> dict[str, str]:
    """A Java properties file's ``key=value`` / ``key: value`` lines (comments and blank lines skipped)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ValueError(f"cannot read {path}: {e.strerror}") from None
    out: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line[0] in "#!":
            continue
        match = re.match(r"((?:\\.|[^=:\s])+)\s*[=:\s]\s*(.*)", line)
        if match:
            out[match.group(1).replace("\\", "")] = match.group(2)
        else:
            out[line] = ""
    return out


@dataclass(frozen=True)
class ConfigProviders:
    """The worker's providers, from its ``config.providers*`` keys (plain data: it crosses to executors)."""

    settings: dict[str, str] = field(default_factory=dict)
    default_paths: tuple[str, ...] = ()
    plugin_packages: tuple[str, ...] = ()   # where provider classes other than Kafka's may come from

    def providers(self) -> dict[str, Provider | PluginProvider]:
        """Each provider of ``config.providers``; ConfigError naming ``config.providers.NAME.class`` if unusable."""
        names = [n.strip() for n in self.settings.get("config.providers", "").split(",") if n.strip()]
        out: dict[str, Provider | PluginProvider] = {}
        for name in names:
            prefix = f"config.providers.{name}."
            cls = self.settings.get(prefix + "class", "").strip()
            params = {k[len(prefix + "param."):]: v for k, v in self.settings.items()
                      if k.startswith(prefix + "param.")}
            if cls in _CLASSES:
                out[name] = Provider(name, _CLASSES[cls], params, self.default_paths)
            else:
                out[name] = plugin_provider(name, cls, params, self.plugin_packages)
        return out

    def check_classes(self) -> None:
        """ConfigError naming ``config.providers.NAME.class`` for a class that is neither Kafka's nor a
        ConfigProvider in plugin.packages; nothing is instantiated or configured (the CLI checks this too)."""
        for name in (n.strip() for n in self.settings.get("config.providers", "").split(",")):
            cls = self.settings.get(f"config.providers.{name}.class", "").strip()
            if name and cls not in _CLASSES:
                provider_class(name, cls, self.plugin_packages)

    def resolve(self, config: Mapping[str, str]) -> tuple[dict[str, str], dict[str, list[str]]]:
        """``config`` with every placeholder replaced, and the errors per key of those that failed.

        Every value resolved is handed to ``redact.remember_secret``.
        """
        resolved, errors, _ = self.transform(config)
        return resolved, errors

    def transform(self, config: Mapping[str, str]) -> tuple[dict[str, str], dict[str, list[str]], dict[str, int]]:
        """``resolve``, plus the time to live (ms) of each provider path a value came from with one (Connect's
        ``ConfigTransformerResult.ttls()``; the shortest where several values of a path carry one)."""
        providers = self.providers()
        resolved: dict[str, str] = {}
        errors: dict[str, list[str]] = {}
        ttls: dict[str, int] = {}
        for key, value in config.items():
            if not has_placeholder(value):
                resolved[key] = value
                continue

            def replace(match: re.Match, key: str = key) -> str:
                name, path, item = match.group(1), match.group(3), match.group(4)
                provider = providers.get(name)
                if provider is None:
                    errors.setdefault(key, []).append(
                        f"config provider {name!r} is not configured (worker key config.providers: "
                        f"{', '.join(providers) or 'none'})")
                    return match.group(0)
                try:
                    secret, ttl = provider.fetch(path, item)
                except ValueError as e:
                    errors.setdefault(key, []).append(f"config provider {name!r}: {e}")
                    return match.group(0)
                redact.remember_secret(secret)
                if ttl is not None:
                    ttls[path or ""] = min(ttl, ttls.get(path or "", ttl))
                return secret

            resolved[key] = PLACEHOLDER.sub(replace, value)
        return resolved, errors, ttls

    def resolved(self, config: Mapping[str, str], where: str = "") -> dict[str, str]:
        """``resolve``, raising ConfigError naming every key that could not be resolved."""
        return self.resolved_with_ttls(config, where)[0]

    def resolved_with_ttls(self, config: Mapping[str, str], where: str = "") -> tuple[dict[str, str], dict[str, int]]:
        """``transform``, raising ConfigError naming every key that could not be resolved."""
        values, errors, ttls = self.transform(config)
        if errors:
            details = "; ".join(f"{k}: {' '.join(m)}" for k, m in errors.items())
            raise ConfigError(f"{where + ': ' if where else ''}{details}", errors)
        return values, ttls


def reverse_transform(task_configs: Sequence[Mapping[str, str]], raw: Mapping[str, str],
                      resolved: Mapping[str, str]) -> list[dict[str, str]]:
    """Connect's ``AbstractHerder.reverseTransform``: task configs get the placeholders back before they are stored.

    A task config value equal to the resolved value of a connector key that held a
    placeholder becomes that placeholder again, so no resolved secret is written.
    """
    out = []
    for task in task_configs:
        copy = dict(task)
        for key, value in task.items():
            if has_placeholder(raw.get(key)) and resolved.get(key) == value:
                copy[key] = raw[key]
        out.append(copy)
    return out
