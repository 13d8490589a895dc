"""The rebalances of the drivers' leader group as Connect's ``connect-worker-rebalance-metrics`` reports a worker's.

A Connect worker's rebalance is a join round of its cluster's group: it starts when the worker revokes its
assignment (or first joins) and completes when the new assignment arrives (``DistributedHerder.HerderMetrics``).
A driver's group (``control.membership``) rebalances the same way, eagerly: every member revokes, joins, and gets
its assignment, and the leadership can only move at that point. ``RebalanceLog`` records those rounds as the
membership's callbacks see them; ``epoch`` is the group generation the completed round gave this member, as
Connect reports its group generation.

Connect's ``rebalance-avg-time-ms`` and ``rebalance-max-time-ms`` are windowed (its ``Avg``/``Max`` over the
metrics window, NaN without a sample); they are computed here over the rounds completed in the last
``window_s`` (``rest.connect_metrics.WINDOW_S``), as sparkcat's other windowed Connect metrics are.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from dataclasses import dataclass


@dataclass(frozen=True)
class RebalanceView:
    """``connect-worker-rebalance-metrics`` at one scrape (times in ms, NaN or inf as Connect answers them)."""

    leader_name: str | None
    epoch: int | None
    rebalancing: bool
    completed_total: int
    avg_time_ms: float
    max_time_ms: float
    time_since_last_ms: float


class RebalanceLog:
    """Join rounds of this driver's membership: ``started`` at a revoke or join, ``completed`` at an assignment.

    >>> log = RebalanceLog(clock=iter([10.0, 10.25, 12.0]).__next__)
    >>> log.started(); log.completed(7)
    >>> v = log.view("http://a:8083")
    >>> (v.epoch, v.rebalancing, v.completed_total, v.avg_time_ms, v.max_time_ms, v.time_since_last_ms)
    (7, False, 1, 250.0, 250.0, 1750.0)
    """

    def __init__(self, window_s: float = 30.0, clock=time.monotonic):
        self._clock, self._window_s = clock, window_s
        self._lock = threading.Lock()
        self._started_at: float | None = None
        self._last_completed: float | None = None
        self._epoch: int | None = None
        self._total = 0
        self._recent: deque[tuple[float, float]] = deque(maxlen=1000)  # (completed at, duration ms)

    def started(self) -> None:
        """A round began (this member revoked its assignment, or joins); a round already begun keeps its start."""
        with self._lock:
            if self._started_at is None:
                self._started_at = self._clock()

    def completed(self, generation: int | None) -> None:
        """The round's assignment arrived, with the group ``generation`` it belongs to (None if unknown)."""
        now = self._clock()
        with self._lock:
            start = self._started_at if self._started_at is not None else now
            self._started_at, self._last_completed = None, now
            self._total += 1
            self._epoch = generation if generation is not None and generation >= 0 else self._epoch
            self._recent.append((now, max(0.0, (now - start) * 1000)))

    def view(self, leader_name: str | None) -> RebalanceView:
        now = self._clock()
        with self._lock:
            window = [ms for at, ms in self._recent if at > now - self._window_s]
            since = math.inf if self._last_completed is None else (now - self._last_completed) * 1000
            return RebalanceView(leader_name, self._epoch, self._started_at is not None, self._total,
                                 sum(window) / len(window) if window else math.nan,
                                 max(window) if window else math.nan, since)
