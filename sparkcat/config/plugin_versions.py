"""KIP-891's ``*.plugin.version`` keys (Kafka Connect 4.1), checked against the one version sparkcat installs.

Connect can hold several versions of a plugin and picks the one a connector's spec asks for. sparkcat has
exactly one of each: a built-in reports sparkcat's version, a Python plugin from ``plugin.packages`` its
``plugin_version``, a Java plugin from ``plugin.path`` its own ``version()``. So a spec is accepted when that
version satisfies it and refused otherwise, with Connect's message, on the key that asked.

A spec reads as Connect's ``PluginUtils.connectorVersionRequirement`` reads it: unset or ``latest`` asks for
nothing; a range (``[1.0,2.0)``) is Maven's; a bare version is a *hard* requirement, that version exactly
(``3.6.1.Final`` means ``[3.6.1.Final]``), never Maven's soft "recommended" one:

>>> str(requirement("4.1.1")), requirement("4.1.1").contains("4.1.2"), requirement("latest")
('[4.1.1,4.1.1]', False, None)
>>> unsatisfied("connector.plugin.version", "[5.0,)", "FileStreamSource", "4.1.1")
'Plugin FileStreamSource not found that matches the version range [5.0,), available versions: [4.1.1]'
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sparkcat import __version__, plugins
from sparkcat.api.connector import Connector

from sparkcat.config.maven_version import InvalidVersionSpec, VersionRange

__all__ = ["LATEST", "PLUGIN_VERSION", "VersionedKey", "invalid_spec", "java_version_errors", "plugin_version_errors",
           "requirement", "spec_problem", "unsatisfied", "version_errors", "versioned_keys",
           "worker_converter_version_errors"]

#: The key under every plugin's prefix (``transforms.ALIAS.plugin.version``) or after its class key.
PLUGIN_VERSION = "plugin.version"
LATEST = "latest"
#: The class key each framework version key is the version of.
CLASS_KEYS = {"connector.plugin.version": "connector.class", "key.converter.plugin.version": "key.converter",
              "value.converter.plugin.version": "value.converter",
              "header.converter.plugin.version": "header.converter"}


def requirement(spec: str | None) -> VersionRange | None:
    """Connect's ``connectorVersionRequirement``: None for any version, else the range (InvalidVersionSpec raised)."""
    if spec is None or spec == LATEST:
        return None
    spec = spec.strip()
    parsed = VersionRange.parse(spec)
    return parsed if parsed.has_restrictions else VersionRange.parse(f"[{spec}]")


def spec_problem(spec: object) -> str | None:
    """Maven's message when ``spec`` is not a version spec (Connect's ``PluginVersionValidator``), else None."""
    try:
        requirement(None if spec is None else str(spec))
    except InvalidVersionSpec as e:
        return str(e)
    return None


def invalid_spec(key: str, spec: object, problem: str) -> str:
    """Kafka's ``ConfigException`` wording for a spec Maven refuses, naming the key."""
    return f"Invalid value {spec} for configuration {key}: {problem}"


def unsatisfied(key: str, spec: str | None, plugin: str, installed: str | Sequence[str]) -> str | None:
    """Connect's ``VersionedPluginLoadingException`` message when no ``installed`` version satisfies ``spec``, else
    None (``installed``: the one version, or every copy Connect's plugin scan found, a Java plugin's).

    ``key`` names the key in the message only when the spec is not one (Connect's message for an unsatisfied
    range names the plugin, the range and the versions installed; the response puts it on ``key``).
    """
    versions = [installed] if isinstance(installed, str) else list(installed)
    try:
        wanted = requirement(spec)
    except InvalidVersionSpec as e:
        return invalid_spec(key, spec, str(e))
    if wanted is None or any(wanted.contains(v) for v in versions):
        return None
    return (f"Plugin {plugin} not found that matches the version range {wanted}, available versions: "
            f"[{', '.join(versions)}]")


@dataclass(frozen=True)
class VersionedKey:
    """A ``*.plugin.version`` key of a config: the plugin it asks a version of and the key naming that plugin."""

    key: str
    spec: str
    class_key: str
    plugin: str


def versioned_keys(config: Mapping[str, object]) -> list[VersionedKey]:
    """Every set ``*.plugin.version`` key of ``config``, with the plugin it is about (the class key's value).

    A transformation's or predicate's is under its alias (``transforms.ALIAS.plugin.version``, the plugin named
    by ``transforms.ALIAS.type``); a converter's or the connector's follows its class key.
    """
    out = []
    for key, spec in config.items():
        if spec is None or not str(key).endswith("." + PLUGIN_VERSION):
            continue
        class_key = CLASS_KEYS.get(key)
        if class_key is None and str(key).startswith(("transforms.", "predicates.")) and key.count(".") >= 3:
            class_key = key[: -len(PLUGIN_VERSION)] + "type"
        if class_key is not None:
            out.append(VersionedKey(key, str(spec), class_key, str(config.get(class_key) or "").strip()))
    return out


def version_errors(config: Mapping[str, object], installed: Callable[[VersionedKey], str | Sequence[str] | None],
                   defined: bool = True) -> dict[str, list[str]]:
    """The errors of ``config``'s version keys, per key: ``installed(key)`` gives the installed version of the
    plugin the key is about (None: a plugin sparkcat does not know, refused on its class key instead).

    ``defined``: the framework's version keys are in the config's ConfigDef, whose validator reports a spec
    Maven cannot parse (a connector config's); else (the worker's converter keys) it is reported here.
    """
    out: dict[str, list[str]] = {}
    for versioned in versioned_keys(config):
        problem = spec_problem(versioned.spec)
        if problem is not None:
            if not defined or versioned.key not in CLASS_KEYS:
                out[versioned.key] = [invalid_spec(versioned.key, versioned.spec, problem)]
            continue
        version = installed(versioned)
        message = None if version is None else unsatisfied(versioned.key, versioned.spec, versioned.plugin, version)
        if message is not None:  # on the class key (or the alias's type) too, as Connect puts it
            out[versioned.key] = [message]
            out[versioned.class_key] = [message]
    return out


def _installed_converter(name: str, packages: Sequence[str]) -> str | None:
    """The version of converter (or header converter) ``name``: sparkcat's for a built-in, a plugin's
    ``plugin_version`` ("unknown" without one), None for a class neither (refused on its class key)."""
    from sparkcat.config.converter_keys import REFUSED_CONVERTERS
    from sparkcat.converters import HEADER_CONVERTERS, is_builtin_converter

    if name in REFUSED_CONVERTERS:
        return None
    if is_builtin_converter(name) or name in HEADER_CONVERTERS:
        return __version__
    if not plugins.in_packages(name, packages):
        return None
    try:
        return str(getattr(plugins.load_class(name, packages), "plugin_version", "unknown"))
    except Exception:  # noqa: BLE001 - a class that does not load is refused where the converter is made
        return None


def plugin_version_errors(cls: type[Connector], config: Mapping[str, object],
                          packages: Sequence[str]) -> dict[str, list[str]]:
    """KIP-891: each ``*.plugin.version`` key checked against the one installed version of its plugin.

    The connector's version is its ``version()``, a converter's as ``_installed_converter`` says, and every
    transformation's and predicate's sparkcat's own (they are built in).
    """
    from sparkcat.transforms.catalog import PREDICATES, TRANSFORMS

    def installed(versioned: VersionedKey) -> str | None:
        if versioned.class_key == "connector.class":
            return cls().version()
        if versioned.class_key in CLASS_KEYS.values():
            return _installed_converter(versioned.plugin, packages)
        registry = TRANSFORMS if versioned.key.startswith("transforms.") else PREDICATES
        return __version__ if versioned.plugin in registry else None

    return version_errors(_with_default_converters(config), installed)


def worker_converter_version_errors(converters: Mapping[str, str], packages: Sequence[str]
                                    ) -> dict[str, list[str]]:
    """KIP-891's ``key.converter.plugin.version`` (and value's, header's) of the worker config, against the
    worker's converters, each error naming the worker's key."""
    keys = set(CLASS_KEYS) | set(CLASS_KEYS.values())
    only = {k: v for k, v in _with_default_converters(converters).items() if k in keys}
    return version_errors(only, lambda versioned: _installed_converter(versioned.plugin, packages), defined=False)


def _with_default_converters(config: Mapping[str, object]) -> dict[str, object]:
    """``config`` with the converters that run where it names none (JsonConverter, SimpleHeaderConverter)."""
    from sparkcat.converters import JSON_CONVERTER, SIMPLE_HEADER_CONVERTER

    defaults = {"key.converter": JSON_CONVERTER, "value.converter": JSON_CONVERTER,
                "header.converter": SIMPLE_HEADER_CONVERTER}
    return {**config, **{k: str(config.get(k) or "").strip() or d for k, d in defaults.items()}}


def java_version_errors(config: Mapping[str, str], java_plugins: Any,
                        errors: Mapping[str, list[str]]) -> dict[str, list[str]]:
    """``errors`` plus KIP-891's for a Java connector's ``connector.plugin.version`` and converter versions.

    The connector's one installed version is the default Connect's definition of the key shows; a converter's,
    every copy of it Connect's plugin scan lists. Connect's own validation, which sparkcat's Java host runs, only
    checks that these specs parse (a Connect worker then picks among the versions installed); it judges the
    transformations' and predicates' versions itself, as Connect does.
    """
    out = {k: list(v) for k, v in errors.items()}
    asked = [v for v in versioned_keys(config) if v.key in CLASS_KEYS and v.plugin]  # Connect: a named converter
    listed: dict[str, list[str]] = {}
    for info in java_plugins.plugin_infos(False) if any(v.class_key != "connector.class" for v in asked) else []:
        listed.setdefault(str(info["class"]), []).append(str(info["version"]))

    def installed(versioned: VersionedKey) -> Sequence[str] | None:
        if versioned.key == "connector.plugin.version":
            keys = {k["name"]: k for k in java_plugins.plugin_config(versioned.plugin)}
            return [str((keys.get(versioned.key) or {}).get("default_value") or "undefined")]
        return next((v for name, v in listed.items() if versioned.plugin in (name, name.rsplit(".", 1)[-1])), None)

    for key, messages in version_errors({v.key: v.spec for v in asked} | {v.class_key: v.plugin for v in asked},
                                        installed).items():
        out.setdefault(key, []).extend(messages)
    return out
