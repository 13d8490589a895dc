"""Kafka Connect's ``ConfigProvider`` for Python: where ``${NAME:PATH:KEY}`` placeholders get their values.

A provider (a Vault client, a cloud secret manager) is a class in one of the worker's
``plugin.packages``, named by the worker keys::

    config.providers: vault
    config.providers.vault.class: mycompany.secrets.vault:VaultConfigProvider
    config.providers.vault.param.address: https://vault:8200

As in Connect (``org.apache.kafka.common.config.provider.ConfigProvider``), the worker
makes one instance per provider name and process, calls ``configure`` with the
``param.*`` settings (``address`` above), then ``get(path, keys)`` for the keys a config
asks of one path, and ``close`` when the process ends. Values it returns are secrets to
sparkcat: they are scrubbed from every log record and trace.

``ConfigData.ttl`` (ms, None for none) is a value's time to live: as in Connect (KIP-297), a
connector whose config resolved a value with one restarts, with its tasks, when it ends, resolving
its placeholders again, unless its ``config.action.reload`` is ``none``
(``sparkcat.runtime.execution.config_reloads``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class ConfigData:
    """What a provider returns for one path: ``data`` (key -> value) and an optional time to live in ms."""

    data: Mapping[str, str] = field(default_factory=dict)
    ttl: int | None = None


class ConfigProvider(ABC):
    """Connect's ConfigProvider: ``configure``, ``get(path)``, ``get(path, keys)``, ``close``.

    A key a provider does not know is simply absent from the ``ConfigData`` it returns; the
    caller reports the placeholder as unresolved, naming the config key (never the value).
    Raising ``ValueError`` gives a message that reaches the user (it must hold no secret).
    """

    def configure(self, params: Mapping[str, str]) -> None:
        """The provider's ``config.providers.NAME.param.*`` settings, without that prefix."""

    @abstractmethod
    def get(self, path: str, keys: set[str] | frozenset[str] | None = None) -> ConfigData:
        """Every value at ``path`` (``keys`` None), or only those of ``keys``; ``path`` is "" in ``${NAME:KEY}``."""

    def close(self) -> None:
        """Release what ``configure`` acquired (connections, tokens)."""
