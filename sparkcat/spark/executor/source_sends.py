"""Source records that Kafka refuses: Connect's ``KAFKA_PRODUCE`` stage under ``errors.tolerance``.

Kafka Connect (KIP-298, KIP-779; ``WorkerSourceTask.producerSendFailed``): when the producer
reports that a record could not be sent (``RecordTooLargeException`` for a record over the
topic's ``max.message.bytes``, another non-retriable error), then

- with ``errors.tolerance=all`` the failure is reported (the error log) and the record is
  acknowledged: its offset is committed as if it had been written, and the task goes on;
- with ``none`` the task fails: "Unrecoverable exception from producer send callback";
- an exactly-once task (``ExactlyOnceWorkerSourceTask``) cannot skip a record: the failed send
  makes its transaction abort, and the task fails whatever ``errors.tolerance`` says.

``SourceSends`` does the same for one Spark partition of a source connector's micro-batch, as the
delivery callback of its records (``source_to_kafka.produce_arrow_rows``):

- librdkafka reports most failures in delivery reports, but refuses some records in ``produce``
  itself (over the producer's ``message.max.bytes``), where Java's producer would call the record's
  callback; both are handled alike (``on_error``). A full queue and a fatal producer error are not a
  record's failure.
- With ``all`` (at least once): each failed record is logged (an ERROR line, as Connect logs every
  failed send) and goes to ``RecordErrors.failed`` at stage
  ``KAFKA_PRODUCE`` (the error log, the dead letter queue as sparkcat gives source connectors one,
  the error counters) and counts as read but not written; its source offset stays in the batch's
  offsets. To know which source record a delivery report is about, each record then gets its own
  callback holding its task, source partition and offset: a small cost per record, paid only with
  ``errors.tolerance=all``.
- Otherwise the first failure fails the task, with a trace naming the topic, Kafka partition, key
  and size of the record (and its source partition and offset when ``produce`` refused it); the
  shared callback costs nothing per record. ``exactly_once``: the trace says the transaction aborted.

Runs on executors; built per Spark partition.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from sparkcat.errors import ConnectorError
from sparkcat.kafka.producers import Deliveries
from sparkcat.spark.executor.batch_results import Tallies
from sparkcat.spark.executor.error_handling import RecordErrors, SourceRow, without_rows
from sparkcat.spark.query_plan import task_failure_message

__all__ = ["KAFKA_PRODUCE", "SourceSends", "SendFailedError", "KafkaProduce", "SentRecord"]

log = logging.getLogger(__name__)

KAFKA_PRODUCE = "KAFKA_PRODUCE"
_SHOWN_KEY = 100  # characters of a key's repr shown in a trace
_CAUSE_WAIT_S = 5.0  # how long a refusal in an erroneous state waits for the delivery report that caused it


class SendFailedError(ConnectorError):
    """Kafka refused a source record and it could not be skipped: its task fails."""


class KafkaProduce:
    """The "class" a ``KAFKA_PRODUCE`` failure names (Connect names ``WorkerSourceTask``): the send to Kafka."""


@dataclass
class SentRecord(SourceRow):
    """A source record as it was sent to Kafka (key and value as bytes), with where it came from when known."""

    partition: int | None = None            # the Kafka partition, once the producer chose one
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)

    def details(self) -> str:
        """The record for the error log: its source coordinates, topic, key, and value size (not the value)."""
        size = 0 if self.value is None else len(self.value)
        return (f", where source record is = SourceRecord{{sourcePartition={self.source_partition}, "
                f"sourceOffset={self.source_offset}}} ConnectRecord{{topic='{self.topic}', key={_shown(self.key)}, "
                f"value=<{size} bytes>, timestamp={self.timestamp_ms}}}")

    def dead_letter(self) -> tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]], int | None]:
        """The bytes that Kafka refused, as they were sent."""
        return self.key, self.value, list(self.headers), self.timestamp_ms or None

    def described(self) -> str:
        """``topic 't' (partition 0, key b'k', 20000 bytes)``, plus its source coordinates when known."""
        size = 0 if self.value is None else len(self.value)
        where = "" if self.partition is None or self.partition < 0 else f"partition {self.partition}, "
        source = "" if self.source_partition is None else \
            f", from source partition {self.source_partition} at offset {self.source_offset}"
        return f"topic '{self.topic}' ({where}key {_shown(self.key)}, {size} bytes{source})"


def _shown(key: Any) -> str:
    text = repr(key)
    return text if len(text) <= _SHOWN_KEY else text[:_SHOWN_KEY] + "..."


def _headers_of(message: Any) -> list[tuple[str, bytes | None]]:
    return list(getattr(message, "headers", lambda: None)() or [])


@dataclass
class _Failure:
    task: int | None
    error: BaseException
    record: SentRecord


@dataclass
class _Rows:
    """The source coordinates of the records of one ``produce_all`` call, by index (failure path only)."""

    tasks: list[int]
    partitions: list[str]
    offsets: list[str]


class SourceSends(Deliveries):
    """Delivery reports of one Spark partition's source records, and what a refused record does (module doc)."""

    def __init__(self, connector: str, errors: RecordErrors, tallies: Tallies, *, exactly_once: bool = False) -> None:
        super().__init__()
        self.connector, self.errors, self.tallies = connector, errors, tallies
        self.exactly_once = exactly_once
        self.tolerate = errors.settings.tolerance_all and not exactly_once
        self.failures: list[_Failure] = []
        self.skipped = 0

    # ------------------------------------------------------------------ callbacks (served by poll and flush)

    def __call__(self, err: Any, msg: Any) -> None:
        """The shared callback: keeps the first failure, which fails the task."""
        if err is not None and not self.failures:
            self.failures.append(_Failure(None, _exception(err), _sent(msg)))

    def _one(self, rows: _Rows, i: int, err: Any, msg: Any) -> None:
        if err is not None:
            record = _sent(msg, rows.partitions[i], rows.offsets[i])
            self.failures.append(_Failure(rows.tasks[i], _exception(err), record))

    def callbacks(self, producer: Any, batch: Any, skipped: list[int], topics: Any, keys: list[Any],
                  values: list[Any], headers: list[Any] | None) -> tuple[Any, Callable[[int, Exception], None]]:
        """``on_delivery`` and ``on_error`` for ``produce_all`` of the rows of ``batch`` not ``skipped``.

        ``topics``, ``keys``, ``values``, ``headers``: what ``producer`` is given (the rows kept).
        """
        rows: _Rows | None = None

        def source_rows() -> _Rows:
            nonlocal rows
            if rows is None:
                col, index = batch.column, batch.schema.get_field_index
                rows = _Rows(*(without_rows(col(index(name)).to_pylist(), skipped)
                               for name in ("_task", "_partition", "_offset")))
            return rows

        def refused(i: int, error: Exception) -> None:
            at = source_rows()
            record = SentRecord(at.partitions[i], at.offsets[i], topics if isinstance(topics, str) else topics[i],
                                keys[i], values[i], headers=list(headers[i] or []) if headers is not None else [])
            if not self.tolerate:
                self._serve(producer, _erroneous_state(error))  # failures of earlier records first
            self.failures.append(_Failure(at.tasks[i], error, record))
            if not self.tolerate:
                self.raise_error()

        if not self.tolerate:
            return self, refused
        each = source_rows()
        return [partial(self._one, each, i) for i in range(len(each.tasks))], refused

    def _serve(self, producer: Any, wait: bool) -> None:
        """Serve the delivery reports that arrived; ``wait``: until one reports a failure (or a few seconds)."""
        producer.poll(0)
        deadline = time.monotonic() + (_CAUSE_WAIT_S if wait else 0)
        while not self.failures and time.monotonic() < deadline:
            producer.poll(0.1)

    def explain(self, producer: Any, error: Exception) -> None:
        """Raise what made ``producer`` refuse a record with ``error``: the first failed delivery when there is
        one (a transaction whose record Kafka refused refuses every later record with ``_STATE``), else ``error``."""
        self._serve(producer, _erroneous_state(error))
        if self.failures:
            self.raise_error()
        raise error

    # ------------------------------------------------------------------ after poll and flush

    def raise_error(self) -> None:
        """Handle the failures reported so far: each is skipped (``errors.tolerance=all``), or the first fails the task."""
        failures, self.failures = self.failures, []
        for failure in failures:
            if not self.tolerate:
                raise self._task_failure(failure)
            task = failure.task
            # Connect logs every failed send, whatever errors.log.enable says: nothing is skipped silently
            log.error("Task %s-%s failed to send a record to %s; skipped (errors.tolerance=all): %s",
                      self.connector, task, failure.record.described(), failure.error)
            self.errors.failed(task, KAFKA_PRODUCE, KafkaProduce(), failure.error, failure.record)
            self.tallies[task].records -= 1  # read, and its offset counts, but not written
            self.skipped += 1

    def _task_failure(self, failure: _Failure) -> SendFailedError:
        task = failure.task
        if task is None and len(self.tallies) == 1:
            task = next(iter(self.tallies))
        text = f"Unrecoverable exception from producer send callback: the record to {failure.record.described()} " \
               f"was not written: {type(failure.error).__name__}: {failure.error}"
        if self.exactly_once:
            text += ". The task writes exactly once, so its transaction is aborted, whatever errors.tolerance says"
        elif self.errors.settings.tolerance_all is False:
            text += " (errors.tolerance=none)"
        error = SendFailedError(text)
        if task is None:
            return error
        return SendFailedError(task_failure_message(self.connector, task, error))


def _erroneous_state(error: Exception) -> bool:
    """Whether a producer refused a record because of its state (an abortable transaction), not the record."""
    from confluent_kafka import KafkaError
    kafka_error = error.args[0] if error.args else None
    return getattr(kafka_error, "code", lambda: None)() == KafkaError._STATE


def _exception(err: Any) -> BaseException:
    """A delivery report's KafkaError as the exception Connect's callback would get."""
    if isinstance(err, BaseException):
        return err
    from confluent_kafka import KafkaException
    return KafkaException(err)


def _sent(msg: Any, source_partition: str | None = None, source_offset: str | None = None) -> SentRecord:
    """The record of a delivery report (the message librdkafka gives back; None: unknown)."""
    if msg is None:
        return SentRecord(source_partition, source_offset, None, None, None)
    stamp = msg.timestamp()[1] if hasattr(msg, "timestamp") else None
    return SentRecord(source_partition, source_offset, msg.topic(), msg.key(), msg.value(),
                      stamp if stamp and stamp > 0 else None, partition=msg.partition(), headers=_headers_of(msg))
