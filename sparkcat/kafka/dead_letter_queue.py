"""The dead letter queue: records that failed conversion, produced to a topic with Connect's context headers.

Kafka Connect's ``DeadLetterQueueReporter``, in confluent-kafka. The failed record keeps its
key, value, headers and timestamp; with ``errors.deadletterqueue.context.headers.enable`` it
also gets the ``__connect.errors.*`` headers naming where it came from and why it failed
(``context_headers``). Every header value is UTF-8 text, as Connect writes it.

The topic is created the first time a connector needs it (``ensure_topic``, on the driver when
the connector's query starts, as Connect creates it when a task starts) with one partition and
``errors.deadletterqueue.topic.replication.factor``. Records are produced on executors through
the process's cached producer (``producers.cached_producer``) and flushed before the micro-batch
reports its offsets, so a batch counts as written only when its dead letters are acknowledged.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sparkcat.errors import ConnectorError
from sparkcat.kafka.producers import Deliveries, cached_producer

__all__ = ["HEADER_PREFIX", "DeadLetterQueue", "DeadLetterQueueError", "ErrorOrigin", "context_headers",
           "ensure_topic", "exception_class_name", "DLQ_PARTITIONS"]

log = logging.getLogger(__name__)

HEADER_PREFIX = "__connect.errors."
DLQ_PARTITIONS = 1
"""Connect's ``DLQ_NUM_DESIRED_PARTITIONS``."""

Headers = list[tuple[str, bytes | None]]


class DeadLetterQueueError(ConnectorError):
    """The dead letter queue topic could not be created, or a dead letter was not delivered."""


@dataclass(frozen=True)
class ErrorOrigin:
    """Where a failure happened: connector task, stage (Connect's ``Stage`` name), executing class, error.

    ``topic``/``partition``/``offset``: the consumed record's coordinates (sink connectors); None
    for a source connector's record, which has not been written anywhere yet.
    """

    connector: str
    task: int
    stage: str
    class_name: str
    error: BaseException
    topic: str | None = None
    partition: int | None = None
    offset: int | None = None


def exception_class_name(error: BaseException) -> str:
    """The exception's class, module-qualified unless a builtin (``ValueError``, ``json.decoder.JSONDecodeError``)."""
    cls = type(error)
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def _text(value: Any) -> bytes | None:
    return None if value is None else str(value).encode("utf-8")


def context_headers(origin: ErrorOrigin) -> Headers:
    """Connect's ``__connect.errors.*`` headers of one failure, in Connect's order.

    >>> names = [k for k, _ in context_headers(ErrorOrigin("c", 0, "VALUE_CONVERTER", "m:C", ValueError("x")))]
    >>> names[0], len(names)
    ('__connect.errors.connector.name', 7)
    """
    headers: Headers = []
    if origin.topic is not None:  # only a consumed record has these
        headers += [(HEADER_PREFIX + "topic", _text(origin.topic)),
                    (HEADER_PREFIX + "partition", _text(origin.partition)),
                    (HEADER_PREFIX + "offset", _text(origin.offset))]
    error = origin.error
    headers += [(HEADER_PREFIX + "connector.name", _text(origin.connector)),
                (HEADER_PREFIX + "task.id", _text(origin.task)),
                (HEADER_PREFIX + "stage", _text(origin.stage)),
                (HEADER_PREFIX + "class.name", _text(origin.class_name)),
                (HEADER_PREFIX + "exception.class.name", _text(exception_class_name(error))),
                (HEADER_PREFIX + "exception.message", _text(str(error))),
                (HEADER_PREFIX + "exception.stacktrace",
                 _text("".join(traceback.format_exception(type(error), error, error.__traceback__))))]
    return headers


def ensure_topic(admin: Any, topic: str, replication_factor: int, connector: str, timeout_s: float = 30.0) -> None:
    """Create the dead letter queue topic (1 partition) unless it exists; DeadLetterQueueError if that fails."""
    from confluent_kafka.admin import NewTopic
    try:
        if topic in admin.list_topics(timeout=timeout_s).topics:
            return
        log.info("Creating dead letter queue topic %s of connector %s (%d partition, replication factor %d)",
                 topic, connector, DLQ_PARTITIONS, replication_factor)
        futures = admin.create_topics([NewTopic(topic, DLQ_PARTITIONS, replication_factor)])
        for future in futures.values():
            future.result(timeout=timeout_s)
    except Exception as e:
        if "TOPIC_ALREADY_EXISTS" in str(e):  # created meanwhile by another query or driver
            return
        raise DeadLetterQueueError(f"Could not initialize dead letter queue with topic={topic}: {e}") from e


class DeadLetterQueue:
    """Dead letters of one Spark task, produced with the process's cached producer for ``producer_conf``.

    Built on the executor (the producer is created on the first ``send``); ``flush`` waits for
    every dead letter and raises DeadLetterQueueError if one was not delivered. ``producer``: one
    to use instead, e.g. a task's transactional producer, so that its dead letters are part of
    its transaction.
    """

    def __init__(self, topic: str, producer_conf: dict[str, str], with_context: bool,
                 client_log: logging.Logger | None = None, producer: Any = None) -> None:
        self.topic, self.producer_conf, self.with_context = topic, producer_conf, with_context
        self.client_log = client_log or log
        self.sent = 0
        self._producer: Any = producer
        self._deliveries = Deliveries()

    def send(self, origin: ErrorOrigin, key: bytes | None, value: bytes | None,
             headers: Sequence[tuple[str, bytes | None]] = (), timestamp_ms: int | None = None) -> None:
        """Queue one dead letter: the record's key, value and headers (plus the context headers when enabled)."""
        from confluent_kafka import KafkaException
        if self._producer is None:
            self._producer = cached_producer(self.producer_conf, self.client_log)
        all_headers = list(headers) + (context_headers(origin) if self.with_context else [])
        while True:
            try:
                self._producer.produce(self.topic, value, key, headers=all_headers or None,
                                       timestamp=timestamp_ms or 0, on_delivery=self._deliveries)
                break
            except BufferError:
                self._producer.poll(0.05)
            except KafkaException as e:  # refused before queueing (over message.max.bytes): as a failed delivery
                raise DeadLetterQueueError(
                    f"Could not produce message to dead letter queue. topic={self.topic}: {e}") from e
        self.sent += 1

    def flush(self, timeout_s: float = 120.0) -> None:
        """Wait until every dead letter is acknowledged; DeadLetterQueueError naming the topic otherwise."""
        if self._producer is None or not self.sent:
            return
        left = self._producer.flush(timeout_s)
        if self._deliveries.error is not None or left:
            reason = self._deliveries.error or f"{left} record(s) still queued after {timeout_s}s"
            raise DeadLetterQueueError(f"Could not produce message to dead letter queue. topic={self.topic}: {reason}")
