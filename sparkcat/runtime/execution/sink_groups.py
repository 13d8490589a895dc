"""Keeps a sink connector's consumer group ``connect-NAME`` in step with its positions (see sparkcat.kafka.sink_groups).

After each batch the new positions are committed to the group, off the batch's thread (``GroupMirror``); when the offsets API alters or
resets a sink's offsets, the group is rewritten to match, as Connect's offsets API alters the
group, so a later start that falls back on the group never resurrects forgotten positions.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Mapping
from typing import Any

from sparkcat.kafka.client_settings import consumer_settings
from sparkcat.kafka.sink_groups import COMMITTERS, commit_positions, sink_group_id
from sparkcat.kafka.admins import worker_admin
from sparkcat.spark.driver.kafka_input import admin_identity_consumer
from sparkcat.spark.query_plan import QueryPlan

log = logging.getLogger(__name__)
# A group whose commit failed is skipped for a while, so a group coordinator that is still recovering (a broker
# restart) is not asked again for every batch; a later batch's positions cover the same partitions.
MIRROR_TIMEOUT_S = 5.0
MIRROR_RETRY_AFTER_S = 60.0
IDLE_SWEEP_S = 30.0  # how often the mirror closes the committers unused for ``IDLE_CLOSE_S``


def _positions(pairs: Iterable[tuple[dict[str, Any], Any]]) -> list[tuple[str, int, int]]:
    """(topic, partition, next offset) of sink offsets in Connect's shape; other entries are skipped."""
    out = []
    for partition, offset in pairs:
        if isinstance(offset, dict) and "kafka_offset" in offset and "kafka_topic" in partition:
            out.append((str(partition["kafka_topic"]), int(partition["kafka_partition"]), int(offset["kafka_offset"])))
    return out


class GroupMirror:
    """Commits batches' positions to the sinks' groups on a thread of its own, the newest per partition.

    A batch only hands its positions over (``submit``): a commit to the group coordinator takes a round trip
    or, while it recovers, up to ``MIRROR_TIMEOUT_S``, so it runs on a thread of its own, never a batch's. Positions
    queued for a group are merged, so one commit carries the newest of several batches.
    """

    def __init__(self, sweep_s: float = IDLE_SWEEP_S, idle_close_s: float | None = None) -> None:
        """``sweep_s``: how often committers unused for ``idle_close_s`` (``IDLE_CLOSE_S``) are closed."""
        self._sweep_s, self._idle_close_s = sweep_s, idle_close_s
        self._pending: dict[str, tuple[QueryPlan, dict[tuple[str, int], int]]] = {}
        self._failing: dict[str, float] = {}  # group -> when its last commit failed
        self._busy: dict[str, threading.Lock] = {}
        self._cond = threading.Condition()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="sparkcat-group-mirror", daemon=True)
        self._thread.start()

    def submit(self, plan: QueryPlan, offsets: list[tuple[dict[str, Any], Any]]) -> None:
        """Queue a committed batch's positions for the sink's group (nothing without Kafka)."""
        positions = _positions(offsets)
        if not plan.bootstrap_servers or not positions:
            return
        group = sink_group_id(plan.connector, plan.connector_config)
        with self._cond:
            _, merged = self._pending.get(group, (plan, {}))
            for topic, partition, offset in positions:
                merged[(topic, partition)] = max(offset, merged.get((topic, partition), -1))
            self._pending[group] = (plan, merged)
            self._cond.notify()

    def discard(self, group: str) -> None:
        """Forget what is queued for ``group`` and wait for a commit in flight (an offsets request replaces it)."""
        with self._cond:
            self._pending.pop(group, None)
            busy = self._busy.setdefault(group, threading.Lock())
        with busy:
            pass

    def forget(self, group: str) -> None:
        """The sink's connector was deleted: nothing more is committed for it, its committing consumer closes."""
        self.discard(group)
        COMMITTERS.drop(group)
        self._failing.pop(group, None)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()
        self._thread.join(timeout=MIRROR_TIMEOUT_S + 5)

    def _run(self) -> None:
        swept = time.monotonic()
        while True:
            with self._cond:
                while not self._pending and not self._closed:
                    if not self._cond.wait(timeout=self._sweep_s):
                        break
                if self._closed:
                    return
                work, self._pending = self._pending, {}
                locks = {g: self._busy.setdefault(g, threading.Lock()) for g in work}
            for group, (plan, merged) in work.items():
                with locks[group]:
                    self._commit(group, plan, merged)
            if time.monotonic() - swept >= self._sweep_s:  # busy sinks or not: idle ones' committers close
                COMMITTERS.close_idle(self._idle_close_s)
                swept = time.monotonic()

    def _commit(self, group: str, plan: QueryPlan, merged: dict[tuple[str, int], int]) -> None:
        failed_at = self._failing.get(group)
        if failed_at is not None and time.monotonic() - failed_at < MIRROR_RETRY_AFTER_S:
            return  # a later batch's positions cover these partitions again
        try:
            commit_positions(admin_identity_consumer(plan), group,
                             [(t, p, o) for (t, p), o in sorted(merged.items())], MIRROR_TIMEOUT_S)
        except Exception as e:  # noqa: BLE001 - a monitoring copy: the batch is committed all the same
            if failed_at is None:
                log.warning("Connector %s: positions not committed to consumer group %s (tried again in %.0f s): %s",
                            plan.connector, group, MIRROR_RETRY_AFTER_S, e)
            self._failing[group] = time.monotonic()
            return
        if self._failing.pop(group, None) is not None:
            log.info("Connector %s: positions committed to consumer group %s again", plan.connector, group)


def replace(bootstrap: str, kafka_config: Mapping[str, Any], name: str, config: Mapping[str, str],
            stored: list[tuple[dict[str, Any], Any]]) -> None:
    """Make the group hold exactly ``stored`` (after an offsets alter or reset): delete it, commit what remains.

    The delete stays an AdminClient request, coordinator-targeted like the AlterConsumerGroupOffsets the commits
    left (librdkafka's ``rd_kafka_DeleteGroups`` sends each group's request through ``rd_kafka_coord_req`` with
    ``rd_kafka_admin_coord_request``, the path that can abort the process, see ``sparkcat.kafka.group_members``):
    no consumer request deletes a group or a committed offset (librdkafka's OffsetCommit skips negative
    offsets). It runs only for ``PATCH``/``DELETE /connectors/NAME/offsets`` of a STOPPED sink, never per batch,
    and the abort needs the coordinator's connection to drop while this one request is in flight.
    """
    if not bootstrap:
        return
    admin = worker_admin(bootstrap, kafka_config)
    group = sink_group_id(name, config)
    for future in admin.delete_consumer_groups([group], request_timeout=30).values():
        try:
            future.result(timeout=35)
        except Exception as e:  # noqa: BLE001 - no such group is the usual case
            if "GROUP_ID_NOT_FOUND" not in str(e):
                raise
    commit_positions(consumer_settings(bootstrap, kafka_config), group, _positions(stored))
    log.info("Connector %s: consumer group %s now holds %d position(s)", name, group, len(_positions(stored)))
