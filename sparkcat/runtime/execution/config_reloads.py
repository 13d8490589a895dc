"""Restarts a connector when a config provider's value ends its time to live (Connect's KIP-297 reload).

A Python ``ConfigProvider`` may give the values of a path a ``ConfigData.ttl`` (ms). When the driver resolves
a connector's config (as the connector starts, or its task configs are generated again) and a path came with
one, and the connector's ``config.action.reload`` is ``restart`` (the default), the connector and its tasks
restart once that time has passed: the restart resolves the placeholders again, so the connector and its
tasks (which resolve theirs on the executors as they start) get the provider's new value. ``none`` schedules
nothing. As in Connect's ``WorkerConfigTransformer.scheduleReload``, a new resolution replaces the reload
scheduled earlier for the same connector and path.

Unlike Connect (where a reload fires as a herder request even for a connector deleted meanwhile, and fails),
deleting the connector, stopping it or giving it a new config cancels its reloads (a new config resolves, and
schedules, again), and so does this driver ceasing to lead. Connect restarts only the ``Connector`` instance;
sparkcat restarts its tasks too, which would otherwise keep the old value (their configs hold the placeholder,
so they are the same as before and Connect would not restart them either).

The schedule is only a table of due times: the reconciler asks for the due reloads on every herder tick
(``TICK_S``, a second) and restarts those connectors on the herder thread, so no timer threads exist.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping

log = logging.getLogger(__name__)

RELOAD_KEY = "config.action.reload"


def reloads_on_ttl(config: Mapping[str, str]) -> bool:
    """Whether ``config.action.reload`` asks for restarts (``restart``, its default; case as Connect ignores it)."""
    action = config.get(RELOAD_KEY)
    return action is None or str(action).strip().lower() == "restart"


class ConfigReloads:
    """The reloads scheduled per connector and provider path: due times on ``clock`` (monotonic seconds)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self._due: dict[str, dict[str, float]] = {}   # connector -> provider path -> when its reload is due
        self._lock = threading.Lock()                 # scheduled from the herder thread, read by status/tests

    def schedule(self, connector: str, config: Mapping[str, str], ttls: Mapping[str, int]) -> None:
        """Each of ``ttls`` (path -> ms) of a resolution of ``connector``'s ``config``, unless its action is ``none``."""
        if not ttls or not reloads_on_ttl(config):
            return
        now = self._clock()
        with self._lock:
            paths = self._due.setdefault(connector, {})
            for path, ttl in ttls.items():
                paths[path] = now + ttl / 1000.0  # replaces the earlier reload of this path: it is stale
        for path, ttl in sorted(ttls.items()):
            log.info("Scheduling a restart of connector %s in %d ms: config provider path %r has a ttl (%s=restart)",
                     connector, ttl, path, RELOAD_KEY)

    def cancel(self, connector: str) -> None:
        """Forget the connector's reloads (deleted, stopped, replaced by a new config)."""
        with self._lock:
            self._due.pop(connector, None)

    def clear(self) -> None:
        """Forget every reload (this driver stops leading)."""
        with self._lock:
            self._due.clear()

    def due(self) -> dict[str, list[str]]:
        """The connectors with a reload due now, each with the paths whose ttl ended (not taken: see ``fired``)."""
        now = self._clock()
        with self._lock:
            return {name: sorted(p for p, at in paths.items() if at <= now)
                    for name, paths in self._due.items() if any(at <= now for at in paths.values())}

    def fired(self, connector: str, paths: list[str]) -> None:
        """The connector restarts for ``paths``: their reloads are done (its restart schedules new ones)."""
        with self._lock:
            scheduled = self._due.get(connector, {})
            for path in paths:
                scheduled.pop(path, None)
            if not scheduled:
                self._due.pop(connector, None)
        log.info("Restarting connector %s and its tasks: the ttl of config provider path(s) %s ended (%s=restart)",
                 connector, ", ".join(repr(p) for p in paths), RELOAD_KEY)

    def scheduled(self, connector: str) -> dict[str, float]:
        """Path -> seconds until its reload (negative when due), for the connector."""
        now = self._clock()
        with self._lock:
            return {path: at - now for path, at in self._due.get(connector, {}).items()}
