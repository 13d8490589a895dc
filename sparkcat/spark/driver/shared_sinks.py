"""Python sink connectors fed from Kafka that share one query (``shared_queries``), one per trigger interval.

Where a sink of its own reads its topics with Spark's Kafka source, a shared one is planned by the driver:
each trigger looks up the subscribed partitions and their last committed offsets once for all members of a
cluster (``before_round``, ``ClusterWatch``: the topic list at most 5 s old, and ListOffsets only for the
partitions a watching consumer saw records arrive in: an idle round sends no metadata or ListOffsets request), and each member's ``KafkaRanges`` moves
its positions (``{"topic:partition": next offset}``) towards them, at most ``batch.max.records`` per partition.
Its tasks' ranges (``assign_tasks``, as Connect's consumer group would spread them) become rows of the batch;
the executors read and put them (``executor.shared_sink``). Positions go to the offsets store and the
``connect-NAME`` group after each batch, as before, and a joining member starts from there
(``queries.sink_starting_offsets``). A partition new to a member starts at its earliest offset, as Connect's
``auto.offset.reset=earliest``; a position past a partition's end (the topic was deleted and created again)
starts there again too.

Sinks that need Spark's own replay of a batch keep a query of their own (``own_query_reason``): a task that
skips replayed batches by id (``begin_batch``), since a shared query never replays a member's batch, unless it
also skips by Kafka position (``SinkTask.skips_by_position``: the file and JDBC sinks), which its tasks learn
from ``SinkTaskContext.shared_query``.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from sparkcat.api.connector import SinkConnector, SinkTask
from sparkcat.config.names import SHARED_QUERY_PREFIX
from sparkcat.spark.driver.batch_reports import sink_batch_id
from sparkcat.spark.driver.kafka_input import (METADATA_TIMEOUT_S, admin_identity_consumer, assign_tasks,
                                               connector_admin, subscribed_topics)
from sparkcat.spark.driver.shared_planning import Member
from sparkcat.spark.driver.shared_queries import SharedGroup, SharedQueries, slow_task_s
from sparkcat.spark.executor.shared_sink import SinkPart, SinkWrite, put_members
from sparkcat.spark.executor.shared_source import SHARED_RESULT_SCHEMA
from sparkcat.spark.query_plan import QueryPlan, TopicPartitionKey, tp_key

__all__ = ["own_query_reason", "group_key", "new_member", "new_group", "SinkGroup", "KafkaRanges", "Snapshot", "ClusterWatch"]

log = logging.getLogger(__name__)


def own_query_reason(plan: QueryPlan) -> str | None:
    """Why a sink connector keeps a query of its own, or None when it can share one."""
    from sparkcat.plugins import load_class
    if plan.java_host:
        return "a Java connector"
    if str(plan.connector_config.get("transforms") or "").strip():
        return "has transforms"
    try:
        connector, task = load_class(plan.connector_class), load_class(plan.task_class)
    except Exception:  # it fails where its own query would, with that query's error
        return "its classes do not load here"
    if isinstance(connector, type) and issubclass(connector, SinkConnector):
        if connector.native_write is not SinkConnector.native_write:
            return "Spark writes it (native_write)"
        if connector.writes_batches():
            return "writes whole batches (batch_writer)"
    if isinstance(task, type) and issubclass(task, SinkTask) and task.begin_batch is not SinkTask.begin_batch \
            and not task.skips_by_position:
        return "its tasks skip replayed batches by id (begin_batch), which needs Spark's replay"
    return None


def group_key(plan: QueryPlan) -> str:
    """The group a shareable sink joins: one per trigger interval."""
    return f"{SHARED_QUERY_PREFIX}sinks-{plan.trigger_interval_ms}ms"


def new_member(spark: SparkSession, plan: QueryPlan, running: Any, store: Any) -> Member:
    """A sink connector's membership, pinned at its stored positions (and its group's commits, when ahead)."""
    from sparkcat.kafka.client_settings import consumer_settings
    from sparkcat.spark.driver.queries import sink_starting_offsets
    from sparkcat.spark.executor.sink_tasks import task_contexts, wants_raw_bytes
    from sparkcat.spark.executor.source_to_kafka import producer_config

    start = sink_starting_offsets(plan, store)
    consumer = consumer_settings(plan.bootstrap_servers, plan.kafka_config, _resolved_overrides(plan),
                                 {"isolation.level": "read_committed"})
    write = SinkWrite(plan, consumer, task_contexts(plan, shared_query=True), wants_raw_bytes(plan.task_class),
                      producer_config(plan))
    return Member(plan, running, KafkaRanges(plan, start), write)


def _resolved_overrides(plan: QueryPlan) -> dict[str, str]:
    """The connector's ``consumer.override.*`` keys, placeholders resolved (only they travel to executors)."""
    from sparkcat.kafka.client_settings import ClientKind, connector_overrides
    from sparkcat.policy.input_policy import POLICY_KEY, prepare
    prefix = f"{ClientKind.CONSUMER.value}.override."
    own = {k: v for k, v in plan.connector_config.items() if k == POLICY_KEY or k.startswith(prefix)}
    return connector_overrides(prepare(own), ClientKind.CONSUMER) if len(own) > (POLICY_KEY in own) else {}


def new_group(owner: SharedQueries, key: str, checkpoint_dir: str, trigger_ms: int) -> SinkGroup:
    return SinkGroup(owner, key, checkpoint_dir, trigger_ms)


@dataclass
class Snapshot:
    """One cluster's subscribed partitions and their last committed offsets (``read_committed``), for one round."""

    admin: Any
    partitions: dict[str, list[int]]                   # topic -> partitions, of every topic in the cluster
    latest: dict[TopicPartitionKey, int] = field(default_factory=dict)
    _subscribed: dict[str, list[TopicPartitionKey]] = field(default_factory=dict)

    def subscribed_by(self, plan: QueryPlan) -> list[TopicPartitionKey]:
        """The partitions ``plan``'s connector subscribes to, matched once per round (the listing, its ranges and
        its lag all ask)."""
        found = self._subscribed.get(plan.connector)
        if found is None:
            found = self._subscribed[plan.connector] = sorted(
                (t, p) for t in subscribed_topics(plan.connector_config, self.partitions) for p in self.partitions[t])
        return found

    def earliest(self, tps: list[TopicPartitionKey]) -> dict[TopicPartitionKey, int]:
        """Where each of ``tps`` begins now (asked only for partitions new to a member, or reset)."""
        from confluent_kafka.admin import OffsetSpec
        return _list_offsets(self.admin, {tp: OffsetSpec.earliest() for tp in tps})


def _list_offsets(admin: Any, specs: Mapping[TopicPartitionKey, Any]) -> dict[TopicPartitionKey, int]:
    from confluent_kafka import IsolationLevel, TopicPartition
    if not specs:
        return {}
    asked = {TopicPartition(t, p): spec for (t, p), spec in specs.items()}
    futures = admin.list_offsets(asked, isolation_level=IsolationLevel.READ_COMMITTED,
                                 request_timeout=METADATA_TIMEOUT_S)
    return {(tp.topic, tp.partition): int(f.result().offset) for tp, f in futures.items()}


METADATA_MAX_AGE_S = 5.0  # a cluster's topic list is asked again after this long, or when the members change


class ClusterWatch:
    """One cluster's look-ups for a sink group: its topics (metadata at most ``METADATA_MAX_AGE_S`` old) and its
    partitions' committed ends (``end_watch.EndWatch``: listed only where records arrived, and every
    ``FULL_LIST_S``). An idle round sends no metadata or ListOffsets request."""

    def __init__(self, admin: Any, consumer_settings: Mapping[str, Any]) -> None:
        from confluent_kafka import Consumer
        from confluent_kafka.admin import OffsetSpec
        from sparkcat.kafka.end_watch import EndWatch, watch_consumer_settings
        self.admin = admin
        self._ends = EndWatch(Consumer(watch_consumer_settings(consumer_settings)),
                              lambda tps: _list_offsets(admin, {tp: OffsetSpec.latest() for tp in tps}))
        self._partitions: dict[str, list[int]] | None = None
        self._asked_at = 0.0
        self._for: frozenset[int] = frozenset()  # the plans the topic list was matched for
        self._last: Snapshot | None = None
        self._wanted: tuple[list[QueryPlan] | None, set[TopicPartitionKey]] = (None, set())  # plans, their partitions

    def snapshot(self, plans: list[QueryPlan]) -> Snapshot:
        """The partitions ``plans`` subscribe to and their ends: the last snapshot itself when neither changed (its
        subscriptions stay matched); an error leaves the topic list to be asked again. ``plans``: the same list
        object while the plans are the same (``SinkGroup._by_cluster``)."""
        try:
            partitions, last = self._topics(plans), self._last
            same_topics = last is not None and last.partitions is partitions
            snapshot = Snapshot(self.admin, partitions, _subscribed=last._subscribed if same_topics else {})
            if not (same_topics and self._wanted[0] is plans):
                self._wanted = (plans, {tp for plan in plans for tp in snapshot.subscribed_by(plan)})
            snapshot.latest = self._ends.ends(self._wanted[1])
            if same_topics and (snapshot.latest is last.latest or snapshot.latest == last.latest):
                return last
            self._last = snapshot
            return snapshot
        except Exception:
            self._partitions = self._last = None
            raise

    def _topics(self, plans: list[QueryPlan]) -> dict[str, list[int]]:
        now = time.monotonic()
        if self._partitions is not None and plans is self._wanted[0] and now - self._asked_at < METADATA_MAX_AGE_S:
            return self._partitions  # the same plans as the last round: no need to compare them
        members = frozenset(id(plan) for plan in plans)
        if self._partitions is None or members != self._for or now - self._asked_at >= METADATA_MAX_AGE_S:
            metadata = self.admin.list_topics(timeout=METADATA_TIMEOUT_S)
            partitions = {name: sorted(t.partitions) for name, t in metadata.topics.items() if t.error is None}
            # the same plans and topics: the same object, so the snapshot (and its matched subscriptions) stays
            if members != self._for or partitions != self._partitions:
                self._partitions = partitions
            self._asked_at, self._for = now, members
        return self._partitions

    def close(self) -> None:
        self._last = None
        self._ends.close()


class KafkaRanges:
    """A sink member's reader: its positions ``{"topic:partition": next offset}`` and its tasks' ranges."""

    def __init__(self, plan: QueryPlan, start: dict[str, int]) -> None:
        self.plan, self.start = plan, dict(start)
        self.snapshot: Snapshot | None = None  # set by the group before each round (None: Kafka unreachable)

    def initialOffset(self) -> dict[str, int]:  # noqa: N802 - the planner's names
        return dict(self.start)

    @cached_property
    def admin(self) -> Any:
        """The AdminClient of the member's cluster (``connector_admin``), asked at every round: its settings are
        built once, not per round (with a hundred members that was most of an idle round's cost)."""
        return connector_admin(self.plan)

    def _subscribed(self) -> list[TopicPartitionKey]:
        assert self.snapshot is not None
        return self.snapshot.subscribed_by(self.plan)

    def latestOffset(self, start: dict[str, int], limit: Any = None) -> dict[str, int]:  # noqa: N802
        """Each subscribed partition's position moved towards its end, at most ``batch.max.records``; a partition
        new to the member, or whose position is past its end, starts at its earliest offset (no records yet)."""
        if self.snapshot is None:
            return dict(start)
        out = dict(start)
        restart: list[TopicPartitionKey] = []
        for tp in self._subscribed():
            key, latest = tp_key(*tp), self.snapshot.latest.get(tp)
            if latest is None:
                continue
            position = out.get(key)
            if position is None or position > latest:
                restart.append(tp)
            else:
                out[key] = min(latest, position + self.plan.batch_max_records)
        for tp, earliest in self.snapshot.earliest(restart).items():
            if tp_key(*tp) in out:
                log.warning("Connector %s: position %d of %s-%d is past its end (%d); it starts again at %d",
                            self.plan.connector, out[tp_key(*tp)], tp[0], tp[1], self.snapshot.latest[tp], earliest)
            out[tp_key(*tp)] = earliest
        return out

    def reportLatestOffset(self) -> dict[str, int] | None:  # noqa: N802
        if self.snapshot is None:
            return None
        return {tp_key(*tp): self.snapshot.latest[tp] for tp in self._subscribed() if tp in self.snapshot.latest}

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[SinkPart]:
        """One ``SinkPart`` per live task with records to read: its partitions' ranges (Connect's assignment)."""
        tps = sorted((k.rsplit(":", 1)[0], int(k.rsplit(":", 1)[1])) for k in end)
        owners = assign_tasks(tps, self.plan.live_tasks) if tps and self.plan.live_tasks else {}
        parts: dict[int, SinkPart] = {}
        for tp, task in owners.items():
            key = tp_key(*tp)
            s, e = start.get(key), end[key]
            if s is not None and e > s:
                parts.setdefault(task, SinkPart(self.plan.connector, task, [])).ranges.append((*tp, s, e))
        return [parts[t] for t in sorted(parts)]

    def stop(self) -> None:
        """Nothing runs on the driver for a sink member."""


class SinkGroup(SharedGroup):
    """A shared query of sink connectors: each batch's tasks read their ranges and put them."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.started_ms = int(time.time() * 1000)
        self._unreachable: set[str] = set()  # servers whose last look-up failed (logged once until it works)
        self._clusters: dict[int, ClusterWatch] = {}  # by id of the cluster's AdminClient (``connector_admin``)
        # the members of the last round by cluster (``_by_cluster``), and each cluster's snapshot they all hold
        self._grouped: tuple[list[Member], dict[int, tuple[Any, list[Member], list[QueryPlan]]]] | None = None
        self._handed: dict[int, Snapshot | None] = {}

    def before_round(self, members: list[Member]) -> bool:
        """One look-up per cluster for all members on it; a cluster that does not answer plans nothing new.
        False when every member's snapshot is the one it had (no end moved, no topic came or went). An idle round
        of the same members walks none of them: at a hundred members those walks were most of its cost."""
        changed = False
        by_cluster = self._by_cluster(members)
        for key in set(self._clusters) - set(by_cluster):  # no member on that cluster any more
            self._clusters.pop(key).close()
        for key, (admin, on_it, plans) in by_cluster.items():
            servers = on_it[0].plan.bootstrap_servers
            try:
                cluster = self._clusters.get(key)
                if cluster is None:
                    # the watch stands in for the ListOffsets this cluster's AdminClient would send: that identity
                    cluster = self._clusters[key] = ClusterWatch(admin, admin_identity_consumer(on_it[0].plan))
                snapshot: Snapshot | None = cluster.snapshot(plans)
                self._unreachable.discard(servers)
            except Exception as e:
                snapshot = None
                if servers not in self._unreachable:
                    self._unreachable.add(servers)
                    log.warning("Shared query %s: Kafka at %s did not answer (%s); its sinks wait", self.key,
                                servers, e)
            if key in self._handed and self._handed[key] is snapshot:
                continue  # the same members hold it since the last round
            for m in on_it:
                changed = changed or m.reader.snapshot is not snapshot
                m.reader.snapshot = snapshot
            self._handed[key] = snapshot
        return changed

    def _by_cluster(self, members: list[Member]) -> dict[int, tuple[Any, list[Member], list[QueryPlan]]]:
        """``members`` by the id of their cluster's AdminClient: (admin, members, their plans); the last round's
        grouping while the members are the same."""
        if self._grouped is not None and self._grouped[0] == members:
            return self._grouped[1]
        by_cluster: dict[int, tuple[Any, list[Member], list[QueryPlan]]] = {}
        for m in members:
            admin = m.reader.admin
            _, on_it, plans = by_cluster.setdefault(id(admin), (admin, [], []))
            on_it.append(m)
            plans.append(m.plan)
        self._grouped, self._handed = (members, by_cluster), {}  # new members: hand every snapshot out again
        return by_cluster

    def planner_stopped(self) -> None:
        super().planner_stopped()
        with self.lock:
            for cluster in self._clusters.values():
                cluster.close()
            self._clusters.clear()
            # py4j keeps the planner, and with it this group: the last round's members (their AdminClients) go
            self._grouped, self._handed = None, {}

    def member_progress(self, member: Member) -> dict[str, Any] | None:
        """The member's lag as Spark's Kafka source reports it (``maxOffsetsBehindLatest``), for ``/metrics``."""
        latest = member.reader.reportLatestOffset()
        if not latest or not member.produced:
            return None
        position = json.loads(member.produced[-1])
        behind = max((end - position.get(key, end) for key, end in latest.items()), default=0)
        return {"sources": [{"metrics": {"maxOffsetsBehindLatest": str(max(0, behind))}}]}

    def _write_rows(self, df: DataFrame, batch_id: int, members: list[Member]) -> list[Any]:
        writes = {m.name: m.write for m in members}
        # Monotonic across the group's checkpoints and this driver's restarts; sinks here do not skip by id.
        sink_batch = sink_batch_id(self.started_ms, batch_id)
        bound_s = slow_task_s(self.trigger_ms)

        def put(batches: Any) -> Any:
            return put_members(writes, sink_batch, batches, bound_s)
        return df.mapInArrow(put, SHARED_RESULT_SCHEMA).collect()
