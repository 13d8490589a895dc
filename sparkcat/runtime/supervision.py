"""Keeping the driver's long-lived loops alive: backoff, outages logged once, no exception lost.

- ``Backoff``: capped exponential delays (the herder loop and the config stream: 0.5 s doubling
  up to 30 s).
- ``connect_retry_delay``: Kafka Connect's ``RetryWithToleranceOperator.backoff`` for
  ``errors.retry.timeout`` / ``errors.retry.delay.max.ms``: 300 ms doubling; past the maximum a
  random delay below it; never past the deadline.
- ``Outage``: the state of one supervised loop (live, or down since when and why). It logs one
  ERROR line with the trace when the outage begins or its cause changes, and one INFO line when
  the loop recovers, never one per retry; ``/health`` reads its ``reason``.
- ``install_thread_excepthook``: an exception that ends any thread is logged with its trace.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)

#: Connect's ``RetryWithToleranceOperator.RETRIES_DELAY_MIN_MS``: the first retry waits this long.
RETRIES_DELAY_MIN_MS = 300


@dataclass(frozen=True)
class Backoff:
    """Delays of ``initial_s`` doubling per attempt, capped at ``max_s`` (attempt 1 is the first retry).

    >>> [Backoff(0.5, 4.0).delay(n) for n in (1, 2, 3, 4, 5)]
    [0.5, 1.0, 2.0, 4.0, 4.0]
    """

    initial_s: float = 0.5
    max_s: float = 30.0

    def delay(self, attempt: int) -> float:
        return min(self.max_s, self.initial_s * (2 ** max(0, min(attempt - 1, 30))))


def connect_retry_delay(attempt: int, delay_max_ms: int, remaining_ms: float | None = None) -> float:
    """Seconds to wait before retry ``attempt`` (1-based), as Connect's RetryWithToleranceOperator.

    ``300 ms << (attempt - 1)``; once that passes ``delay_max_ms``, a random delay in
    ``[0, delay_max_ms)``; never more than ``remaining_ms`` (the time left before
    ``errors.retry.timeout`` runs out; None: no deadline).

    >>> connect_retry_delay(1, 60000), connect_retry_delay(3, 60000), connect_retry_delay(3, 60000, 500)
    (0.3, 1.2, 0.5)
    """
    delay = RETRIES_DELAY_MIN_MS << max(0, min(attempt - 1, 40))
    if delay > delay_max_ms:
        delay = random.random() * delay_max_ms
    if remaining_ms is not None:
        delay = min(delay, max(0.0, remaining_ms))
    return delay / 1000.0


def _cause(error: BaseException) -> str:
    r"""What identifies an outage's cause: exception type and first line of its message.

    A Spark query's exception carries the Python traceback of the batch function that failed; then
    the exception it names is the cause.

    >>> _cause(RuntimeError("Python Proxy. Traceback (most recent call last):\n  File 'x'\nStorageError: down\n  at"))
    'RuntimeError: StorageError: down'
    """
    lines = str(error).strip().splitlines()
    first = lines[0] if lines else ""
    if "Traceback (most recent call last)" in first or any(line.startswith("Traceback (") for line in lines):
        start = next(i for i, line in enumerate(lines) if "Traceback (most recent call last)" in line)
        raised = [line for line in lines[start + 1:] if line and not line[0].isspace()
                  and not line.startswith(("Traceback", "During handling", "The above exception"))]
        if raised:
            first = raised[0]
    return f"{type(error).__name__}: {first[:300]}"


@dataclass
class Outage:
    """Whether one supervised loop (``name``) is live; logs once per change of state or cause.

    ``failed(error)`` is called for every failed attempt and returns how long to wait before the
    next; ``recovered()`` after an attempt that worked. An outage ends only once attempts have
    worked for ``confirm_s`` in a row: a pass that happened not to touch the broken store does not
    end it (and a flapping outage is not logged again and again). Thread-safe for one writer and
    any readers.
    """

    name: str
    backoff: Backoff = field(default_factory=Backoff)
    confirm_s: float = 2.0
    reason: str | None = None
    since: float | None = None
    attempts: int = 0
    _cause: str | None = None
    _ok_since: float | None = None

    @property
    def live(self) -> bool:
        return self.reason is None

    def failed(self, error: BaseException) -> float:
        """Record a failed attempt; the first, or one with a new cause, is logged with its trace."""
        cause = _cause(error)
        self.attempts += 1
        self._ok_since = None
        if self.since is None:
            self.since = time.monotonic()
        if cause != self._cause:
            log.error("%s is down (retrying with backoff up to %.0f s): %s", self.name, self.backoff.max_s, cause,
                      exc_info=error)
            self._cause = cause
        self.reason = f"{self.name} is not running: {cause}"
        return self.backoff.delay(self.attempts)

    def recovered(self) -> None:
        """Record an attempt that worked; logs once when it ends an outage."""
        if self.since is None:
            return
        now = time.monotonic()
        if self._ok_since is None:
            self._ok_since = now
        if now - self._ok_since < self.confirm_s:
            return
        log.info("%s recovered after %d failed attempt(s) in %.1f s", self.name, self.attempts,
                 time.monotonic() - self.since)
        self.reason, self.since, self.attempts, self._cause, self._ok_since = None, None, 0, None, None


def unhealthy_reason(herder: Any, *outages: Outage | None) -> str | None:
    """Why a driver is not live (``/health`` answers 503 with it): the herder's outage or thread, then ``outages``."""
    if herder is None:
        return None
    for outage in (herder.outage, *outages):
        if outage is not None and not outage.live:
            return outage.reason
    if herder.thread_ended:
        return "The herder is not running: its thread ended"
    return None


def _log_uncaught(args: threading.ExceptHookArgs) -> None:
    if args.exc_type is SystemExit:
        return
    name = args.thread.name if args.thread is not None else "?"
    log.error("Thread %s ended with an uncaught exception", name,
              exc_info=(args.exc_type, args.exc_value, args.exc_traceback))


def install_thread_excepthook() -> None:
    """Log, with its trace, any exception that ends a thread (Python's default prints to stderr only)."""
    threading.excepthook = _log_uncaught
