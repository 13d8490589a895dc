"""KIP-158: how a source connector's tasks create the topics they write to, read from its ``topic.creation.*`` keys.

Kafka Connect 4.1's rules (``SourceConnectorConfig``, ``TopicCreationConfig``, ``TopicCreationGroup``,
``TopicCreation``):

- creation is on when the worker's ``topic.creation.enable`` is true (the default) and the connector sets any
  ``topic.creation.*`` key; then ``topic.creation.default.replication.factor`` and
  ``topic.creation.default.partitions`` are required, each -1 (the broker's default) or at least 1;
- ``topic.creation.groups`` lists further groups; each takes ``include`` / ``exclude`` (lists of regular
  expressions matched against the whole topic name), ``replication.factor`` and ``partitions`` (the default
  group's when unset), and any other key under ``topic.creation.GROUP.`` as a topic config
  (``cleanup.policy``, ``compression.type``, ...);
- a topic takes the first listed group whose include matches and whose exclude does not; otherwise the
  default group (``topic.creation.default.*``; its own include/exclude are ignored by Connect);
- a task checks a topic the first time it sends to it: an existing one is used as it is, a missing one is
  created with its group's settings (``spark/executor/topic_creator.py``; a Java source's task on plugin.path:
  Connect's own classes in the Kafka Connect host, ``jvm/connect-host``'s ``SourceTopics``).

Where Connect ignores a key in silence sparkcat refuses it (``topic_creation_errors``): a key of a group not
listed in ``topic.creation.groups``, the default group's include/exclude, and every ``topic.creation.*`` key
on a worker with ``topic.creation.enable=false``. Include and exclude patterns are checked as regular
expressions here (Connect compiles them when the task starts).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sparkcat.api.config import ConfigDef, Importance, Type, Width
from sparkcat.api.config.types import invalid_value, parse_type
from sparkcat.errors import ConfigError

__all__ = ["PREFIX", "DEFAULT_GROUP", "CreationGroup", "TopicCreation", "topic_creation", "topic_creation_errors",
           "uses_topic_creation", "TOPIC_CREATION_KEYS"]

PREFIX = "topic.creation."
GROUPS = PREFIX + "groups"
DEFAULT_GROUP = "default"
INCLUDE, EXCLUDE, REPLICATION_FACTOR, PARTITIONS = "include", "exclude", "replication.factor", "partitions"
_SETTINGS = (INCLUDE, EXCLUDE, REPLICATION_FACTOR, PARTITIONS)
_GROUP_DISPLAY = "Topic Creation"

#: The per-group keys as Connect documents them (GROUP stands for a group's name); for docs/reference.md.
TOPIC_CREATION_KEYS = (
    ConfigDef()
    .define(PREFIX + "default.replication.factor", Type.INT, None, None, Importance.LOW,
            "The replication factor for new topics created for this connector; -1: the broker's default. Required "
            "(with topic.creation.default.partitions) for the connector to create topics.",
            _GROUP_DISPLAY, 2, Width.LONG, "Replication Factor for Topics in default")
    .define(PREFIX + "default.partitions", Type.INT, None, None, Importance.LOW,
            "The number of partitions of new topics created for this connector; -1: the broker's default. Required "
            "(with topic.creation.default.replication.factor) for the connector to create topics.",
            _GROUP_DISPLAY, 3, Width.LONG, "Partition Count for Topics in default")
    .define(PREFIX + "GROUP.include", Type.LIST, "", None, Importance.LOW,
            "Regular expressions matched against whole topic names: the group's settings apply to the topics "
            "they match (and its exclude does not). For the groups of topic.creation.groups, not the default.",
            _GROUP_DISPLAY, 4, Width.LONG, "Inclusion Topic Pattern")
    .define(PREFIX + "GROUP.exclude", Type.LIST, "", None, Importance.LOW,
            "Regular expressions of topic names the group does not take, whatever its include says.",
            _GROUP_DISPLAY, 5, Width.LONG, "Exclusion Topic Pattern")
    .define(PREFIX + "GROUP.replication.factor", Type.INT, None, None, Importance.LOW,
            "The group's replication factor (-1: the broker's default); unset: the default group's.",
            _GROUP_DISPLAY, 6, Width.LONG, "Replication Factor for Topics in GROUP")
    .define(PREFIX + "GROUP.partitions", Type.INT, None, None, Importance.LOW,
            "The group's partition count (-1: the broker's default); unset: the default group's.",
            _GROUP_DISPLAY, 7, Width.LONG, "Partition Count for Topics in GROUP")
    .define(PREFIX + "GROUP.CONFIG", Type.STRING, None, None, Importance.LOW,
            "Any other key under a group (default included) is a topic config of the topics it creates, e.g. "
            "topic.creation.default.cleanup.policy=compact.", _GROUP_DISPLAY, 8, Width.LONG, "Topic configs")
    .freeze()
)


@dataclass(frozen=True)
class CreationGroup:
    """One topic creation group: which topics it takes and how it creates them."""

    name: str
    include: tuple[str, ...]
    exclude: tuple[str, ...]
    partitions: int
    replication_factor: int
    configs: tuple[tuple[str, str], ...] = ()

    def matches(self, topic: str) -> bool:
        """Connect's ``TopicCreationGroup.matches``: the joined include matches the whole name, the exclude not."""
        return not _whole(self.exclude, topic) and _whole(self.include, topic)

    def describe(self, topic: str) -> str:
        """The topic as Connect logs a ``NewTopic``: name, partitions, replication factor, configs."""
        configs = ", ".join(f"{k}={v}" for k, v in self.configs)
        return (f"{{name={topic}, numPartitions={_shown(self.partitions)}, "
                f"replicationFactor={_shown(self.replication_factor)}, configs={{{configs}}}}}")


@dataclass(frozen=True)
class TopicCreation:
    """A source connector's topic creation: its groups in order, and the default group."""

    groups: tuple[CreationGroup, ...]
    default: CreationGroup

    def group_for(self, topic: str) -> CreationGroup:
        """Connect's ``findFirstGroup``: the first listed group that matches, else the default group."""
        return next((g for g in self.groups if g.matches(topic)), self.default)


def _whole(patterns: tuple[str, ...], topic: str) -> bool:
    """Java's ``Pattern.compile(String.join("|", patterns)).matcher(topic).matches()``: none matches only ''."""
    return re.fullmatch("|".join(patterns), topic) is not None


def _shown(value: int) -> str:
    return "default" if value == -1 else str(value)


def uses_topic_creation(config: Mapping[str, Any]) -> bool:
    """Whether the connector sets any ``topic.creation.*`` key (Connect's ``usesTopicCreation``)."""
    return any(str(k).startswith(PREFIX) for k in config)


def _group_names(config: Mapping[str, Any]) -> list[str]:
    """``topic.creation.groups`` without ``default`` (always there; Connect drops it with a warning)."""
    names = parse_type(GROUPS, config.get(GROUPS), Type.LIST) or []
    seen: list[str] = []
    for name in names:
        if name and name != DEFAULT_GROUP and name not in seen:
            seen.append(name)
    return seen


def _count(config: Mapping[str, Any], key: str, fallback: int | None) -> int:
    """A partitions or replication factor key: an INT that is -1 or at least 1 (``fallback`` when unset)."""
    raw = config.get(key)
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        if fallback is None:
            raise ConfigError(f'Missing required configuration "{key}" which has no default value.')
        return fallback
    value = parse_type(key, raw, Type.INT)
    if value != -1 and value < 1:
        raise ConfigError(invalid_value(key, value, "Value must be -1 or at least 1"))
    return value


def _patterns(config: Mapping[str, Any], key: str) -> tuple[str, ...]:
    patterns = tuple(p for p in parse_type(key, config.get(key), Type.LIST) or [] if p)
    for pattern in patterns:
        try:
            re.compile(pattern)
        except re.error as e:
            raise ConfigError(invalid_value(key, ",".join(patterns), f"{pattern!r} is not a valid regular "
                                                                     f"expression: {e}")) from None
    return patterns


def _configs(config: Mapping[str, Any], group: str) -> tuple[tuple[str, str], ...]:
    prefix = f"{PREFIX}{group}."
    return tuple(sorted((k[len(prefix):], str(v).strip()) for k, v in config.items()
                        if str(k).startswith(prefix) and k[len(prefix):] not in _SETTINGS))


def _group(config: Mapping[str, Any], name: str, default: CreationGroup) -> CreationGroup:
    prefix = f"{PREFIX}{name}."
    return CreationGroup(name, _patterns(config, prefix + INCLUDE), _patterns(config, prefix + EXCLUDE),
                         _count(config, prefix + PARTITIONS, default.partitions),
                         _count(config, prefix + REPLICATION_FACTOR, default.replication_factor),
                         _configs(config, name))


def topic_creation(config: Mapping[str, Any], enabled: bool = True) -> TopicCreation | None:
    """The connector's topic creation, or None when it creates none (off on the worker, or no key set).

    Raises ConfigError (Connect's wording, naming the key) for a value Connect refuses; ``topic_creation_errors``
    reports every problem per key instead.
    """
    if not enabled or not uses_topic_creation(config):
        return None
    prefix = f"{PREFIX}{DEFAULT_GROUP}."
    default = CreationGroup(DEFAULT_GROUP, (".*",), (), _count(config, prefix + PARTITIONS, None),
                            _count(config, prefix + REPLICATION_FACTOR, None), _configs(config, DEFAULT_GROUP))
    return TopicCreation(tuple(_group(config, name, default) for name in _group_names(config)), default)


def topic_creation_errors(config: Mapping[str, Any], enabled: bool = True,
                          to_kafka: bool = True) -> dict[str, list[str]]:
    """Every problem of the connector's ``topic.creation.*`` keys, by key (empty: none).

    ``to_kafka`` False: the records go to a ``sink.*`` sink instead of Kafka, so every such key is refused.
    """
    keys = sorted(str(k) for k in config if str(k).startswith(PREFIX))
    if not keys:
        return {}
    if not to_kafka:
        message = "the connector's records go to its sink.* sink, not to Kafka topics, so it creates no topics"
        return {k: [message] for k in keys}
    if not enabled:
        message = ("topic.creation.enable=false on this worker, so its source connectors create no topics and "
                   "this key would be ignored; remove it, or set topic.creation.enable=true on the worker")
        return {k: [message] for k in keys}
    errors: dict[str, list[str]] = {}
    try:
        groups = _group_names(config)
    except ConfigError as e:
        return {GROUPS: [e.message]}
    prefix = f"{PREFIX}{DEFAULT_GROUP}."
    for key in (prefix + INCLUDE, prefix + EXCLUDE):
        if key in config:
            errors[key] = [f"{key} is ignored by Kafka Connect: the default group takes every topic that no group "
                           f"of {GROUPS} takes; remove it"]
    for key in keys:
        group = key[len(PREFIX):].split(".", 1)[0]
        if key != GROUPS and group != DEFAULT_GROUP and group not in groups:
            errors[key] = [f"{key} configures topic creation group {group!r}, which {GROUPS} does not list; "
                           f"add it there or remove the key"]
    for key, check in _checks(config, groups):
        try:
            check()
        except ConfigError as e:
            errors.setdefault(key, []).append(e.message)
    return errors


def _checks(config: Mapping[str, Any], groups: list[str]) -> list[tuple[str, Any]]:
    """(key, check) of each partitions, replication factor and pattern key of the default group and ``groups``."""
    out: list[tuple[str, Any]] = []
    for setting in (REPLICATION_FACTOR, PARTITIONS):
        key = f"{PREFIX}{DEFAULT_GROUP}.{setting}"
        out.append((key, lambda k=key: _count(config, k, None)))
    for group in groups:
        prefix = f"{PREFIX}{group}."
        out += [(prefix + s, lambda k=prefix + s: _count(config, k, 1)) for s in (REPLICATION_FACTOR, PARTITIONS)]
        out += [(prefix + s, lambda k=prefix + s: _patterns(config, k)) for s in (INCLUDE, EXCLUDE)]
    return out


def add_java_topic_creation_errors(response: dict[str, Any], config: Mapping[str, Any], enabled: bool,
                                   added: dict[str, list[str]]) -> None:
    """A Java source's refusals of the keys Connect's validation lets through and then ignores, into ``added``.

    Connect's own classes (the Java host) judge the groups' partitions, replication factors and patterns, and its
    ``response`` shows their errors; a key Connect would ignore (a group ``topic.creation.groups`` does not list,
    the default group's include/exclude, any key on a worker with ``topic.creation.enable=false``) gets
    ``topic_creation_errors``' message, and an entry in ``response`` when Connect's shows none for it.
    """
    configs = response.setdefault("configs", [])
    judged = {c["value"]["name"] for c in configs if (c.get("value") or {}).get("errors")}
    shown = {(c.get("value") or {}).get("name") for c in configs}
    for key, messages in topic_creation_errors(config, enabled).items():
        if key in judged:
            continue
        added.setdefault(key, []).extend(messages)
        if key not in shown:
            configs.append({"definition": None, "value": {"name": key, "value": config.get(key),
                                                          "recommended_values": [], "errors": [], "visible": True}})
