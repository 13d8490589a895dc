"""Typed failures: what went wrong with a connector, its tasks or its query, as one value passed between objects.

A failure is read from text in one place only, where Spark hands one over (``Failure.of_query``: a
query's exception, whose text carries the executors' Python and Java traces), or from a Python
exception raised on the driver (``Failure.of_exception``). Everything after that (retries with
backoff, FAILED statuses, Connect's error metrics) reads the fields, never the text.

Kinds:

- ``OUTAGE``: Kafka or a store could not be reached in time. Never a task failure: the query starts
  again from its checkpoint after Connect's backoff, for as long as it takes (Connect's clients
  retry forever too). The checkpoint replays the batch that failed, so nothing is lost.
- ``RETRIABLE``: a connector's own ``RetriableError`` (Connect's ``RetriableException``): retried the
  same way for ``errors.retry.timeout`` ms, then the tasks are FAILED.
- ``TASKS``: the named tasks failed (a record, a task method, a query that could not start); they are
  FAILED until restarted, the connector's other tasks go on.
- ``CONNECTOR``: the connector instance itself failed on the driver (``start``, ``task_configs``,
  ``ConnectorContext.raise_error``, an invalid config); FAILED until restarted.
"""

from __future__ import annotations

import re
import traceback
from dataclasses import dataclass
from enum import Enum

from sparkcat.spark.query_plan import TASK_FAILURE_MARK

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
#: Texts that mean one record failed its task (``spark.error_handling``, ``spark.source_sends``).
RECORD_FAILURE_MARKERS = ("Tolerance exceeded in error handler", "Unrecoverable exception from producer send callback")
#: The text of a dead letter that Kafka did not take (``kafka.dead_letter_queue``).
DEAD_LETTER_FAILURE_MARKER = "Could not produce message to dead letter queue"


class FailureKind(str, Enum):
    OUTAGE = "outage"
    RETRIABLE = "retriable"
    TASKS = "tasks"
    CONNECTOR = "connector"


@dataclass(frozen=True)
class Failure:
    """One failure of a connector: its kind, the tasks it fails (none for the connector itself), its trace.

    ``marker`` names what made a transient failure transient (logged once per run of retries);
    ``record_failed`` / ``dead_letter_failed``: a record beyond ``errors.tolerance`` (or refused by
    Kafka) or an undeliverable dead letter failed it, counted in Connect's task error metrics.
    """

    kind: FailureKind
    trace: str
    tasks: tuple[int, ...] = ()
    marker: str | None = None
    record_failed: bool = False
    dead_letter_failed: bool = False

    @property
    def transient(self) -> bool:
        return self.kind in (FailureKind.OUTAGE, FailureKind.RETRIABLE)

    @property
    def reason(self) -> str:
        """The line of the trace that says why (``reason_line``)."""
        return reason_line(self.trace)

    @classmethod
    def of_query(cls, connector: str, text: str, live_tasks: list[int]) -> Failure:
        """A query's failure from the text Spark hands over: transient, or the tasks it names (else every
        live task: a query that fails without naming a task failed them all)."""
        tasks = tuple(failed_task_ids(connector, text) or live_tasks)
        transient = _transient(text)  # a transient failure keeps its tasks: they fail if its retries run out
        kind, marker = transient if transient is not None else (FailureKind.TASKS, None)
        return cls(kind, text, tasks, marker, record_failed=any(m in text for m in RECORD_FAILURE_MARKERS),
                   dead_letter_failed=DEAD_LETTER_FAILURE_MARKER in text)

    @classmethod
    def of_exception(cls, connector: str, error: BaseException, live_tasks: list[int] | None = None) -> Failure:
        """A failure raised on the driver: transient when it says so; the tasks of ``live_tasks`` when given
        (their query could not start); else the connector's own."""
        trace = format_trace(error)
        if live_tasks is not None:
            return cls.of_query(connector, trace, live_tasks)
        transient = _transient(trace)
        if transient is not None:
            return cls(transient[0], trace, marker=transient[1])
        return cls(FailureKind.CONNECTOR, trace)

    @classmethod
    def of_connector(cls, error: BaseException | str) -> Failure:
        """The connector instance failed (its start, its task configs, ``raise_error``): never retried."""
        return cls(FailureKind.CONNECTOR, format_trace(error))


def _transient(text: str) -> tuple[FailureKind, str] | None:
    """``(OUTAGE | RETRIABLE, marker)`` when ``text`` names a transient error, else None.

    >>> _transient("KafkaException: KafkaError{code=_MSG_TIMED_OUT,val=-192}")
    (<FailureKind.OUTAGE: 'outage'>, '_MSG_TIMED_OUT')
    >>> _transient("sparkcat task failed: c-0: RetriableError: try later")
    (<FailureKind.RETRIABLE: 'retriable'>, 'RetriableError:')
    >>> _transient("ValueError: bad record") is None
    True
    """
    for marker in OUTAGE_MARKERS:
        if marker in text:
            return FailureKind.OUTAGE, marker
    for marker in RETRIABLE_MARKERS:
        if marker in text:
            return FailureKind.RETRIABLE, marker
    return None


def failed_task_ids(connector: str, text: str) -> list[int]:
    """Task ids that executors named (``spark.query_plan.task_failure_message``) in a query's exception text.

    >>> failed_task_ids("c", "x\\nsparkcat task failed: c-2: ValueError: bad\\nsparkcat task failed: c-0: E: e")
    [0, 2]
    """
    pattern = re.escape(TASK_FAILURE_MARK) + r"\s+" + re.escape(connector) + r"-(\d+):"
    return sorted({int(m) for m in re.findall(pattern, text)})


def format_trace(error: BaseException | str) -> str:
    """A Connect-style trace: the exception text with its stack, as one string."""
    if isinstance(error, str):
        return error
    return "".join(traceback.format_exception(type(error), error, error.__traceback__))


#: The line of a Python or Java trace that names the exception: ``module.SomeError: message``.
_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.$]*(Error|Exception|Exit|Interrupt|Stopping|Fault)\b(:|$)")


def reason_line(trace: str | None) -> str:
    r"""The line of ``trace`` that says why, for the one log line of a state change.

    A failed query's trace is Python's, then Spark's description of the query (its plan); the reason
    is the task's failure line, else the last exception line before that description.

    >>> reason_line("Traceback (most recent call last):\n  File 'x', line 1\nValueError: bad record 7\n")
    'ValueError: bad record 7'
    """
    text = (trace or "").split("=== Streaming Query ===")[0]
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    for line in lines:
        if TASK_FAILURE_MARK in line:
            return line
    named = [ln for ln in lines if _EXCEPTION_LINE.match(ln)]
    if named:
        return named[-1]
    return lines[-1] if lines else ""
