"""Keeps a sink connector's consumer group ``connect-NAME`` in step with its positions (see sparkcat.kafka.sink_groups).

After each batch the new positions are committed to the group; when the offsets API alters or
resets a sink's offsets, the group is rewritten to match, as Connect's offsets API alters the
group, so a later start that falls back on the group never resurrects forgotten positions.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping
from typing import Any

from sparkcat.kafka.sink_groups import commit_positions, sink_group_id
from sparkcat.spark.kafka_input import worker_admin
from sparkcat.spark.plan import QueryPlan

log = logging.getLogger(__name__)
_FAILING: dict[str, float] = {}  # groups whose last commit failed, and when: one log line per change, not per batch
# A batch waits for its mirror commit: bounded, and skipped for a while after a failure, so a group
# coordinator that is still recovering (a broker restart) does not hold every batch for its timeout.
MIRROR_TIMEOUT_S = 5.0
MIRROR_RETRY_AFTER_S = 60.0


def _positions(pairs: Iterable[tuple[dict[str, Any], Any]]) -> list[tuple[str, int, int]]:
    """(topic, partition, next offset) of sink offsets in Connect's shape; other entries are skipped."""
    out = []
    for partition, offset in pairs:
        if isinstance(offset, dict) and "kafka_offset" in offset and "kafka_topic" in partition:
            out.append((str(partition["kafka_topic"]), int(partition["kafka_partition"]), int(offset["kafka_offset"])))
    return out


def mirror(plan: QueryPlan, offsets: list[tuple[dict[str, Any], Any]]) -> None:
    """Commit a batch's positions to the sink's group; a failure is logged (the offsets store holds them)."""
    if not plan.bootstrap_servers:
        return
    group = sink_group_id(plan.connector, plan.connector_config)
    failed_at = _FAILING.get(group)
    if failed_at is not None and time.monotonic() - failed_at < MIRROR_RETRY_AFTER_S:
        return  # a later batch's positions cover these partitions again
    try:
        commit_positions(worker_admin(plan.bootstrap_servers, plan.kafka_config), group, _positions(offsets),
                         MIRROR_TIMEOUT_S)
    except Exception as e:  # noqa: BLE001 - a monitoring copy: the batch is committed all the same
        if failed_at is None:
            log.warning("Connector %s: positions not committed to consumer group %s (tried again in %.0f s): %s",
                        plan.connector, group, MIRROR_RETRY_AFTER_S, e)
        _FAILING[group] = time.monotonic()
        return
    if group in _FAILING:
        del _FAILING[group]
        log.info("Connector %s: positions committed to consumer group %s again", plan.connector, group)


def replace(bootstrap: str, kafka_config: Mapping[str, Any], name: str, config: Mapping[str, str],
            stored: list[tuple[dict[str, Any], Any]]) -> None:
    """Make the group hold exactly ``stored`` (after an offsets alter or reset): delete it, commit what remains."""
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
    commit_positions(admin, group, _positions(stored))
    log.info("Connector %s: consumer group %s now holds %d position(s)", name, group, len(_positions(stored)))
