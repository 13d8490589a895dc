"""How a connector comes back from failures: transient ones retried with backoff, FAILED ones restarted.

``Retries`` is the run of transient failures (``failures.FailureKind.OUTAGE`` and ``RETRIABLE``) of one
connector's query: the query starts again from its checkpoint after Connect's backoff (300 ms doubling,
a random delay below ``errors.retry.delay.max.ms`` once past it); an outage for as long as it takes, a
connector's ``RetriableError`` for ``errors.retry.timeout`` ms (0, the default: not at all; -1: forever),
after which its tasks are FAILED.

``AutoRestart`` is Strimzi's auto-restart of FAILED connectors and tasks: restart number n + 1
comes ``min(n * n + n, 60)`` backoff units (a minute by default) after restart n, at most
``auto.restart.max.restarts`` times (-1: no limit); the count is reset once the connector has
run that long without failing again. The lifecycle applies both (``lifecycle.ConnectorLifecycle``).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from sparkcat.config.connector import ConnectorSettings
from sparkcat.config.worker import AutoRestartPolicy
from sparkcat.runtime.execution.failures import Failure, FailureKind
from sparkcat.runtime.supervision import connect_retry_delay

log = logging.getLogger(__name__)

@dataclass
class Retries:
    """The run of transient failures of one connector's query, and when it may start again."""

    attempts: int = 0
    first_at: float | None = None
    not_before: float = 0.0
    marker: str | None = None

    def retry(self, name: str, failure: Failure, settings: ConnectorSettings, now: float | None = None) -> bool:
        """True when ``failure`` is to be retried (not a task failure); sets when."""
        if not failure.transient:
            return False
        kind, marker, text = failure.kind, failure.marker or failure.kind.value, failure.trace
        now = time.monotonic() if now is None else now
        first = self.first_at if self.first_at is not None else now
        elapsed_ms = (now - first) * 1000
        remaining = None
        if kind == FailureKind.RETRIABLE and settings.retry_timeout_ms >= 0:
            remaining = settings.retry_timeout_ms - elapsed_ms
            if remaining <= 0:
                log.warning("Connector %s: retries of %s ran out after %.0f ms (errors.retry.timeout=%d)",
                            name, marker.rstrip(":"), elapsed_ms, settings.retry_timeout_ms)
                return False
        self.first_at, self.attempts = first, self.attempts + 1
        delay = connect_retry_delay(self.attempts, settings.retry_delay_max_ms, remaining)
        self.not_before = now + delay
        if marker != self.marker:
            log.warning("Connector %s: its query failed with a transient error (%s); restarting it from its "
                        "checkpoint with backoff until it works%s: %s\n%s", name, marker.rstrip(":"),
                        "" if remaining is None else f" (for {settings.retry_timeout_ms} ms at most)", failure.reason, text)
            self.marker = marker
        return True

    def due(self, now: float | None = None) -> bool:
        """Whether the query may start (again) now."""
        return (time.monotonic() if now is None else now) >= self.not_before

    def succeeded(self, name: str) -> None:
        """A batch was committed: the run of failures, if any, is over (logged once)."""
        if self.first_at is None:
            return
        log.info("Connector %s recovered from a transient error after %d restart(s) in %.1f s", name,
                 self.attempts, time.monotonic() - self.first_at)
        self.attempts, self.first_at, self.not_before, self.marker = 0, None, 0.0, None


@dataclass
class AutoRestart:
    """Automatic restarts of one connector: how many so far and when the last one was."""

    count: int = 0
    last_at: float | None = None           # monotonic
    last_wall: float | None = None         # epoch seconds, for the status

    def due(self, policy: AutoRestartPolicy, failing: bool, now: float | None = None) -> bool:
        """True when a failing connector is to be restarted now; resets the count after a good run."""
        now = time.monotonic() if now is None else now
        since = None if self.last_at is None else now - self.last_at
        if not failing:
            if self.count and since is not None and since > policy.backoff_s(self.count):
                self.count = 0
            return False
        if not policy.enabled or (0 <= policy.max_restarts <= self.count):
            return False
        return since is None or since >= policy.backoff_s(self.count)

    def restarted(self, now: float | None = None) -> None:
        self.count += 1
        self.last_at = time.monotonic() if now is None else now
        self.last_wall = time.time()

    def status(self, name: str) -> dict[str, Any] | None:
        """Strimzi's ``autoRestart`` status (``AutoRestartStatus``), once the connector was restarted."""
        if self.last_wall is None:
            return None
        stamp = datetime.fromtimestamp(self.last_wall, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        return {"count": self.count, "connectorName": name, "lastRestartTimestamp": stamp}

