"""The config log's stream into the herder, restarted with backoff whenever it stops.

The stream (``spark.config_log_source``) is the herder's only view of the config log. It ends
when reading the log fails (the broker is down longer than Spark's Kafka source retries, a
local log cannot be read) or when the herder's ``on_config_records`` raises. ``check`` runs at
the start of every herder pass: a stream that is not active is started again after capped
exponential backoff, from the log's beginning with a fresh checkpoint, into a fresh config state
that the herder swaps in once it has read as far as the old one (``Herder.rebuild_config_state``).
Until then ``outage`` holds the reason, which ``/health`` reports.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from sparkcat.runtime.herder import Herder
from sparkcat.runtime.names import CONFIG_STREAM, dir_name
from sparkcat.runtime.stores import config_log_spec
from sparkcat.runtime.supervision import Outage
from sparkcat.runtime.worker_config import WorkerConfig
from sparkcat.spark import hadoop_fs
from sparkcat.spark.pools import CONTROL_POOL, in_pool
from sparkcat.storage.log import LogRecord

log = logging.getLogger("sparkcat.driver")


#: A trigger of the config stream that runs longer than this is taken for a stall (the broker is
#: unreachable: Spark's Kafka source keeps retrying its offset requests for minutes before it fails).
STALL_S = 30.0


class ConfigStreamStopped(RuntimeError):
    """The config stream's query ended without an exception (stopped by someone else than the driver)."""


class ConfigStreamStalled(RuntimeError):
    """The config stream's query is active but one trigger has been running for too long."""


class ConfigStream:
    """Owns the config stream's query: start, watch (``check``, on the herder thread) and stop."""

    def __init__(self, spark: Any, worker: WorkerConfig, herder: Herder):
        self.spark = spark
        self.worker = worker
        self.herder = herder
        self.outage = Outage("The config log stream")
        self.query: Any = None
        self._retry_at = 0.0
        self._stopped = False
        self._busy_since: float | None = None  # when a trigger still running was first seen

    def start(self) -> None:
        """Start the stream (driver start-up); errors propagate: the driver cannot start without it."""
        self.query = self._start_query()

    def check(self) -> None:
        """Restart the stream if it is not active, once its backoff is over (herder thread, every pass)."""
        if self._stopped:
            return
        query = self.query
        if query is not None:
            if query.isActive:
                self._check_progress(query)
                return
            self.query, self._busy_since = None, None
            error = _ended_with(query)
            self._retry_at = time.monotonic() + self.outage.failed(error)
        if time.monotonic() < self._retry_at:
            return
        try:
            self.herder.rebuild_config_state()  # before the start: its first batch goes to the fresh state
            self.query = self._start_query()
        except Exception as e:  # noqa: BLE001 - e.g. Spark refused the start; tried again after backoff
            self._retry_at = time.monotonic() + self.outage.failed(e)

    def _check_progress(self, query: Any) -> None:
        """An active stream is live unless one trigger has been running for ``STALL_S`` (it waits for Kafka)."""
        try:
            status = query.status
        except Exception:  # noqa: BLE001 - the query ended while we asked: the next check restarts it
            return
        now = time.monotonic()
        if not status.get("isTriggerActive"):
            self._busy_since = None
        elif self._busy_since is None:
            self._busy_since = now
        if self._busy_since is not None and now - self._busy_since >= STALL_S:
            self.outage.failed(ConfigStreamStalled(
                f"one trigger has been running for more than {STALL_S:.0f} s ({status.get('message')})"))
        elif not self.outage.live and self._busy_since is None and not self.herder.rebuilding:
            self.outage.recovered()

    def stop(self) -> None:
        self._stopped = True
        if self.query is not None:
            self.query.stop()

    @property
    def checkpoint(self) -> str:
        """This driver's checkpoint of the stream.

        Connector checkpoints never start with "_" (runtime/names.py), so this one is the stream's alone;
        one per driver, as drivers of a cluster may share checkpoint.dir (a standby must not delete the
        leader's while it runs).
        """
        return hadoop_fs.child_path(self.worker.checkpoint_root, f"_{CONFIG_STREAM}-{dir_name(self.herder.driver_id)}")

    def _start_query(self) -> Any:
        from sparkcat.spark.config_log_source import config_log_stream

        checkpoint = self.checkpoint
        hadoop_fs.delete(self.spark, checkpoint)  # state is rebuilt from the log's beginning
        herder = self.herder

        def apply(batch_df, batch_id: int) -> None:
            rows = sorted(batch_df.collect(), key=lambda r: r.offset)
            herder.on_config_records([LogRecord(r.offset, r.key, None if r.value is None else r.value.encode())
                                      for r in rows])

        with in_pool(self.spark, CONTROL_POOL):  # ahead of connector batches (see spark/pools.py)
            return (config_log_stream(self.spark, config_log_spec(self.worker))
                    .writeStream.foreachBatch(apply).queryName(CONFIG_STREAM)
                    .option("checkpointLocation", str(checkpoint))
                    .trigger(processingTime="500 milliseconds").start())


def _ended_with(query: Any) -> BaseException:
    """Why a query is no longer active: its exception, or ConfigStreamStopped."""
    try:
        error = query.exception()
    except Exception as e:  # noqa: BLE001 - asking can fail too (Spark stopping)
        return e
    return error if error is not None else ConfigStreamStopped("the config log stream's query stopped")
