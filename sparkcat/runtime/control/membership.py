"""Which driver of a cluster leads: Kafka's group coordinator with Kafka stores, a file lock without.

With Kafka stores every driver joins the consumer group ``sparkcat-leader.<group.id>`` subscribed to
the single-partition config topic; the member holding partition 0 is the leader (DESIGN §6). The
group is a plain consumer group (protocol ``consumer``, eager ``range`` assignor); each member's
``client.id`` is ``<join time in ms, 13 digits>@<REST URL>`` and so is the start of its member id, by
which the assignor sorts members: the oldest member holds partition 0, and a driver joining never takes
the leadership away. (An eager rebalance revokes and assigns again within one rebalance; leadership
changes only with the assignment that completes it. librdkafka's cooperative-sticky assignor was tried
first and left partition 0 unassigned after members left and joined again.) The group cannot clash with
a Kafka Connect cluster using the same ``group.id``, whose members join the group ``<group.id>`` with
protocol ``connect``. Standbys learn the leader's URL from the coordinator's description of the group.
Every member asks the coordinator for the group's committed
offsets once per heartbeat; that round trip is how a leader checks that it is still in contact with
the coordinator: a leader that has not heard from it for ``session.timeout.ms`` minus two heartbeats
stops leading before the coordinator gives its partition to another driver, so two leaders never run
connectors at once.

Without a broker (local stores) ``StateDirLock`` takes an ``fcntl`` lock on the state directory; a
second driver on the same directory waits for it as a standby.
"""

from __future__ import annotations

import fcntl
import logging
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from sparkcat.errors import StorageError
from sparkcat.kafka.client_settings import admin_settings, consumer_settings
from sparkcat.kafka.group_members import GroupMember, group_members
from sparkcat.kafka.producers import LeaderLease
from sparkcat.runtime.control.rebalances import RebalanceLog, RebalanceView
from sparkcat.runtime.supervision import Outage
from sparkcat.storage.log import KeyedLog

log = logging.getLogger(__name__)

#: Prefix of the consumer group the drivers of one cluster join (never Connect's own ``group.id``).
GROUP_PREFIX = "sparkcat-leader."


def transactional_id(group_id: str) -> str:
    """The config log writer's ``transactional.id``: Kafka Connect's ``connect-cluster-<group.id>``."""
    return f"connect-cluster-{group_id}"


@dataclass(frozen=True)
class GroupSettings:
    """The group keys of the worker (Connect's names) and where the group lives.

    ``client_config``: the worker's Kafka client settings, role prefixes kept; the admin client and the
    group member each take their share (``sparkcat.kafka.client_settings``).
    """

    bootstrap_servers: str
    group_id: str
    config_topic: str
    url: str
    session_timeout_ms: int = 6000
    heartbeat_interval_ms: int = 1000
    rebalance_timeout_ms: int = 60000
    client_config: tuple[tuple[str, str], ...] = ()

    @property
    def group(self) -> str:
        return GROUP_PREFIX + self.group_id

    @property
    def grace_s(self) -> float:
        """How long a leader may go without hearing from the coordinator before it stops leading."""
        return max(1.0, (self.session_timeout_ms - 2 * self.heartbeat_interval_ms) / 1000)


class GroupMembership:
    """This driver's membership in the cluster's group; ``start`` joins, a thread keeps it current."""

    def __init__(self, settings: GroupSettings):
        self.settings = settings
        self._consumer: Any = None
        self._admin: Any = None
        self._lock = threading.Lock()
        self._assigned = False           # partition 0 is ours (rebalance callbacks)
        self._lease: LeaderLease | None = None  # what this driver's exactly-once commits prove leadership with
        self._last_contact = 0.0         # monotonic time of the last answer from the coordinator
        self._leader_url: str | None = None
        self._rejoin = threading.Event()  # step_down asked the membership thread to leave and join again
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        #: Down while the coordinator has not answered for the grace period (``/health`` answers 503 with it).
        self.outage = Outage("The group coordinator")
        #: The group's join rounds as this member saw them (Connect's connect-worker-rebalance-metrics).
        self.rebalances = RebalanceLog()
        #: Called when partition 0 comes or goes, or its lease is renewed (the herder wakes at once instead of at its
        #: next tick; the JVM writers get the new lease).
        self.on_change: Callable[[], None] = lambda: None

    # -- lifecycle -------------------------------------------------------------------

    def start(self) -> None:
        """Join the group and start the thread that polls it and asks its coordinator once per heartbeat."""
        from confluent_kafka.admin import AdminClient

        s = self.settings
        self._admin = AdminClient(admin_settings(s.bootstrap_servers, dict(s.client_config)))
        self._join()
        self._last_contact = time.monotonic()  # the coordinator gets its grace period from the start
        self._thread = threading.Thread(target=self._run, name="sparkcat-membership", daemon=True)
        self._thread.start()
        log.info("Joining group %s on %s as %s", s.group, s.bootstrap_servers, s.url)

    def stop(self) -> None:
        """Leave the group (the partition moves to a standby at once, without waiting for the session)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None
        self._admin = None  # an AdminClient has no close: dropping it ends its threads and connections

    def _run(self) -> None:
        next_check = 0.0
        while not self._stop.is_set():
            if self._rejoin.is_set():
                self._rejoin.clear()
                self._leave_and_join()
            try:
                self._consumer.poll(0.1)  # serves rebalance callbacks; the records themselves are not used
            except Exception as e:  # noqa: BLE001 - a consumer error is logged; membership goes on
                log.warning("Polling group %s failed: %s", self.settings.group, e)
            if time.monotonic() >= next_check:
                next_check = time.monotonic() + self.settings.heartbeat_interval_ms / 1000
                self._check_coordinator()

    # -- group state -----------------------------------------------------------------

    def _on_assign(self, consumer: Any, partitions: list) -> None:
        """The assignment of a completed rebalance (eager: every member gets one, empty or not).

        The partition is assigned paused: membership never reads the config topic (the config stream does).
        """
        consumer.assign(partitions)
        if partitions:
            consumer.pause(partitions)
        holds = self._holds_partition_0(partitions)
        group_metadata = consumer.consumer_group_metadata()  # this generation and member id
        self.rebalances.completed(_generation(group_metadata))
        metadata = group_metadata if holds else None
        lease = LeaderLease(metadata, self.settings.config_topic) if holds else None
        with self._lock:
            changed, self._assigned = holds != self._assigned, holds
            renewed, self._lease = lease != self._lease, lease
            if holds:
                self._last_contact, self._leader_url = time.monotonic(), self.settings.url
        if changed:
            log.info("Group %s: this driver (%s) %s the config topic's partition 0: %s", self.settings.group,
                     self.settings.url, "holds" if holds else "no longer holds", "leader" if holds else "standby")
        if changed or renewed:  # a rebalance that kept the leader gives it a new generation, hence a new lease
            self.on_change()

    def _on_revoke(self, consumer: Any, partitions: list) -> None:
        """An eager rebalance begins: every member gives its assignment up and joins again."""
        self.rebalances.started()

    def _on_lost(self, consumer: Any, partitions: list) -> None:
        """The session expired (a pause, a network cut): partition 0 may be another member's already.

        librdkafka would rejoin at once under the same ``client.id``, whose old join time sorts first, and so
        take partition 0 back from the driver that leads now (issue 24). Leaving the subscription here stops
        that rejoin; the membership thread then joins as a new member, the youngest, and stands by.
        """
        self.rebalances.started()  # as Connect's onRevoked for lost partitions: the rejoin is a rebalance
        consumer.unsubscribe()
        self._rejoin.set()
        with self._lock:
            changed, self._assigned, self._lease = self._assigned, False, None
        if changed:
            log.info("Group %s: this driver (%s) lost its session: standby; rejoining as a new member",
                     self.settings.group, self.settings.url)
            self.on_change()

    def _holds_partition_0(self, partitions: list) -> bool:
        """Partition 0 of our config topic (drivers of other clusters may share the group name)."""
        return any(p.topic == self.settings.config_topic and p.partition == 0 for p in partitions)

    def _check_coordinator(self) -> None:
        """Ask the group coordinator for the group's committed offsets (proof of contact); a standby then
        asks it who holds partition 0 (the leader's URL is its ``client.id``).

        The description is asked only right after the coordinator answered, and never with the AdminClient's
        coordinator requests, which can abort the process when a network cut heals (``sparkcat.kafka.group_members``).
        """
        from confluent_kafka import TopicPartition

        s = self.settings
        timeout = max(1.0, s.grace_s / 2)  # a busy machine answers slowly: only silence counts
        try:
            self._consumer.committed([TopicPartition(s.config_topic, 0)], timeout=timeout)
        except Exception as e:  # noqa: BLE001 - no answer (KafkaException, a timeout): contact is not renewed
            log.debug("Group %s: no answer from the coordinator: %s", s.group, e)
            if time.monotonic() - self._last_contact >= s.grace_s:  # a leader stops leading now
                self.outage.failed(e)
            return
        self.outage.recovered()
        with self._lock:
            lapsed = self._assigned and time.monotonic() - self._last_contact >= s.grace_s
        if lapsed and not self._still_holding(timeout):
            return  # after a pause or a cut longer than the grace period, only the coordinator's word counts
        with self._lock:
            self._last_contact = time.monotonic()
            assigned = self._assigned
            if assigned:
                self._leader_url = s.url
        if not assigned:
            self._leader_url = self._described_holder(timeout) or self._leader_url

    def _still_holding(self, timeout: float) -> bool:
        """After contact lapsed: whether the coordinator still has this member holding partition 0.

        The answer to the offsets request only proves the coordinator is reachable; a session that expired
        meanwhile shows here, before librdkafka notices it, and this driver then rejoins as a standby.
        """
        members = self._describe(timeout)
        if members is None:
            return False  # asked again at the next heartbeat; no leadership meanwhile
        me = self._consumer.memberid()
        if any(m.member_id == me and m.holds(self.settings.config_topic, 0) for m in members):
            return True
        log.info("Group %s: this driver's (%s) session expired while it was out of contact", self.settings.group,
                 self.settings.url)
        self._on_lost(self._consumer, [])
        return False

    def _describe(self, timeout: float) -> list[GroupMember] | None:
        """The group's members as the coordinator describes them, or None when it does not answer."""
        return group_members(self._admin, self.settings.group, timeout)

    def _described_holder(self, timeout: float) -> str | None:
        """The ``client.id`` (REST URL) of the member the coordinator reports holding partition 0."""
        members = self._describe(timeout)
        if members is None:
            return None
        holder = next((m.client_id for m in members if m.holds(self.settings.config_topic, 0)), None)
        return holder.partition("@")[2] if holder else None  # client.id: "<joined at, ms>@<REST URL>"

    # -- Leadership --------------------------------------------------------------------

    def is_leader(self) -> bool:
        """Partition 0 is ours and the coordinator answered within the grace period."""
        with self._lock:
            return self._assigned and time.monotonic() - self._last_contact < self.settings.grace_s

    def leader_url(self) -> str | None:
        with self._lock:
            return self._leader_url

    def own_url(self) -> str:
        return self.settings.url

    def rebalance_view(self) -> RebalanceView:
        """connect-worker-rebalance-metrics now: the join rounds, and the leader's URL as this driver knows it."""
        return self.rebalances.view(self.leader_url())

    def lease(self) -> LeaderLease | None:
        """This generation's proof of leadership for exactly-once commits (None unless partition 0 is ours)."""
        with self._lock:
            return self._lease

    def lease_key(self) -> str:
        """The key of this driver's lease among the JVM writers' leases: the leader group's name."""
        return self.settings.group

    def config_writer(self) -> KeyedLog:
        """A transactional writer of the config log; creating it fences every older writer (a deposed leader)."""
        from sparkcat.storage.kafka.log import KafkaLog

        s = self.settings
        writer = KafkaLog(s.bootstrap_servers, s.config_topic, client_config=dict(s.client_config),
                          transactional_id=transactional_id(s.group_id))
        writer.start_writer()
        return writer

    def step_down(self, reason: str) -> None:
        """Fenced by a newer writer: give partition 0 up by leaving and joining the group again."""
        log.warning("Group %s: stepping down (%s); rejoining as a standby", self.settings.group, reason)
        with self._lock:
            self._assigned, self._lease = False, None
        self._rejoin.set()  # done by the membership thread: the consumer is used from one thread only

    def _join(self) -> None:
        """A new member (a consumer of its own) subscribed to the config topic."""
        from confluent_kafka import Consumer

        s = self.settings
        joined_ms = int(time.time() * 1000)
        self.rebalances.started()
        self._consumer = Consumer({
            **consumer_settings(s.bootstrap_servers, dict(s.client_config)), "group.id": s.group,
            "client.id": f"{joined_ms:013d}@{s.url}", "session.timeout.ms": s.session_timeout_ms,
            "heartbeat.interval.ms": s.heartbeat_interval_ms,
            "max.poll.interval.ms": s.rebalance_timeout_ms,  # librdkafka's rebalance timeout
            "partition.assignment.strategy": "range",  # by member id, i.e. by join time: the oldest leads
            "enable.auto.commit": False, "auto.offset.reset": "latest", "enable.partition.eof": False})
        self._consumer.subscribe([s.config_topic], on_assign=self._on_assign, on_revoke=self._on_revoke,
                                 on_lost=self._on_lost)

    def _leave_and_join(self) -> None:
        """Leave the group (partition 0 goes to another member at once) and join as a new member."""
        self._consumer.close()
        self._join()


def _generation(group_metadata: Any) -> int | None:
    """The group generation in librdkafka's serialised group metadata, None when it cannot be read."""
    from sparkcat.spark.driver.leases import parse_group_metadata
    try:
        return parse_group_metadata(bytes(group_metadata))[1]
    except (TypeError, ValueError):
        return None


class StateDirLock:
    """An exclusive ``fcntl`` lock on ``<state.dir>/driver.lock``: one driver per state directory."""

    def __init__(self, state_dir: str):
        self.path = Path(state_dir).resolve() / "driver.lock"
        self._fd: int | None = None

    def acquire(self, stop: threading.Event | None = None, poll_s: float = 0.5) -> None:
        """Take the lock, waiting as a standby while another driver holds it."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        waiting = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not waiting:
                    log.info("State directory %s is locked by another driver; waiting as a standby", self.path.parent)
                    waiting = True
                if stop is not None and stop.wait(poll_s):
                    os.close(fd)
                    raise StorageError(f"Stopped while waiting for the lock {self.path}") from None
                if stop is None:
                    time.sleep(poll_s)
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._fd = fd
        log.info("Took the lock %s: this driver leads", self.path)

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor releases the flock
            self._fd = None
