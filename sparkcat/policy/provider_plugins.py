"""Config provider classes written in Python (``sparkcat.api.ConfigProvider``), loaded from ``plugin.packages``.

``config.providers.NAME.class`` is user input: its module is imported only when it lies
inside one of the worker's ``plugin.packages`` (the check ``sparkcat.plugins`` applies to
connector classes), and the class must subclass ``ConfigProvider``. Each process keeps one
configured instance per provider name, class and params (Connect's worker makes one per
worker), so a provider that logs in once (a Vault token) does not log in per placeholder;
they are closed when the process ends.
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sparkcat.api.config_provider import ConfigData, ConfigProvider
from sparkcat.errors import ConfigError, NotFoundError
from sparkcat.plugins import in_packages, load_class

KAFKA_CLASSES = "Kafka's FileConfigProvider, DirectoryConfigProvider or EnvVarConfigProvider"

_instances: dict[tuple, ConfigProvider] = {}
_lock = threading.Lock()


@dataclass(frozen=True)
class PluginProvider:
    """A configured ``ConfigProvider`` under its name: ``get(path, key)`` as the built-in ``Provider`` has it."""

    name: str
    instance: ConfigProvider

    def get(self, path: str | None, key: str) -> str:
        """The value of ``key`` at ``path``; ValueError (naming the provider and key, never a value) otherwise."""
        return self.fetch(path, key)[0]

    def fetch(self, path: str | None, key: str) -> tuple[str, int | None]:
        """``get``, with the ``ConfigData.ttl`` (ms) the provider gave the value: None unless an int >= 0, as
        Connect's ``ConfigTransformer`` keeps only those."""
        try:
            data = self.instance.get(path or "", {key})
        except ValueError:
            raise
        except Exception as e:  # a plugin's own failure: its type only, its text may hold anything
            raise ValueError(f"{type(self.instance).__name__}.get failed ({type(e).__name__})") from None
        values = data.data if isinstance(data, ConfigData) else None
        if values is None:
            raise ValueError(f"{type(self.instance).__name__}.get did not return a ConfigData")
        if key not in values:
            raise ValueError(f"{path or '(no path)'} has no key {key}")
        ttl = data.ttl if isinstance(data.ttl, int) and not isinstance(data.ttl, bool) and data.ttl >= 0 else None
        return str(values[key]), ttl


def plugin_provider(name: str, class_name: str, params: Mapping[str, str],
                    packages: Sequence[str]) -> PluginProvider:
    """The configured provider ``class_name`` (same instance for the same name, class and params in a process).

    ConfigError naming ``config.providers.NAME.class`` when the class lies outside ``packages``,
    cannot be imported, is not a ConfigProvider, or its ``configure`` fails.
    """
    key = f"config.providers.{name}.class"
    cache_key = (name, class_name, tuple(sorted(params.items())))
    cls = provider_class(name, class_name, packages)  # checked on every call, cached or not
    with _lock:
        if cache_key in _instances:
            return PluginProvider(name, _instances[cache_key])
        try:
            instance = cls()
            instance.configure(dict(params))
        except Exception as e:
            raise _error(key, f"{class_name}.configure failed: {type(e).__name__}"
                              f"{': ' + str(e) if isinstance(e, (ValueError, ConfigError)) else ''}") from None
        _instances[cache_key] = instance
    return PluginProvider(name, instance)


def provider_class(name: str, class_name: str, packages: Sequence[str]) -> type[ConfigProvider]:
    """The ConfigProvider class ``class_name``, imported only when it lies inside ``packages``."""
    key = f"config.providers.{name}.class"
    if not class_name:
        raise _error(key, f"{key} is required: one of {KAFKA_CLASSES}, or a ConfigProvider class in plugin.packages")
    if not in_packages(class_name, packages):
        raise _error(key, f"{key} must be one of {KAFKA_CLASSES}, or a sparkcat.api.ConfigProvider class in the "
                          f"worker's plugin.packages ({', '.join(packages) or 'none'}), not {class_name!r}")
    try:
        cls = load_class(class_name, packages)
    except NotFoundError as e:
        raise _error(key, f"{key}: cannot load {class_name}: {e.message}") from None
    if not (isinstance(cls, type) and issubclass(cls, ConfigProvider)):
        raise _error(key, f"{key}: {class_name} is not a sparkcat.api.ConfigProvider")
    return cls


def _error(key: str, message: str) -> ConfigError:
    return ConfigError(message, {key: [message]})


@atexit.register
def close_all() -> None:
    """Close every configured provider of this process (Connect closes them when the worker stops)."""
    with _lock:
        instances = list(_instances.values())
        _instances.clear()
    for instance in instances:
        try:
            instance.close()
        except Exception:  # closing is best effort at exit
            pass
