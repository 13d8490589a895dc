"""A source connector's micro-batches planned on the driver: offsets, admission control, excluded tasks.

``ConnectorStreamReader`` answers the planning calls of the query's JVM stream (``planned_source``) in the
driver's own Python process, with driver-side task instances (``partitions``, ``latest_offsets``,
``advance``) cached for the life of the query. Offsets are ``{"offsets": {partition_key: source offset or
null}}`` over every source partition of every task, so they do not depend on which task owns a partition
(``tasks.max`` may change under the same checkpoint). After a restart with the same checkpoint an
uncommitted batch is replayed through ``partitions(start, end)`` without ``initialOffset``, so the ranges
are computed from ``start``/``end`` and the current plan only. Each batch's ranges are ``TaskRanges``,
which the executors read (``sparkcat.spark.executor.connector_source``).
"""

from __future__ import annotations

import logging
from typing import Any

from pyspark.sql.datasource import InputPartition
from pyspark.sql.streaming.datasource import ReadLimit, ReadMaxRows
from pyspark.sql.types import DataType, StructType

from sparkcat.api.connector import SourceTask
from sparkcat.policy.input_policy import prepare
from sparkcat.spark.executor.connector_source import TaskRanges, new_source_task, stop_quietly
from sparkcat.spark.query_plan import QueryPlan, task_failure_message
from sparkcat.storage.offsets import partition_key

__all__ = ["ConnectorStreamReader", "task_value_schema"]

log = logging.getLogger(__name__)

OFFSETS = "offsets"
_MISSING = object()


def task_value_schema(plan: QueryPlan) -> str | DataType:
    """The value schema, asked of a started driver-side task (the first task not excluded)."""
    live = plan.live_tasks
    task_id = live[0] if live else 0
    task = new_source_task(plan.task_class)
    started = False
    try:
        if live:
            task.start(prepare(plan.task_configs[task_id]))
            started = True
        return task.value_schema()
    except Exception as e:
        raise RuntimeError(task_failure_message(plan.connector, task_id, e)) from e
    finally:
        if started:
            stop_quietly(task, plan.connector, task_id)


class _DriverTasks:
    """Driver-side task instances of one query, started on first use; failures name the task."""

    def __init__(self, plan: QueryPlan) -> None:
        self.plan = plan
        self._tasks: dict[int, SourceTask] = {}
        self._partitions: dict[int, list[dict[str, Any]]] = {}

    def _call(self, task_id: int, method: str, *args: Any) -> Any:
        """Call ``method`` on task ``task_id``, raising task_failure_message on any error."""
        try:
            task = self._tasks.get(task_id)
            if task is None:
                task = new_source_task(self.plan.task_class)
                task.start(prepare(self.plan.task_configs[task_id]))
                self._tasks[task_id] = task
            return getattr(task, method)(*args)
        except Exception as e:
            raise RuntimeError(task_failure_message(self.plan.connector, task_id, e)) from e

    def partitions(self, task_id: int) -> list[dict[str, Any]]:
        """The task's source partitions (asked once: they are fixed by its config)."""
        if task_id not in self._partitions:
            self._partitions[task_id] = list(self._call(task_id, "partitions"))
        return self._partitions[task_id]

    def latest_offsets(self, task_id: int, current: dict[str, Any]) -> dict[str, Any]:
        return self._call(task_id, "latest_offsets", current)

    def advance(self, task_id: int, partition: dict[str, Any], start: Any, end: Any, budget: int) -> Any:
        return self._call(task_id, "advance", partition, start, end, budget)

    def stop(self) -> None:
        for task_id, task in self._tasks.items():
            stop_quietly(task, self.plan.connector, task_id)
        self._tasks.clear()


class ConnectorStreamReader:
    """Plans a connector's micro-batches on the driver (``read_task_ranges`` runs its tasks on executors)."""

    def __init__(self, plan: QueryPlan, schema: StructType, store: Any = None) -> None:
        """``store``: the driver's open offsets store (else one is opened from the plan, and closed at ``stop``)."""
        self.plan = plan
        self.schema = schema
        self.value_ddl = schema["value"].dataType.simpleString()
        self.excluded = set(plan.excluded_tasks)
        self.tasks = _DriverTasks(plan)
        self._store = store
        self._own_store = store is None
        self._latest: dict[str, Any] | None = None
        self._keys: list[tuple[int, dict[str, Any], str]] | None = None  # ``_all_keys``: fixed by the plan
        self._by_task: list[tuple[int, list[tuple[dict[str, Any], str]]]] | None = None

    # ---- offsets store

    def _stored(self) -> dict[str, Any]:
        """Committed offsets of this connector in the offsets store, by partition key.

        Read once every transaction open in the store now has ended: an exactly-once task's
        offsets may sit behind another connector's open transaction on the one partition.
        """
        if not self.plan.offsets_store:
            return {}
        if self._store is None:
            from sparkcat.storage.factory import open_offsets_store
            self._store = open_offsets_store(self.plan.offsets_store)
        return self._store.get(self.plan.connector, stable=True)

    def _all_keys(self) -> list[tuple[int, dict[str, Any], str]]:
        """(task, partition, key) for every partition of every task of the plan (asked at every trigger)."""
        if self._keys is None:
            self._keys = [(t, p, partition_key(p)) for t in range(len(self.plan.task_configs))
                          for p in self.tasks.partitions(t)]
        return self._keys

    def _keys_by_task(self) -> list[tuple[int, list[tuple[dict[str, Any], str]]]]:
        """``_all_keys`` grouped by task: (task, [(partition, key)])."""
        if self._by_task is None:
            by_task: dict[int, list[tuple[dict[str, Any], str]]] = {}
            for t, p, k in self._all_keys():
                by_task.setdefault(t, []).append((p, k))
            self._by_task = list(by_task.items())
        return self._by_task

    # ---- planning

    def initialOffset(self) -> dict:
        """Every partition at its stored offset (None when never committed); called twice, so deterministic."""
        stored = self._stored()
        return {OFFSETS: dict(sorted((k, stored.get(k)) for _, _, k in self._all_keys()))}

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadMaxRows(self.plan.batch_max_records)

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        """How far each partition may go this batch, at most ``batch_max_records`` records per task."""
        current: dict[str, Any] = start.get(OFFSETS, {})
        out = dict(current)
        keys = self._all_keys()
        new = {k for _, _, k in keys if k not in current}
        frozen = {k for t, _, k in keys if t in self.excluded and k in current} if self.excluded else set()
        if new or frozen:
            # New partitions (a changed task config under the same checkpoint) join at their stored
            # offset; excluded (failed) tasks go back to theirs, which is where their last good batch
            # ended: a replayed batch that was planned before the exclusion skipped their ranges.
            stored = self._stored()
            out.update({k: stored.get(k) for k in new})
            out.update({k: stored.get(k, current[k]) for k in frozen})
        pinned = new | frozen
        budget = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        latest_seen: dict[str, Any] = {}
        for t, task_keys in self._keys_by_task():
            owned = [(p, k) for p, k in task_keys if k not in pinned] if pinned else task_keys
            if owned:
                latest_seen.update(self._advance_task(t, owned, current, out, budget))
        if not pinned and out == current and latest_seen.items() <= current.items():
            # nothing new (most rounds of a shared query): the offsets as they came, not sorted and copied again
            self._latest = {OFFSETS: current}
            return self._latest
        self._latest = {OFFSETS: dict(sorted({**out, **latest_seen}.items()))}
        return {OFFSETS: dict(sorted(out.items()))}

    def _advance_task(self, t: int, owned: list[tuple[dict[str, Any], str]], current: dict[str, Any],
                      out: dict[str, Any], budget: int | None) -> dict[str, Any]:
        """Move task ``t``'s partitions in ``out`` towards their latest offsets; returns those."""
        latest = self.tasks.latest_offsets(t, {k: current[k] for _, k in owned})
        share = None if budget is None else max(1, budget // len(owned))
        for partition, k in owned:
            if k not in latest:
                continue
            same = latest[k] == current[k]  # nothing new: no need to ask the task how far to go
            end = latest[k] if share is None or same else self.tasks.advance(t, partition, current[k], latest[k], share)
            out[k] = end
        return latest

    def reportLatestOffset(self) -> dict | None:
        """The newest offsets the tasks reported (before admission control), for query progress."""
        return self._latest

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        """One ``TaskRanges`` per task with a changed offset, grouped by the current task configs."""
        starts, ends = start.get(OFFSETS, {}), end.get(OFFSETS, {})
        out: list[InputPartition] = []
        for t in range(len(self.plan.task_configs)):
            if t in self.excluded:
                continue
            ranges = []
            for p in self.tasks.partitions(t):
                k = partition_key(p)
                s, e = starts.get(k, _MISSING), ends.get(k, _MISSING)
                if s is not _MISSING and e is not _MISSING and s != e:
                    ranges.append((p, s, e))
            if ranges:
                out.append(TaskRanges(t, self.plan.task_class, self.plan.task_configs[t], ranges,
                                      self.plan.connector, self.value_ddl, self.schema))
        return out

    def commit(self, end: dict) -> None:
        """Nothing: the herder writes offsets from each BatchResult (``commit(end)`` lags one batch: it runs
        when the *next* batch is planned), as soon as the batch's records are written."""

    def stop(self) -> None:
        self.tasks.stop()
        if self._store is not None and self._own_store:
            self._store.close()
            self._store = None
