"""Task reconfiguration requests of running connectors (``ConnectorContext.request_task_reconfiguration``).

A connector may ask from any thread; the herder's next pass (woken at once) asks the connector
for its task configs again, and the reconciler commits them when they changed, which restarts the
connector's query with the new set, as Connect's herder does for ``requestTaskReconfiguration``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from sparkcat import plugins
from sparkcat.api.connector import ConnectorContext

log = logging.getLogger(__name__)


class Reconfigurations:
    """Pending requests by connector name, and the contexts that raise them."""

    def __init__(self, wakeup: threading.Event) -> None:
        """``wakeup``: set on each request, so the herder's next pass comes at once."""
        self._lock = threading.Lock()
        self._pending: set[str] = set()
        self._wakeup = wakeup

    def context(self, name: str, on_error: Callable[[BaseException], None]) -> ConnectorContext:
        """The context handed to connector ``name`` before it starts."""
        return ConnectorContext(lambda: self.request(name), on_error)

    def request(self, name: str) -> None:
        with self._lock:
            if name in self._pending:
                return
            self._pending.add(name)
        log.info("Connector %s requested task reconfiguration", name)
        self._wakeup.set()

    def take(self, name: str) -> bool:
        """True once per request: the caller regenerates the connector's task configs now."""
        with self._lock:
            if name not in self._pending:
                return False
            self._pending.discard(name)
            return True


def with_task_class(task_config: dict[str, str], connector: object, config: dict[str, str]) -> dict[str, str]:
    """A task config as Connect's Worker completes it: ``task.class``, and a sink's ``topics``/``topics.regex``."""
    out = {**task_config, plugins.TASK_CLASS_CONFIG: plugins.task_class_name(connector)}
    if plugins.connector_type(type(connector)) == "sink":
        out.update({k: config[k] for k in ("topics", "topics.regex") if config.get(k)})
    return out
