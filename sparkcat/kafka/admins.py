"""The process's AdminClients, one per settings: the driver's metadata look-ups for every query, and an executor's
topic creation, each share one client of the same settings instead of one per call."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from sparkcat.kafka.client_settings import admin_settings

__all__ = ["worker_admin", "drop_admins"]

#: A clearly named cache: AdminClients by their settings.
_ADMINS: dict[tuple[tuple[str, str], ...], Any] = {}
_ADMINS_LOCK = threading.Lock()


def worker_admin(bootstrap: str, kafka_config: Mapping[str, Any], overrides: Mapping[str, Any] | None = None) -> Any:
    """A cached AdminClient for the worker's Kafka (its admin settings, then ``overrides``), shared by all queries."""
    from confluent_kafka.admin import AdminClient
    conf = admin_settings(bootstrap, kafka_config, overrides)
    key = tuple(sorted(conf.items()))
    with _ADMINS_LOCK:
        admin = _ADMINS.get(key)
        if admin is None:
            admin = _ADMINS[key] = AdminClient(conf)
        return admin


def drop_admins() -> None:
    """Forget the cached AdminClients (a driver stopping): an AdminClient has no close, dropping the last
    reference ends its threads and connections; one in use elsewhere stays valid, a new one is made on next use."""
    with _ADMINS_LOCK:
        _ADMINS.clear()
