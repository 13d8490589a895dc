"""How a connector comes back from failures: transient ones retried, FAILED ones restarted automatically.

A connector's query fails with the exception of the Spark task (or driver step) that broke it.
``transient_cause`` sorts that text:

- an **outage** (Kafka unreachable, a leader change, a request timeout, a store that cannot be
  read or written): never a task failure. The query is restarted from its checkpoint after
  Connect's backoff (300 ms doubling, a random delay below ``errors.retry.delay.max.ms`` once past
  it), again and again until Kafka answers, as Connect's producers and consumers retry forever
  (``delivery.timeout.ms`` and ``max.block.ms`` at their maximum). The checkpoint replays the batch
  that failed, so nothing is lost.
- a **retriable** error (``sparkcat.errors.RetriableError`` raised by a connector's task, Connect's
  ``RetriableException``): retried the same way for ``errors.retry.timeout`` ms (0, the default:
  not at all; -1: forever), then the task is FAILED.
- anything else: the task is FAILED at once.

``AutoRestart`` is Strimzi's auto-restart of FAILED connectors and tasks: restart number n + 1
comes ``min(n * n + n, 60)`` backoff units (a minute by default) after restart n, at most
``auto.restart.max.restarts`` times (-1: no limit); the count is reset once the connector has
run that long without failing again.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from sparkcat.config.worker import AutoRestartPolicy
from sparkcat.model.status import State
from sparkcat.runtime.supervision import connect_retry_delay

log = logging.getLogger("sparkcat.herder")

#: Texts in a failure that mean Kafka or a store could not be reached in time: librdkafka's error
#: names, the Java client's exception classes (Spark's Kafka source and writer), sparkcat's own.
OUTAGE_MARKERS = (
    "_TRANSPORT", "_ALL_BROKERS_DOWN", "_MSG_TIMED_OUT", "_TIMED_OUT", "REQUEST_TIMED_OUT",
    "NOT_LEADER_FOR_PARTITION", "NOT_LEADER_OR_FOLLOWER", "LEADER_NOT_AVAILABLE", "NETWORK_EXCEPTION",
    "NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE", "COORDINATOR_LOAD_IN_PROGRESS", "NOT_ENOUGH_REPLICAS",
    "org.apache.kafka.common.errors.TimeoutException", "org.apache.kafka.common.errors.DisconnectException",
    "org.apache.kafka.common.errors.NetworkException", "org.apache.kafka.common.errors.NotLeaderOrFollowerException",
    "org.apache.kafka.common.errors.LeaderNotAvailableException",
    "org.apache.kafka.common.errors.NotEnoughReplicasException",
    "org.apache.kafka.common.errors.CoordinatorNotAvailableException",
    "StorageUnavailable:",  # sparkcat's own stores (a permanent StorageError fails the task with its reason)
    # An exactly-once producer fenced by another instance of its task (a driver resumed from a pause runs one
    # batch before it notices it does not lead), or a lease refused because leadership moved: the batch is
    # replayed by whichever driver leads, and its replay rule keeps it exactly once.
    "_FENCED", "PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH", "ILLEGAL_GENERATION", "UNKNOWN_MEMBER_ID",
    "org.apache.kafka.common.errors.ProducerFencedException", "org.apache.kafka.common.errors.InvalidProducerEpochException",
    "consumer group metadata mismatch",  # the Java client's CommitFailedException for a refused lease
    "sparkcat.LeaseUnavailable",          # the JVM exactly-once writer of a driver that does not lead now
)
#: A connector's own transient error (``sparkcat.errors.RetriableError``, or Connect's name for it).
RETRIABLE_MARKERS = ("RetriableError:", "RetriableException:")


def transient_cause(text: str) -> tuple[str, str] | None:
    """``("outage"|"retriable", marker)`` when a failure text names a transient error, else None.

    >>> transient_cause("KafkaException: KafkaError{code=_MSG_TIMED_OUT,val=-192}")
    ('outage', '_MSG_TIMED_OUT')
    >>> transient_cause("sparkcat task failed: c-0: RetriableError: try later")
    ('retriable', 'RetriableError:')
    >>> transient_cause("ValueError: bad record") is None
    True
    """
    for marker in OUTAGE_MARKERS:
        if marker in text:
            return "outage", marker
    for marker in RETRIABLE_MARKERS:
        if marker in text:
            return "retriable", marker
    return None


@dataclass(frozen=True)
class RetryPolicy:
    """A connector's ``errors.retry.timeout`` and ``errors.retry.delay.max.ms`` (Connect's defaults)."""

    timeout_ms: int = 0
    delay_max_ms: int = 60000

    @classmethod
    def of(cls, config: dict[str, str]) -> RetryPolicy:
        return cls(int(config.get("errors.retry.timeout") or 0),
                   int(config.get("errors.retry.delay.max.ms") or 60000))


@dataclass
class Retries:
    """The run of transient failures of one connector's query, and when it may start again."""

    attempts: int = 0
    first_at: float | None = None
    not_before: float = 0.0
    marker: str | None = None

    def retry(self, name: str, text: str, policy: RetryPolicy, now: float | None = None) -> bool:
        """True when the failure ``text`` is to be retried (not a task failure); sets when."""
        found = transient_cause(text)
        if found is None:
            return False
        kind, marker = found
        now = time.monotonic() if now is None else now
        first = self.first_at if self.first_at is not None else now
        elapsed_ms = (now - first) * 1000
        remaining = None
        if kind == "retriable" and policy.timeout_ms >= 0:
            remaining = policy.timeout_ms - elapsed_ms
            if remaining <= 0:
                log.warning("Connector %s: retries of %s ran out after %.0f ms (errors.retry.timeout=%d)",
                            name, marker.rstrip(":"), elapsed_ms, policy.timeout_ms)
                return False
        self.first_at, self.attempts = first, self.attempts + 1
        delay = connect_retry_delay(self.attempts, policy.delay_max_ms, remaining)
        self.not_before = now + delay
        if marker != self.marker:
            log.warning("Connector %s: its query failed with a transient error (%s); restarting it from its "
                        "checkpoint with backoff until it works%s: %s\n%s", name, marker.rstrip(":"),
                        "" if remaining is None else f" (for {policy.timeout_ms} ms at most)", _first_line(text), text)
            self.marker = marker
        return True

    def due(self, now: float | None = None) -> bool:
        """Whether the query may start (again) now."""
        return (time.monotonic() if now is None else now) >= self.not_before

    def succeeded(self, name: str) -> None:
        """A batch was committed: the run of failures, if any, is over (logged once)."""
        if self.first_at is None:
            return
        log.info("Connector %s recovered from a transient error after %d restart(s) in %.1f s", name,
                 self.attempts, time.monotonic() - self.first_at)
        self.attempts, self.first_at, self.not_before, self.marker = 0, None, 0.0, None


def _first_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[0][:300] if lines else ""


@dataclass
class AutoRestart:
    """Automatic restarts of one connector: how many so far and when the last one was."""

    count: int = 0
    last_at: float | None = None           # monotonic
    last_wall: float | None = None         # epoch seconds, for the status
    _wait_logged: bool = field(default=False, repr=False)

    def due(self, policy: AutoRestartPolicy, failing: bool, now: float | None = None) -> bool:
        """True when a failing connector is to be restarted now; resets the count after a good run."""
        now = time.monotonic() if now is None else now
        since = None if self.last_at is None else now - self.last_at
        if not failing:
            if self.count and since is not None and since > policy.backoff_s(self.count):
                self.count, self._wait_logged = 0, False
            return False
        if not policy.enabled or (0 <= policy.max_restarts <= self.count):
            return False
        return since is None or since >= policy.backoff_s(self.count)

    def restarted(self, now: float | None = None) -> None:
        self.count += 1
        self.last_at = time.monotonic() if now is None else now
        self.last_wall = time.time()

    def status(self, name: str) -> dict[str, Any] | None:
        """Strimzi's ``autoRestart`` status (``AutoRestartStatus``), once the connector was restarted."""
        if self.last_wall is None:
            return None
        stamp = datetime.fromtimestamp(self.last_wall, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        return {"count": self.count, "connectorName": name, "lastRestartTimestamp": stamp}


def auto_restart(rt: Any, reporter: Any, policy: AutoRestartPolicy) -> None:
    """Restart ``rt``'s FAILED connector instance and tasks (only those) when ``policy`` says it is time.

    As ``restart?includeTasks=true&onlyFailed=true`` (what Strimzi calls): the failures are
    cleared and reported RESTARTING; the reconciler then starts the instance and the query again.
    ``rt`` is a ``ConnectorRuntime``, ``reporter`` a ``StatusReporter`` (herder thread).
    """
    failing = rt.failed is not None or bool(rt.failed_tasks)
    if not rt.auto_restart.due(policy, failing):
        return
    rt.auto_restart.restarted()
    tasks = sorted(rt.failed_tasks)
    log.info("Connector %s: automatic restart %d of the failed %s (the next one no sooner than %.0f s from now)",
             rt.name, rt.auto_restart.count, f"tasks {tasks}" if tasks else "connector",
             policy.backoff_s(rt.auto_restart.count))
    restart(rt, reporter, include_tasks=True, only_failed=True, task_ids=tasks)


def restart(rt: Any, reporter: Any, include_tasks: bool, only_failed: bool, task_ids: list[int]) -> list[int]:
    """A restart request applied to ``rt``: what it restarts reported RESTARTING, its failures cleared.

    Returns the ids of the tasks it restarts; stopping the query for them is the caller's.
    """
    tasks = report_restarting(rt, reporter, include_tasks, only_failed, task_ids)
    if not only_failed or rt.failed is not None:
        rt.stop_instance()
        rt.failed = None
    for t in tasks:
        rt.failed_tasks.pop(t, None)
    return tasks


def report_restarting(rt: Any, reporter: Any, include_tasks: bool, only_failed: bool,
                      task_ids: list[int]) -> list[int]:
    """Connect's ``RestartPlan``: the connector restarts unless ``only_failed`` and it did not fail; with
    ``include_tasks`` its tasks do (only the FAILED ones if ``only_failed``). Those show RESTARTING."""
    if not only_failed or rt.failed is not None:
        reporter.connector(rt.name, State.RESTARTING)
    tasks = (sorted(rt.failed_tasks) if only_failed else list(task_ids)) if include_tasks else []
    for t in tasks:
        reporter.task(rt.name, t, State.RESTARTING)
    return tasks
