"""Connectors that share one streaming query: Spark's per-batch cost paid once for all of them.

A query per connector pays Spark's micro-batch machinery (planning, offset and commit logs, a job, the listener
bus) on every trigger, about 0.2-0.3 CPU-s per batch, so one driver ran at most 8-10 batches a second in all.
Here connectors of one kind and trigger interval join one query (``shared_sources`` for Python sources writing
to Kafka, ``shared_sinks`` for Python sink tasks fed from Kafka): each trigger asks every member's planner
(``shared_planning.GroupPlanner``), and the batch is one Spark job whose partitions are the tasks with new
records, of whichever connectors have them. A member that has none plans nothing, and a batch in which no member
has records runs no job.

What a user sees per connector does not change: its offsets go to the offsets store after every batch
(``BatchAccounting.on_batch``, or each task's transaction exactly once), its status, failures and traces are
its own (a failing task fails its connector only: the executors report it in a row), and it is started,
paused, restarted and stopped alone (``join``/``MemberQuery.stop``; the others lose no batch). A member's place
in the group's checkpoint is trusted only while it is a member: on joining it starts from the offsets store,
so the group's checkpoint never replays a connector's records (a batch Spark replays after a restart plans
nothing for anybody). Connectors that need more than this keep a query of their own (``own_query_reason``).
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from abc import ABC, abstractmethod
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from sparkcat.policy import paths
from sparkcat.spark.driver.batch_reports import batch_result
from sparkcat.spark.driver.shared_planning import GroupPlanner, Member
from sparkcat.spark.executor.shared_source import SLOW_MARK
from sparkcat.spark.query_plan import BatchResult, LeaseSource, QueryPlan, QueryStopping

__all__ = ["own_query_reason", "job_description", "slow_task_s", "SharedGroup", "SharedQueries", "MemberQuery"]

log = logging.getLogger(__name__)

SLOW_TASK_MIN_S = 5.0
SLOW_TASK_TRIGGERS = 5
#: Members' batch reports written at once (each stores offsets and status records in Kafka).
REPORTERS = 16
#: How long a group's answer to "is its query running" is trusted: the reconciler asks it of every member at every
#: tick, and each answer from Spark is a py4j round trip (at 200 idle members, the driver's largest idle cost).
#: Short while the query has not planned yet (it may fail as it starts); long once it has, because from then on
#: a query that ends stops its source first (Spark's ``stopSources``: ``planner_stopped``), and after that Spark is
#: asked afresh at every call.
ALIVE_CACHE_S = 10.0
STARTING_ALIVE_CACHE_S = 1.0


def own_query_reason(plan: QueryPlan) -> str | None:
    """Why ``plan``'s connector keeps a query of its own, or None when it can share one."""
    from sparkcat.spark.driver import shared_sinks, shared_sources
    kind = shared_sources if plan.connector_type == "source" else shared_sinks
    return kind.own_query_reason(plan)


class SharedGroup(ABC):
    """One shared query and its members (``lock`` guards the member list; planner calls hold it).

    A kind of group (``SourceGroup``, ``SinkGroup``) says how a batch is written (``_write_rows``) and read back
    into each member's ``BatchResult`` (``_result``).
    """

    def __init__(self, owner: SharedQueries, key: str, checkpoint_dir: str, trigger_ms: int) -> None:
        self.owner, self.spark = owner, owner.spark
        self.key, self.checkpoint_dir, self.trigger_ms = key, checkpoint_dir, trigger_ms
        self.lock = threading.RLock()
        self._members: dict[str, Member] = {}
        self.planner = GroupPlanner(self, interval_s=trigger_ms / 1000)
        self.planner_id = f"{key}-{uuid.uuid4().hex}"
        self.query: Any = None
        self._alive_cache = (False, float("-inf"))  # (Spark's last answer, when): ``alive``
        self._stream_stopped = False  # Spark stopped the planner's stream: the query ends or has ended
        self._metrics: dict[str, str] | None = None      # the last batch's, until its progress takes them
        self._reporters = ThreadPoolExecutor(REPORTERS, thread_name_prefix=f"{key}-report")
        # Two partitions per core: a batch's tasks run in turn within each (a slow one delays those after it).
        self.slots = max(1, 2 * int(self.spark.sparkContext.defaultParallelism))

    def member_names(self) -> list[str]:
        return sorted(m.name for m in self.members())

    def members(self) -> list[Member]:
        """The members now (planner calls hold ``lock`` around their whole pass, so none leaves mid-call)."""
        with self.lock:
            return list(self._members.values())

    def alive(self, fresh: bool = False) -> bool:
        """Whether the group's query runs: Spark's answer of at most ``ALIVE_CACHE_S`` ago, unless ``fresh``."""
        if self.query is None:
            return False
        active, at = self._alive_cache
        now = time.monotonic()
        trusted = ALIVE_CACHE_S if self.planner.triggers else STARTING_ALIVE_CACHE_S
        if fresh or now - at > trusted or (self._stream_stopped and active):  # an ended query never runs again
            active = bool(self.query.isActive)
            self._alive_cache = (active, now)
        return active

    def add(self, member: Member) -> None:
        with self.lock:
            self._members[member.name] = member
        log.info("Connector %s joined shared query %s (%d connector(s))", member.name, self.key, len(self._members))

    def remove(self, member: Member) -> int:
        """``member`` leaves (its stop, or its failure); returns how many members remain."""
        with self.lock:
            if self._members.get(member.name) is member:
                del self._members[member.name]
            member.left = True
            left = len(self._members)
        member.reader.stop()
        return left

    def fail(self, member: Member, trace: str) -> None:
        """A task of ``member`` failed: it leaves the query, and its runtime reads the trace as its failure."""
        if member.error is None:
            member.error = trace
            log.warning("Connector %s failed in shared query %s; the others go on", member.name, self.key)
        self.remove(member)

    def before_round(self, members: list[Member]) -> bool:
        """Called before each round asks the members (under ``lock``): a kind's shared look-ups go here. False
        when what the members read from did not change since the last round (they would answer as they did)."""
        return True

    def member_progress(self, member: Member) -> dict[str, Any] | None:
        """What of a streaming query's progress is ``member``'s own (None: nothing)."""
        return None

    def take_metrics(self) -> dict[str, str] | None:
        """What the query's progress shows of the batch just written (its source's ``metrics``), once: the
        members, the connectors the batch wrote and each one's records (Spark's "Input rows" counts the batch's
        Spark partitions). None after a trigger that wrote nothing."""
        taken, self._metrics = self._metrics, None
        return taken

    def planner_stopped(self) -> None:
        """Spark stopped the stream: every member's driver-side tasks stop, the planner is forgotten."""
        self._stream_stopped = True
        for m in self.members():
            m.reader.stop()
        self.spark.sparkContext._jvm.org.sparkcat.source.Planners.remove(self.planner_id)

    # ---- the query

    def start(self) -> None:
        from pyspark.java_gateway import ensure_callback_server_started
        from sparkcat.spark.driver.planned_source import FORMAT
        from sparkcat.spark.driver.queries import interrupted_if_stopped

        ensure_callback_server_started(self.spark.sparkContext._gateway)
        self._stream_stopped, self._alive_cache = False, (False, float("-inf"))
        self.spark.sparkContext._jvm.org.sparkcat.source.Planners.register(self.planner_id, self.planner)
        rows = self.spark.readStream.format(FORMAT).option("planner", self.planner_id).load()

        first = [True]

        def foreach_batch(df: DataFrame, batch_id: int) -> None:
            if first[0]:  # above 0 when the query goes on from a checkpoint (a restart, or another driver's)
                log.info("Shared query %s: first batch %d of this query begins", self.key, batch_id)
                first[0] = False
            try:
                self._run_batch(df, batch_id)
            except Exception:
                interrupted_if_stopped(self.query, self.key, batch_id)
                raise

        # Spark triggers at once after each trigger; the planner keeps the members' interval (``GroupPlanner``).
        self.query = (rows.writeStream.foreachBatch(foreach_batch).queryName(self.key)
                      .option("checkpointLocation", self.checkpoint_dir)
                      .trigger(processingTime="0 seconds").start())
        log.info("Shared query %s started (checkpoint %s)", self.key, self.checkpoint_dir)

    def stop(self) -> None:
        self.planner.release()  # a held trigger answers now: Spark's stop waits for the stream thread
        if self.query is not None:
            try:
                self.query.stop()
            except Exception as e:  # it failed meanwhile: stopped either way
                log.debug("stopping shared query %s: %s", self.key, e)
            self._alive_cache = (False, time.monotonic())
        self._reporters.shutdown(wait=False)
        log.info("Shared query %s stopped (no connector left in it)", self.key)

    def _run_batch(self, df: DataFrame, batch_id: int) -> None:
        """Write the members with records under their gates; each committed member's batch is reported."""
        pending = self.planner.pending
        batch = [m for m in self.members() if m.name in pending]
        if not batch:
            return
        held = _hold_gates(batch)
        try:
            if not self.owner.is_leader():
                for m in self.members():
                    m.running.stopping = True  # ended by us, not failed
                raise QueryStopping(f"this driver does not lead now; batch {batch_id} of {self.key} left for replay")
            if held:
                self._write(df, batch_id, held)
        finally:
            for m in held:
                m.in_batch = False
                m.running.gate.release()

    def _write(self, df: DataFrame, batch_id: int, members: list[Member]) -> None:
        started = time.monotonic()
        # The Spark UI's Jobs tab names the connectors each batch wrote (the query's stream thread runs the job).
        self.spark.sparkContext.setJobDescription(job_description(self.key, batch_id, [m.name for m in members]))
        rows = self._write_rows(df, batch_id, members)
        written = time.monotonic()
        by_member: dict[str, list[Any]] = {}
        for row in rows:
            by_member.setdefault(row.connector, []).append(row)
        # Each member's report stores its offsets and its bookkeeping (Kafka writes, a round trip or more each):
        # all members at once, as their own queries' threads did, and every one before the batch ends.
        list(self._reporters.map(lambda m: self._report(m, by_member.get(m.name, []), batch_id, started), members))
        self._metrics = batch_metrics(len(self._members), by_member)
        log.info("Shared query %s: batch %d wrote %d connector(s) in %.2f s and stored their positions in %.2f s",
                 self.key, batch_id, len(members), written - started, time.monotonic() - written)

    @abstractmethod
    def _write_rows(self, df: DataFrame, batch_id: int, members: list[Member]) -> list[Any]:
        """The executors' result rows of the batch, each naming its ``connector`` (and its ``failure``)."""

    def _result(self, m: Member, rows: list[Any], batch_id: int, started: float) -> BatchResult:
        return batch_result(m.name, batch_id, rows, started)

    def _report(self, m: Member, rows: list[Any], batch_id: int, started: float) -> None:
        slow = [r.elapsed_ms for r in rows if r.failure and r.failure.startswith(SLOW_MARK)]
        if slow:  # its batch is dropped: it starts again from its stored offsets, in a query of its own
            self.owner.evict(self, m, max(slow) / 1000)
            return
        failures = [r.failure for r in rows if r.failure]
        if failures:
            self.fail(m, failures[0])
            return
        if not rows:
            return
        self.owner.on_batch(m.plan, self._result(m, rows, batch_id, started))
        slowest_s = max(r.elapsed_ms for r in rows) / 1000
        if slowest_s > slow_task_s(self.trigger_ms):
            self.owner.evict(self, m, slowest_s)


def slow_task_s(trigger_ms: int) -> float:
    """How long a member's task may take in a batch before the member gets a query of its own: it held the
    others back that long, and a connector that busy gains little from sharing Spark's per-batch cost. A task
    still running then is left behind by the batch (``executor.shared_source.run_bounded``).

    >>> slow_task_s(1000), slow_task_s(200), slow_task_s(10_000)
    (5.0, 5.0, 50.0)
    """
    return max(SLOW_TASK_MIN_S, SLOW_TASK_TRIGGERS * trigger_ms / 1000)


def batch_metrics(members: int, rows_by_member: dict[str, list[Any]]) -> dict[str, str]:
    """A shared batch's source metrics in its query progress: how many connectors the query serves, how many the
    batch wrote, and the records of each (``records.NAME``) and of all.

    >>> from types import SimpleNamespace as Row
    >>> batch_metrics(3, {"a": [Row(records=2), Row(records=3)], "b": [Row(records=0)]})
    {'connectors': '3', 'connectorsWritten': '2', 'records': '5', 'records.a': '5', 'records.b': '0'}
    """
    records = {name: sum(int(r.records or 0) for r in rows) for name, rows in sorted(rows_by_member.items())}
    return {"connectors": str(members), "connectorsWritten": str(len(records)),
            "records": str(sum(records.values())), **{f"records.{n}": str(c) for n, c in records.items()}}


def job_description(key: str, batch_id: int, names: list[str], shown: int = 20) -> str:
    """What the Spark UI says of a shared batch's job.

    >>> job_description("q", 7, ["a", "b", "c"], shown=2)
    'q batch 7: a, b and 1 more connector(s)'
    """
    more = f" and {len(names) - shown} more connector(s)" if len(names) > shown else ""
    return f"{key} batch {batch_id}: {', '.join(names[:shown])}{more}"


def _hold_gates(members: list[Member]) -> list[Member]:
    """Take each member's gate (in name order: a stop takes one at a time); a stopping member is left out."""
    held = []
    for m in sorted(members, key=lambda m: m.name):
        m.running.gate.acquire()
        if m.running.stopping or m.left:
            m.running.gate.release()
            continue
        m.in_batch = True
        held.append(m)
    return held


class MemberQuery:
    """What a member's runtime holds in place of a ``StreamingQuery``: active while it is in the group."""

    def __init__(self, group: SharedGroup, member: Member) -> None:
        self.group, self.member = group, member

    @property
    def lastProgress(self) -> dict[str, Any] | None:  # noqa: N802 - StreamingQuery's name
        """The group's progress is every member's (``/metrics`` counts from BatchResults); a kind may say what
        is the member's own in a progress's shape (a sink's lag: ``SinkGroup.member_progress``)."""
        return self.group.member_progress(self.member)

    @property
    def isActive(self) -> bool:  # noqa: N802 - StreamingQuery's name
        return not self.member.left and self.group.alive()

    @property
    def status(self) -> dict[str, Any]:
        return {"isTriggerActive": self.member.in_batch}

    def exception(self) -> str | None:
        """The member's own failure, else the group query's (which ended every member)."""
        if self.member.error is not None:
            return self.member.error
        if self.group.query is None or self.group.query.isActive or self.member.left:
            return None
        error = self.group.query.exception()
        return None if error is None else str(error)

    def stop(self) -> None:
        self.group.owner.leave(self.group, self.member)


class SharedQueries:
    """The driver's shared queries, by group key; one is started with its first member and stopped when its
    last member leaves. ``checkpoint_root``: where each group's checkpoint goes (``_`` + its key)."""

    def __init__(self, spark: SparkSession, on_batch: Any, lease: LeaseSource, is_leader: Any,
                 store: Any = None, checkpoint_root: str | None = None) -> None:
        self.spark, self.on_batch, self.lease, self.is_leader, self.store = spark, on_batch, lease, is_leader, store
        self.checkpoint_root = checkpoint_root
        self._lock = threading.Lock()
        self._groups: dict[str, SharedGroup] = {}
        self._evicted: set[str] = set()  # connectors that were slow in a shared query: each keeps its own

    def join(self, plan: QueryPlan, running: Any) -> MemberQuery:
        """``plan``'s connector joins its group (started if none runs); raises like a query start would."""
        from sparkcat.spark.driver import shared_sinks, shared_sources
        from sparkcat.spark.driver.handlers import ensure_dead_letter_queue

        ensure_dead_letter_queue(plan)
        kind = shared_sources if plan.connector_type == "source" else shared_sinks
        member = kind.new_member(self.spark, plan, running, self.store)
        key = kind.group_key(plan)
        with self._lock:
            group = self._groups.get(key)
            if group is None or not group.alive(fresh=True):
                root = self.checkpoint_root or plan.checkpoint_dir.rstrip("/").rsplit("/", 1)[0]
                group = kind.new_group(self, key, paths.child_path(root, "_" + key), plan.trigger_interval_ms)
                group.start()
                self._groups[key] = group
            group.add(member)
        return MemberQuery(group, member)

    def evict(self, group: SharedGroup, member: Member, took_s: float) -> None:
        """``member`` held its group's batch for ``took_s``: it leaves (its runtime starts it again, alone, at the
        next pass: ``shares``). Runs on the group's stream thread, so an emptied group is not stopped here."""
        with self._lock:
            self._evicted.add(member.name)
        group.remove(member)
        log.warning("Connector %s: a task took %.1f s of a batch of shared query %s (the bound is %.1f s); it "
                    "runs in a query of its own from now on", member.name, took_s, group.key, slow_task_s(group.trigger_ms))

    def shares(self, plan: QueryPlan) -> bool:
        """Whether ``plan``'s connector joins a shared query: it can (``own_query_reason``), and it was not slow
        in one since this driver started."""
        with self._lock:
            return own_query_reason(plan) is None and plan.connector not in self._evicted

    def leave(self, group: SharedGroup, member: Member) -> None:
        """``member`` leaves ``group``; the last one out stops its query."""
        with self._lock:
            if group.remove(member) == 0 and self._groups.get(group.key) is group:
                del self._groups[group.key]
                group.stop()
        log.info("Connector %s left shared query %s", member.name, group.key)

    def groups(self) -> list[SharedGroup]:
        """The shared queries running now (``/metrics`` and tests read their members)."""
        with self._lock:
            return list(self._groups.values())

    def close(self) -> None:
        with self._lock:
            groups, self._groups = list(self._groups.values()), {}
        for group in groups:
            group.stop()
