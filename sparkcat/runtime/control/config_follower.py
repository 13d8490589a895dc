"""The config log followed into the herder by a thread of the driver, restarted with backoff whenever it stops.

The follower is the herder's only view of the config log: it reads what was appended since its last read
(``KeyedLog.read_since``: a Kafka topic read ``read_committed``, so records of a writer's aborted or open
transaction never reach the herder; or the local log) and hands the records to ``Herder.on_config_records`` in
log order. It asks every ``FAST_POLL_S`` for ``FAST_FOR_S`` after this driver appended to the log (``appended``:
the herder waits to read its own writes back) and every ``POLL_S`` otherwise (another driver's writes): each ask is
a round trip to the broker, ten a second were a fifth of an idle driver's Kafka client time (and two a second,
measured at 200 idle connectors, 0.04% of a core: one a second matches the herder's tick).

It is not a Spark query (the design's first version was a ``foreachBatch`` over the log): measured with 40
source connectors on a 2-core driver, the config stream's triggers waited behind the connectors' batches for
more than 30 s, 90 times a minute, so a REST request waited behind the load. A thread of its own keeps the
control plane's pace whatever the connectors do, and costs no Python process of Spark's.

A read or an apply that fails ends the follower; ``check`` (at the start of every herder pass) starts a new
one after capped exponential backoff, from the log's beginning, into a fresh config state that the herder
swaps in once it has read as far as the old one (``Herder.rebuild_config_state``), or once it has read the
whole log. A config topic deleted and created again ends before the position already read, or has a new topic
id (``LogRewound``, raised by the reader): then the fresh state replaces the old one only once the new topic was
read to its end, and its records, not the old state, say which connectors the cluster runs. A read that takes longer
than ``STALL_S`` (the broker is unreachable) is reported as a stall. Meanwhile ``outage`` holds the reason,
which ``/health`` reports.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from sparkcat.errors import LogRewound
from sparkcat.runtime.control.herder import Herder
from sparkcat.config.stores import config_log_spec
from sparkcat.runtime.supervision import Outage
from sparkcat.config.worker import WorkerConfig
from sparkcat.storage.factory import open_log
from sparkcat.storage.log import KeyedLog

log = logging.getLogger(__name__)

#: How often an idle follower asks the log for new records.
POLL_S = 1.0
#: How often it asks, and for how long, once this driver appended (its commit markers may come a moment later).
FAST_POLL_S = 0.05
FAST_FOR_S = 1.0
#: A read of the config log that runs longer than this is taken for a stall (the broker is unreachable).
STALL_S = 30.0


class ConfigStreamStopped(RuntimeError):
    """The follower ended without an error (it should never: only ``stop`` ends it)."""


class ConfigStreamStalled(RuntimeError):
    """One read of the config log has been running for too long."""


class ConfigFollower:
    """Owns the follower thread: start, watch (``check``, on the herder thread) and stop."""

    def __init__(self, worker: WorkerConfig, herder: Herder, opener: Callable[[], KeyedLog] | None = None,
                 appended: threading.Event | None = None):
        """``opener``: a fresh reader of the config log (default: the worker's config topic or local log);
        ``appended``: set by this driver's writer after each append (``ConfigLog.appended``)."""
        self.worker = worker
        self.herder = herder
        self.outage = Outage("The config log stream")
        self._open = opener or (lambda: open_log(config_log_spec(worker), worker.config_replication_factor))
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._appended = appended or threading.Event()
        self._fast_until = 0.0
        self._ended: BaseException | None = None
        self._reading_since: float | None = None
        self._retry_at = 0.0
        self._recreated = False  # the last follower ended because the config topic was recreated

    @property
    def running(self) -> bool:
        """Whether the follower thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        """Start following the log from its beginning (driver start-up)."""
        self._ended = None
        self._thread = threading.Thread(target=self._follow, name="sparkcat-config-log", daemon=True)
        self._thread.start()

    def check(self) -> None:
        """Start the follower again if it ended, once its backoff is over (herder thread, every pass)."""
        if self._stop.is_set():
            return
        if self.running:
            since = self._reading_since
            if since is not None and time.monotonic() - since >= STALL_S:
                self.outage.failed(ConfigStreamStalled(f"one read of the config log has been running for more than "
                                                       f"{STALL_S:.0f} s"))
            return
        if self._thread is not None:  # it ended: why, and when to try again
            error = self._ended or ConfigStreamStopped("the config log follower stopped")
            self._thread = None
            self._recreated = isinstance(error, LogRewound)
            self._retry_at = time.monotonic() + self.outage.failed(error)
        if time.monotonic() < self._retry_at:
            return
        self.herder.rebuild_config_state(self._recreated)  # before the start: its first records go to the fresh state
        self.start()

    def stop(self) -> None:
        self._stop.set()
        self._appended.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def _wait(self) -> None:
        """Until the next ask: ``POLL_S``, or less while this driver's own appends come back."""
        now = time.monotonic()
        if self._appended.wait(FAST_POLL_S if now < self._fast_until else POLL_S):
            self._appended.clear()
            self._fast_until = time.monotonic() + FAST_FOR_S

    def _follow(self) -> None:
        reader: Any = None
        try:
            reader = self._open()
            cursor = None
            while not self._stop.is_set():
                self._reading_since = time.monotonic()
                records, cursor = reader.read_since(cursor)
                self._reading_since = None
                if records:
                    self.herder.on_config_records(records)
                    continue
                if self.herder.rebuilding:
                    self.herder.config_log_read_to_end()
                if not self.outage.live:
                    self.outage.recovered()
                self._wait()
        except LogRewound as e:
            log.error("The config log was recreated: %s; reading it again from the beginning", e)
            self._ended = e
        except Exception as e:  # noqa: BLE001 - reported by check(), which starts a new follower after backoff
            self._ended = e
        finally:
            self._reading_since = None
            if reader is not None:
                try:
                    reader.close()
                except Exception:  # noqa: BLE001 - the reader is gone either way
                    log.debug("Closing the config log reader failed", exc_info=True)
