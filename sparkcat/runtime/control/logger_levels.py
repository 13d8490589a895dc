"""The driver's logger levels under Kafka Connect's (log4j) names and rules, as ``/admin/loggers`` shows and sets
them, and the cluster-scoped levels (KIP-976) the herder applies from the config log, REST or not.

Level names map as log4j's do onto Python's numbers: ``TRACE`` is 5 (below DEBUG),
``WARN`` is WARNING, ``FATAL`` is CRITICAL, ``OFF`` is above every level, ``ALL`` is 1.
Like Connect's ``Loggers``: the listing shows the root logger and every logger whose
level was set explicitly; setting a namespace sets it and every known logger below it,
and returns their names.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from sparkcat.errors import BadRequestError, NotFoundError, StorageError

log = logging.getLogger(__name__)

ROOT = "root"
TRACE = 5
OFF = logging.CRITICAL + 10

LEVELS: dict[str, int] = {
    "OFF": OFF, "FATAL": logging.CRITICAL, "ERROR": logging.ERROR, "WARN": logging.WARNING,
    "INFO": logging.INFO, "DEBUG": logging.DEBUG, "TRACE": TRACE, "ALL": 1,
}


def level_name(level: int) -> str:
    """Connect's name for a Python level: the nearest log4j level at or below it.

    >>> level_name(logging.WARNING), level_name(logging.CRITICAL), level_name(15), level_name(0)
    ('WARN', 'FATAL', 'DEBUG', 'ALL')
    """
    best = "ALL"
    for name, number in sorted(LEVELS.items(), key=lambda item: item[1]):
        if number <= level:
            best = name
    return best


def parse_level(text: Any) -> int:
    """A requested level; Connect answers 404 for a name log4j does not know."""
    if text is None:
        raise BadRequestError("Desired 'level' parameter was not specified in request.")
    try:
        return LEVELS[str(text).strip().upper()]
    except KeyError:
        raise NotFoundError(f"invalid log level '{text}'.") from None


class LoggerLevels:
    """Reads and sets logger levels, remembering when each was last changed (Connect's ``last_modified``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last_modified: dict[str, int] = {}

    @staticmethod
    def _known() -> dict[str, logging.Logger]:
        manager = logging.root.manager
        return {name: lg for name, lg in list(manager.loggerDict.items()) if isinstance(lg, logging.Logger)}

    def _entry(self, name: str, logger: logging.Logger) -> dict[str, Any]:
        level = logger.level if logger.level != logging.NOTSET else logger.getEffectiveLevel()
        return {"level": level_name(level), "last_modified": self._last_modified.get(name)}

    def all_levels(self) -> dict[str, dict[str, Any]]:
        """``GET /admin/loggers``: root and every logger with a level of its own, by name."""
        with self._lock:
            out = {name: self._entry(name, lg) for name, lg in self._known().items() if lg.level != logging.NOTSET}
            out[ROOT] = self._entry(ROOT, logging.getLogger())
            return dict(sorted(out.items()))

    def level(self, name: str) -> dict[str, Any]:
        """``GET /admin/loggers/NAME``: its level, or the effective one when it has none."""
        with self._lock:
            if name.lower() == ROOT:
                return self._entry(ROOT, logging.getLogger())
            logger = self._known().get(name)
            if logger is None:
                raise NotFoundError(f"Logger {name} not found.")
            return self._entry(name, logger)

    def set_level(self, namespace: str, level: int) -> list[str]:
        """Set ``namespace`` and every known logger below it; the names affected, sorted."""
        with self._lock:
            now = int(time.time() * 1000)
            known = self._known()
            if namespace.lower() == ROOT:
                targets = {ROOT: logging.getLogger(), **known}
            else:
                targets = {n: lg for n, lg in known.items() if n == namespace or n.startswith(namespace + ".")}
                targets.setdefault(namespace, logging.getLogger(namespace))
            for name, logger in targets.items():
                if logger.level != level:
                    logger.setLevel(level)
                    self._last_modified[name] = now
            log.info("Set level of logger namespace %s and children to %s",
                                                    namespace, level_name(level))
            return sorted(targets)


class ClusterLevels:
    """Applies ``logger-cluster-`` records (KIP-976) written after this driver started to its loggers.

    As in Connect, records older than the start are not applied: they were meant for the workers
    running then. Called on every herder pass (a herder watch, wired by ``bootstrap.Driver`` whether
    REST runs or not); one log line per level applied. ``log_end`` is the config log's end offset,
    ``levels`` the herder's current ``{namespace: (level, offset)}``.
    """

    def __init__(self, log_end: Callable[[], int], levels: Callable[[], dict[str, tuple[str, int]]],
                 loggers: LoggerLevels) -> None:
        self._log_end, self._levels, self._loggers = log_end, levels, loggers
        self._since: int | None = None
        try:  # the config log's end now; if it cannot be read now, at the first pass
            self._since = log_end()
        except StorageError:
            pass
        self._applied: dict[str, int] = {}

    def apply_new(self) -> None:
        if self._since is None:
            self._since = self._log_end()
        for namespace, (level, offset) in self._levels().items():
            if offset < self._since or self._applied.get(namespace) == offset:
                continue
            self._applied[namespace] = offset
            try:
                self._loggers.set_level(namespace, parse_level(level))
            except NotFoundError:
                log.warning("Ignoring cluster logger level %r for %s: not a level",
                                                             level, namespace)
