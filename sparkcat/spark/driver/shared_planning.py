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
import threading
import time
import traceback
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Protocol

from pyspark.sql.streaming.datasource import ReadMaxRows

from sparkcat.spark.query_plan import QueryPlan

__all__ = ["GroupPlanner", "Member", "MemberReader", "PlannedGroup"]

CONNECTORS = "connectors"
_PRODUCED_KEPT = 8  # a member's recent batch ends this planner planned: the starts it trusts
#: How long one trigger of an idle group goes on asking its members (a round per trigger interval) before it
#: answers Spark that nothing moved. Spark's no-data trigger (its planning, progress and py4j calls) was most of
#: an idle driver's CPU; Spark posts an idle progress every 10 s anyway (noDataProgressEventInterval).
HOLD_S = 10.0


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

    def before_round(self, members: list[Member]) -> bool: ...

    slots: int  # how many Spark partitions a batch's tasks are spread over

    def planner_stopped(self) -> None: ...

    def take_metrics(self) -> dict[str, str] | None: ...


class GroupPlanner:
    """``org.sparkcat.source.Planner`` for a group: every member's offsets under its name.

    The group's query triggers as fast as Spark can (``trigger_ms`` 0 to Spark) and the planner keeps the pace:
    a round asks every member at most once per ``interval_s`` (the connectors' trigger interval), and a trigger
    at which nothing moved goes on with rounds for up to ``HOLD_S`` before it answers. So a record is planned at
    the first round after it arrived, as with Spark's own trigger, while an idle group costs Spark one trigger
    per ``HOLD_S``, not one per interval. ``release`` ends a hold at once (before the query stops: Spark waits for
    its stream thread, which waits for this answer).
    """

    def __init__(self, group: PlannedGroup, interval_s: float = 0.0, hold_s: float = HOLD_S) -> None:
        self.group = group
        self.interval_s, self.hold_s = interval_s, hold_s
        self.pending: set[str] = set()   # members with records in the batch planned last
        self.rounds = 0                  # rounds: how many times the members were asked
        self.triggers = 0                # latestOffset calls: Spark's triggers
        self._latest: dict[str, Any] = {}
        self._next_round = float("-inf")
        self._released = threading.Event()
        self._last_round: tuple[list[Member], dict[str, Any]] | None = None  # this trigger's: members, answer

    def initialOffset(self) -> str:  # noqa: N802 - the Java interface's names
        return _text({CONNECTORS: {}})

    def release(self) -> None:
        """Answer Spark now and from now on without waiting (the query is about to stop)."""
        self._released.set()

    def latestOffset(self, start: str, max_rows: int) -> str:  # noqa: N802
        """Every member's end of the next batch: rounds at the group's pace until one moved, a member came or
        went, or ``hold_s`` passed."""
        self.triggers += 1
        current = json.loads(start).get(CONNECTORS, {})
        texts = {name: _text(mine) for name, mine in current.items()}
        give_up = time.monotonic() + self.hold_s
        try:
            while True:
                self._released.wait(max(0.0, self._next_round - time.monotonic()))
                self._next_round = time.monotonic() + self.interval_s
                out = self._round(current, texts)
                if out != current or self._released.is_set() or time.monotonic() >= give_up:
                    return _text({CONNECTORS: out})
        finally:
            # py4j keeps the planner after its query: it must not keep the members (and their Kafka clients)
            self._last_round = None

    def _round(self, current: dict[str, Any], texts: dict[str, str]) -> dict[str, Any]:
        """Each member one step on; a member new to this query is pinned at its stored offsets first. When the
        group says nothing its members read from changed (``before_round``), the same members answer as they
        did at this trigger's last round, without being asked."""
        out: dict[str, Any] = {}
        pending: set[str] = set()
        with self.group.lock:
            members = self.group.members()
            fresh = self.group.before_round(members)
            self.rounds += 1
            if not fresh and self._last_round is not None and self._last_round[0] == members:
                return self._last_round[1]
            self._latest = {m.name: v for m in members if (v := self._latest.get(m.name)) is not None}
            for m in members:
                end = self._step(m, current.get(m.name), texts.get(m.name), pending)
                if end is not None:
                    out[m.name] = end
            self._last_round = (members, out)
        self.pending = pending
        return out

    def _step(self, m: Member, mine: Any, mine_text: str | None, pending: set[str]) -> Any:
        """``m``'s end of the next batch (None: it failed and left)."""
        try:
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
