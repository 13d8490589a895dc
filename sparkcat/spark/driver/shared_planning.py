"""The planning side of a shared query (``shared_queries``): its members and the planner Spark asks.

``GroupPlanner`` is the JVM stream's ``org.sparkcat.source.Planner`` for many connectors: offsets are
``{"connectors": {NAME: ...}}``, each member's part planned by its own reader: a source's
``ConnectorStreamReader`` as its own query would, a sink's ``shared_sinks.KafkaRanges``. A member's part of a
start offset is trusted only if this planner produced it since the member joined (``Member.produced``): a member new to the query is first pinned at its offsets-store
position, and a batch Spark replays after a restart plans nothing for it.
"""

from __future__ import annotations

import base64
import json
import pickle
import traceback
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Protocol

from pyspark.sql.streaming.datasource import ReadMaxRows

from sparkcat.spark.query_plan import QueryPlan

__all__ = ["GroupPlanner", "Member", "MemberReader", "PlannedGroup"]

CONNECTORS = "connectors"
_PRODUCED_KEPT = 8  # a member's recent batch ends this planner planned: the starts it trusts


class MemberReader(Protocol):
    """A member's planner (``ConnectorStreamReader``'s methods): its offsets, and its tasks' share of a batch."""

    def initialOffset(self) -> Any: ...  # noqa: N802 - Spark's names

    def latestOffset(self, start: Any, limit: Any) -> Any: ...  # noqa: N802

    def reportLatestOffset(self) -> Any: ...  # noqa: N802

    def partitions(self, start: Any, end: Any) -> list[Any]: ...

    def stop(self) -> None: ...


@dataclass(eq=False)
class Member:
    """One connector in a group: its plan, the handle its runtime holds (``RunningQuery``) and its planner."""

    plan: QueryPlan
    running: Any                        # query_runner.RunningQuery: its gate and ``stopping`` flag
    reader: MemberReader
    write: Any                          # what executors need to write its share (``MemberWrite``, ``SinkWrite``)
    produced: deque = field(default_factory=lambda: deque(maxlen=_PRODUCED_KEPT))
    error: str | None = None
    left: bool = False
    in_batch: bool = False

    @property
    def name(self) -> str:
        return self.plan.connector


def _text(offsets: Any) -> str:
    return json.dumps(offsets, sort_keys=True)


class PlannedGroup(Protocol):
    """What the planner needs of its group (``shared_queries.SharedGroup``)."""

    lock: Any

    def members(self) -> list[Member]: ...

    def fail(self, member: Member, trace: str) -> None: ...

    def before_round(self, members: list[Member]) -> None: ...

    slots: int  # how many Spark partitions a batch's tasks are spread over

    def planner_stopped(self) -> None: ...

    def take_metrics(self) -> dict[str, str] | None: ...


class GroupPlanner:
    """``org.sparkcat.source.Planner`` for a group: every member's offsets under its name."""

    def __init__(self, group: PlannedGroup) -> None:
        self.group = group
        self.pending: set[str] = set()   # members with records in the batch planned last
        self.rounds = 0                  # latestOffset calls: how many triggers asked the members
        self._latest: dict[str, Any] = {}

    def initialOffset(self) -> str:  # noqa: N802 - the Java interface's names
        return _text({CONNECTORS: {}})

    def latestOffset(self, start: str, max_rows: int) -> str:  # noqa: N802
        """Each member one step on; a member new to this query is pinned at its stored offsets first."""
        current = json.loads(start).get(CONNECTORS, {})
        out: dict[str, Any] = {}
        pending: set[str] = set()
        with self.group.lock:
            members = self.group.members()
            self.group.before_round(members)
            self._latest = {m.name: v for m in members if (v := self._latest.get(m.name)) is not None}
            for m in members:
                end = self._step(m, current.get(m.name), pending)
                if end is not None:
                    out[m.name] = end
        self.pending = pending
        self.rounds += 1
        return _text({CONNECTORS: out})

    def _step(self, m: Member, mine: Any, pending: set[str]) -> Any:
        """``m``'s end of the next batch (None: it failed and left)."""
        try:
            mine_text = None if mine is None else _text(mine)
            if mine_text is None or mine_text not in m.produced:
                end = m.reader.initialOffset()
                text = _text(end)
            else:
                end = m.reader.latestOffset(mine, ReadMaxRows(m.plan.batch_max_records))
                self._latest[m.name] = m.reader.reportLatestOffset()
                text = mine_text if end == mine else _text(end)  # an idle member's offsets: not serialised again
                if end != mine:
                    pending.add(m.name)
        except Exception:
            self.group.fail(m, traceback.format_exc())
            return None
        if not m.produced or m.produced[-1] != text:  # idle triggers do not push its earlier ends out
            m.produced.append(text)
        return end

    def reportLatestOffset(self) -> str | None:  # noqa: N802
        return _text({CONNECTORS: self._latest}) if self._latest else None

    def planPartitions(self, start: str, end: str) -> str:  # noqa: N802
        """The tasks of the members whose ranges this planner planned (nothing in a batch replayed after a
        restart: its members restart from their stored offsets), dealt round-robin over ``group.slots`` Spark
        partitions: Spark's cost per task (scheduling, the batch function's unpickling in a Python worker, tens
        of ms) is paid per partition, not per connector task."""
        starts, ends = json.loads(start).get(CONNECTORS, {}), json.loads(end).get(CONNECTORS, {})
        out: list[Any] = []
        with self.group.lock:
            for m in self.group.members():
                s, e = starts.get(m.name), ends.get(m.name)
                if s is None or e is None or _text(s) not in m.produced:
                    continue
                try:
                    parts = m.reader.partitions(s, e)
                except Exception:
                    self.group.fail(m, traceback.format_exc())
                    continue
                out.extend(parts)
        slots = [out[i::self.group.slots] for i in range(min(self.group.slots, len(out)))]
        return json.dumps([[i, base64.b64encode(pickle.dumps(parts)).decode()] for i, parts in enumerate(slots)])

    def commit(self, end: str) -> None:
        """Nothing: each member's offsets are stored as its batch is written."""

    def metrics(self) -> str | None:
        """The query progress's source metrics of the trigger ending now (``SharedGroup.take_metrics``)."""
        taken = self.group.take_metrics()
        return None if taken is None else json.dumps(taken, sort_keys=True)

    def stop(self) -> None:
        self.group.planner_stopped()

    class Java:
        implements = ["org.sparkcat.source.Planner"]
