"""Finds connector classes by alias, by ``module:Class`` path, or by Kafka Connect's Java class names.

Built-in connectors are plugins like any other: this table only names them.
Importing a module runs its code, so a class named by user input is imported only
when its module lies in one of the worker's ``plugin.packages`` (Connect's
``plugin.path``); anything else is refused before any import.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from sparkcat.api.connector import Connector, SinkConnector, SourceConnector
from sparkcat.errors import ConfigError, NotFoundError


class JavaPluginCatalog(Protocol):
    """Kafka Connect's Java plugins found on the worker's ``plugin.path`` (``spark.driver.connect_host``).

    A connector class found there is the one its name means, as on Connect, even where a built-in answers
    to that Java name; answers are in the shapes of Connect's REST entities.
    """

    def connector_type(self, name: str) -> str | None:
        """``"source"`` or ``"sink"`` when ``name`` is a connector on plugin.path, else None."""

    def plugin_infos(self, connectors_only: bool = True) -> list[dict[str, Any]]:
        """Connect's ``PluginInfo`` (``class``, ``type``, ``version``) of each connector on plugin.path (of every
        plugin Connect's scan found, converters and SMTs included, when not ``connectors_only``)."""

    def plugin_config(self, name: str) -> list[dict[str, Any]]:
        """Connect's ``ConfigKeyInfo`` list of the connector: its own keys, then the framework's."""

    def validate(self, config: Mapping[str, str], exactly_once: bool = False) -> dict[str, Any]:
        """Connect's ``ConfigInfos`` for ``config`` (placeholders already resolved); ``exactly_once``: the worker
        writes sources in transactions, so a source's ``exactly.once.support`` and ``transaction.boundary`` are
        checked with the connector, as Connect's distributed herder checks them."""

    def new_connector(self, name: str) -> Connector:
        """A new, unstarted instance of the Java connector ``name`` (a ``HostedJavaConnector``)."""


@runtime_checkable
class HostedJavaConnector(Protocol):
    """A Java connector from plugin.path running in the driver JVM: its tasks run in executor JVMs, never in Python."""

    java_class: str
    #: What an executor makes its Connect host from: the host's jars and worker keys.
    host_spec: dict[str, Any]

    def java_task_class(self) -> str:
        """The Java class of its tasks (``task.class``)."""


@dataclass(frozen=True)
class PluginInfo:
    """One connector plugin: its canonical class path and the other names it answers to."""

    class_path: str
    aliases: tuple[str, ...]


BUILTINS: tuple[PluginInfo, ...] = (
    PluginInfo("sparkcat.connectors.increment:IncrementSourceConnector",
               ("increment", "IncrementSourceConnector", "IncrementSource")),
    PluginInfo("sparkcat.connectors.file_source:FileStreamSourceConnector",
               ("file-source", "org.apache.kafka.connect.file.FileStreamSourceConnector",
                "FileStreamSourceConnector", "FileStreamSource")),
    PluginInfo("sparkcat.connectors.file_sink:FileStreamSinkConnector",
               ("file-sink", "org.apache.kafka.connect.file.FileStreamSinkConnector",
                "FileStreamSinkConnector", "FileStreamSink")),
    PluginInfo("sparkcat.connectors.kafka_sink:KafkaSinkConnector",
               ("kafka", "kafka-sink", "KafkaSinkConnector", "KafkaSink")),
    PluginInfo("sparkcat.connectors.delta_sink:DeltaSinkConnector",
               ("delta", "delta-sink", "DeltaSinkConnector", "DeltaSink")),
    PluginInfo("sparkcat.connectors.jdbc_source:JdbcSourceConnector",
               ("jdbc-source", "io.confluent.connect.jdbc.JdbcSourceConnector", "JdbcSourceConnector")),
    PluginInfo("sparkcat.connectors.jdbc_sink:JdbcSinkConnector",
               ("jdbc-sink", "io.confluent.connect.jdbc.JdbcSinkConnector", "JdbcSinkConnector")),
)


#: Kafka Connect's task classes of the connectors sparkcat runs under their Java names: the ``task.class``
#: of their task configs, so a Connect worker reading the config topic can run what sparkcat wrote.
JAVA_TASK_CLASSES: dict[str, str] = {
    "sparkcat.connectors.file_source:FileStreamSourceConnector": "org.apache.kafka.connect.file.FileStreamSourceTask",
    "sparkcat.connectors.file_sink:FileStreamSinkConnector": "org.apache.kafka.connect.file.FileStreamSinkTask",
}
TASK_CLASS_CONFIG = "task.class"  # Connect's TaskConfig.TASK_CLASS_CONFIG


def task_class_name(connector: Connector) -> str:
    """What Connect's Worker puts in ``task.class``: the Java task class where one exists, else ``module:Class``."""
    if isinstance(connector, HostedJavaConnector):
        return connector.java_task_class()
    cls = type(connector)
    own = f"{cls.__module__}:{cls.__qualname__}"
    if own in JAVA_TASK_CLASSES:
        return JAVA_TASK_CLASSES[own]
    task = connector.task_class()
    return f"{task.__module__}:{task.__qualname__}"


def _alias_table() -> dict[str, str]:
    table = {}
    for info in BUILTINS:
        table[info.class_path] = info.class_path
        for alias in info.aliases:
            table[alias] = info.class_path
    return table


def class_path_of(name: str) -> str:
    """The ``module:Class`` path for an alias, Java name or path (unknown names come back as given)."""
    return _alias_table().get(name.strip(), name.strip())


#: Where connector and converter classes may come from when the worker does not say (``plugin.packages``).
DEFAULT_PACKAGES: tuple[str, ...] = ("sparkcat.connectors",)


def _split(path: str) -> tuple[str, str]:
    module_name, sep, attr = path.partition(":")
    if not sep:
        module_name, _, attr = path.rpartition(".")
    if not module_name or not attr:
        raise NotFoundError(f"{path!r} is not a module:Class path")
    return module_name, attr


def in_packages(path: str, packages: Sequence[str]) -> bool:
    """True when the module of ``module:Class`` is one of ``packages`` or inside one (no import happens).

    >>> in_packages("sparkcat.connectors.increment:X", ["sparkcat.connectors"]), in_packages("os:system", ["sparkcat"])
    (True, False)
    """
    try:
        module_name, _ = _split(path)
    except NotFoundError:
        return False
    return any(module_name == p or module_name.startswith(p + ".") for p in packages if p)


def check_packages(path: str, packages: Sequence[str]) -> None:
    """NotFoundError, before any import, when ``path`` lies outside the allowed ``packages``."""
    if not in_packages(path, packages):
        raise NotFoundError(f"{path!r} is not in a plugin package: classes are loaded only from the worker's "
                            f"plugin.packages ({', '.join(packages) or 'none'})")


def load_class(path: str, packages: Sequence[str] | None = None) -> type:
    """Import ``module:Class`` (or ``module.Class``); NotFoundError names what was missing.

    With ``packages``, a module outside them is refused before it is imported.
    Class paths the runtime built itself (query plans) are loaded without.
    """
    module_name, attr = _split(path)
    if packages is not None:
        check_packages(path, packages)
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise NotFoundError(f"cannot import module {module_name!r} for {path!r}: {e}") from e
    try:
        return getattr(module, attr)
    except AttributeError:
        raise NotFoundError(f"module {module_name!r} has no class {attr!r}") from None


def connector_class(name: str | None, packages: Sequence[str] = DEFAULT_PACKAGES) -> type[Connector]:
    """Resolve a ``connector.class`` value to a Connector subclass, with Connect's error wording.

    Only classes in ``packages`` (the worker's ``plugin.packages``) are imported.
    """
    if not name or not name.strip():
        raise ConfigError('Missing required configuration "connector.class" which has no default value.',
                          {"connector.class": ["Missing required configuration \"connector.class\""]})
    try:
        cls = load_class(class_path_of(name), packages)
    except NotFoundError as e:
        known = ", ".join(i.aliases[0] for i in BUILTINS)
        raise NotFoundError(f"Failed to find any class that implements Connector and which name matches "
                            f"{name}, available connectors are: {known} ({e.message})") from e
    if not (isinstance(cls, type) and issubclass(cls, Connector)):
        raise NotFoundError(f"{name} is not a Connector (it must subclass SourceConnector or SinkConnector)")
    return cls


def connector_type(cls: type[Connector]) -> str:
    """``"source"`` or ``"sink"`` as the REST API reports it."""
    if issubclass(cls, SourceConnector):
        return "source"
    if issubclass(cls, SinkConnector):
        return "sink"
    return "unknown"


def builtin_plugins() -> list[tuple[str, type[Connector]]]:
    """(Connect-style class name, class) of each built-in, for ``GET /connector-plugins``."""
    out = []
    for info in BUILTINS:
        java = next((a for a in info.aliases if a.startswith("org.")), info.class_path)
        out.append((java, load_class(info.class_path)))
    return out
