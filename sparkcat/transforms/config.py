"""Connect's ``transforms`` / ``predicates`` keys parsed into a chain, with Connect's validation messages.

A connector config names its transformations as Connect does::

    transforms=route,mask
    transforms.route.type=org.apache.kafka.connect.transforms.RegexRouter
    transforms.route.regex=(.*)
    transforms.route.replacement=copy-$1
    transforms.route.predicate=isFoo
    transforms.route.negate=true
    predicates=isFoo
    predicates.isFoo.type=org.apache.kafka.connect.transforms.predicates.TopicNameMatches
    predicates.isFoo.pattern=foo.*

``parse_chain`` turns that into ``Chain`` (stages in ``transforms`` order); ``chain_errors``
returns every problem per key, with Connect's wording, for validate/apply.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sparkcat.errors import ConfigError
from sparkcat.transforms.catalog import PREDICATES, TRANSFORMS
from sparkcat.transforms.field_path import FIELD_SYNTAX_VERSION
from sparkcat.transforms.registry import (
    PLUGIN_VERSION, PREDICATE_KEYS, TRANSFORM_KEYS, Factory, PluginKeys, bool_value, invalid,
    list_value, missing, settings_of,
)

__all__ = ["Stage", "PredicateSpec", "Chain", "parse_chain", "chain_errors"]

FIELD_SYNTAX_REFUSAL = ("{key} (KIP-821's nested field paths) is not defined by Kafka Connect 4.1's {name}, which "
                        "reads its field names at the root of the record only (in 4.1 only ExtractField takes "
                        "field.syntax.version); sparkcat refuses it rather than ignore it: remove it")


@dataclass
class PredicateSpec:
    """A configured predicate: its alias and the built predicate (``condition(frame) -> Column``)."""

    alias: str
    predicate: Any


@dataclass
class Stage:
    """One transformation of the chain, applied only where its predicate (possibly negated) holds."""

    alias: str
    type_name: str
    transform: Any
    predicate: PredicateSpec | None = None
    negate: bool = False


@dataclass
class Chain:
    """The transformations of one connector, in ``transforms`` order (empty: records pass unchanged)."""

    stages: list[Stage] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.stages)


def _aliases(config: Mapping[str, Any], key: str, errors: dict[str, list[str]]) -> list[str]:
    aliases = list_value(config.get(key))
    if len(aliases) != len(set(aliases)):
        errors.setdefault(key, []).append(invalid(key, config.get(key), "Duplicate alias provided."))
    return list(dict.fromkeys(aliases))


def undeclared_key_errors(keys: PluginKeys, settings: Mapping[str, Any], prefix: str) -> dict[str, list[str]]:
    """The keys under ``prefix`` (alias's keys, ``type`` and the like removed) the plugin does not take, each
    with why: a key Connect's class defines and sparkcat does not implement, or one neither defines (a typo)."""
    out: dict[str, list[str]] = {}
    for key in settings:
        full = prefix + key
        if key in keys.definition.keys:
            continue
        if key == PLUGIN_VERSION:
            continue  # KIP-891's version key: checked against the installed version (config/plugin_versions.py)
        if key == FIELD_SYNTAX_VERSION:
            out[full] = [FIELD_SYNTAX_REFUSAL.format(key=repr(full), name=keys.class_name)]
            continue
        if key in keys.unsupported:
            out[full] = [f"{full!r} is defined by Kafka Connect's {keys.class_name} but not supported by sparkcat "
                         f"yet ({keys.unsupported[key]}); remove it"]
            continue
        taken = ", ".join(keys.definition.names()) or "none"
        out[full] = [f"Unknown configuration key {full!r}: {keys.class_name} does not define it (its keys: "
                     f"{taken}); check for a typo"]
    return out


def _build(registry: Mapping[str, Factory], declared: Mapping[str, PluginKeys], config: Mapping[str, Any],
           prefix: str, errors: dict[str, list[str]]) -> Any | None:
    """The plugin ``prefix + "type"`` names, built from its settings; problems go to ``errors``.

    A key under ``prefix`` the plugin does not declare is an error, never ignored.
    """
    type_key = prefix + "type"
    name = str(config.get(type_key) or "").strip()
    if not name:
        errors.setdefault(type_key, []).append(missing(type_key))
        return None
    factory = registry.get(name)
    if factory is None:
        errors.setdefault(type_key, []).append(invalid(type_key, name, f"Class {name} could not be found."))
        return None
    settings = {k: v for k, v in settings_of(config, prefix).items() if k != "type"}
    for key, messages in undeclared_key_errors(declared[name], settings, prefix).items():
        errors.setdefault(key, []).extend(messages)
    try:
        return factory({k: v for k, v in settings_of(config, prefix).items() if k != PLUGIN_VERSION}, prefix)
    except ConfigError as e:
        for key, messages in (e.errors or {type_key: [e.message]}).items():
            errors.setdefault(key, []).extend(messages)
        return None


def _predicates(config: Mapping[str, Any], errors: dict[str, list[str]]) -> dict[str, PredicateSpec]:
    out = {}
    for alias in _aliases(config, "predicates", errors):
        built = _build(PREDICATES, PREDICATE_KEYS, config, f"predicates.{alias}.", errors)
        if built is not None:
            out[alias] = PredicateSpec(alias, built)
    return out


def _stage(config: Mapping[str, Any], alias: str, predicates: dict[str, PredicateSpec],
           errors: dict[str, list[str]]) -> Stage | None:
    prefix = f"transforms.{alias}."
    pred_key, negate_key = prefix + "predicate", prefix + "negate"
    if negate_key in config and pred_key not in config:
        errors.setdefault(negate_key, []).append(
            f"Config '{negate_key}' was provided but there is no config '{pred_key}' defining a predicate to be "
            "negated.")
    settings = {k: v for k, v in settings_of(config, prefix).items() if k not in ("predicate", "negate")}
    transform = _build(TRANSFORMS, TRANSFORM_KEYS, {prefix + k: v for k, v in settings.items()}, prefix, errors)
    predicate = None
    pred_alias = str(config.get(pred_key) or "").strip()
    if pred_alias:
        predicate = predicates.get(pred_alias)
        if predicate is None and pred_alias not in list_value(config.get("predicates")):
            errors.setdefault(pred_key, []).append(invalid(
                pred_key, pred_alias, f"Predicate alias {pred_alias} is not listed in 'predicates'"))
    try:
        negate = bool_value(negate_key, config.get(negate_key), False)
    except ConfigError as e:
        errors.setdefault(negate_key, []).extend(e.errors[negate_key])
        negate = False
    if transform is None:
        return None
    return Stage(alias, str(config.get(prefix + "type")).strip(), transform, predicate, negate)


def _parse(config: Mapping[str, Any]) -> tuple[Chain, dict[str, list[str]]]:
    errors: dict[str, list[str]] = {}
    predicates = _predicates(config, errors)
    stages = [_stage(config, alias, predicates, errors) for alias in _aliases(config, "transforms", errors)]
    return Chain([s for s in stages if s is not None]), errors


def chain_errors(config: Mapping[str, Any]) -> dict[str, list[str]]:
    """Every problem of the ``transforms`` / ``predicates`` keys, per key, in Connect's words."""
    return _parse(config)[1]


def parse_chain(config: Mapping[str, Any]) -> Chain:
    """The connector's transformation chain; ConfigError naming every bad key if it has problems."""
    chain, errors = _parse(config)
    if errors:
        detail = "; ".join(f"{k}: {' '.join(v)}" for k, v in errors.items())
        raise ConfigError(f"Invalid transforms/predicates configuration: {detail}", errors)
    return chain

