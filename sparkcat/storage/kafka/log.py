"""A keyed log on a Kafka topic, through confluent-kafka (librdkafka).

The config log has one partition, so it is totally ordered. The offsets and status logs
(``multi_partition=True``) accept a topic with any partition count, as Kafka Connect creates them
(25 and 5 partitions by default): each record goes to the partition Java's default partitioner
picks for its key (``sparkcat.kafka.partitioner``), so one key's records stay in order wherever
Connect or sparkcat wrote them, and a read covers every partition.

The end of the log is the partition's high watermark (ListOffsets; under ``read_committed`` the last
stable offset). A read fetches until librdkafka's end-of-partition event, so it also ends where the
log ends in a transaction marker or a compacted gap rather than in a record.

The reading, writing and topic-id checks of one ``KafkaLog`` stay in this module (a little over 400 lines):
they share its consumer, producer and positions under one lock; what stands alone is elsewhere
(``partitions``, ``topic_identity``).
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import contextmanager, suppress
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from sparkcat.errors import FencedError, LogRewound, StorageError, StorageUnavailable
from sparkcat.kafka.client_settings import admin_settings, consumer_settings, producer_settings
from sparkcat.kafka.partitioner import partition_for
from sparkcat.kafka.producers import produce_all
from sparkcat.storage.kafka import partitions as multi
from sparkcat.storage.kafka.error_codes import FENCED_CODES, unavailable
from sparkcat.storage.kafka.topic_identity import TopicIdentity
from sparkcat.storage.log import Cursor, KeyedLog, LogRecord

_CLIENT_LOG = logging.getLogger("sparkcat.storage.kafka.client")  # librdkafka's own messages
#: How long the broker holds a reader's fetch that finds nothing. A read ends with the first empty fetch
#: (end-of-partition), so each up-to-date read lasted this long: 100 ms cost ~105 ms a read, 10 ms costs 16
#: (local broker). A fetch that finds records returns at once, so bulk reads are not slower.
READ_FETCH_WAIT_MS = 10


class KafkaLog(KeyedLog):
    """A KeyedLog on one Kafka topic; clients are created on first use, not in __init__.

    ``transactional_id`` makes every append one transaction, so a newer writer with the
    same id fences this one (``FencedError``). ``timeout_s`` bounds admin, metadata and
    flush waits, and how long a read may go without progress. ``replication_factor`` is used
    when the topic is created (-1: the broker's default). ``client_config``: the worker's Kafka
    client settings, role prefixes kept (``producer.acks``); each of the three clients (admin,
    producer, consumer) takes its own share of them over its defaults (``sparkcat.kafka.client_settings``).
    ``multi_partition``: accept an existing topic of any partition count and create a missing
    one with ``partitions``; else the topic must have exactly one partition.
    """

    def __init__(
        self,
        bootstrap_servers: str,
        topic: str,
        partitions: int = 1,
        compact: bool = True,
        replication_factor: int = -1,
        client_config: dict[str, Any] | None = None,
        transactional_id: str | None = None,
        timeout_s: float = 30.0,
        multi_partition: bool = False,
    ) -> None:
        if partitions < 1 and partitions != -1:
            raise ValueError(f"partitions must be >= 1, got {partitions}")
        self.bootstrap_servers = bootstrap_servers
        self.topic = topic
        self.partitions = partitions
        self.compact = compact
        self.replication_factor = replication_factor
        self.client_config = dict(client_config or {})
        self.transactional_id = transactional_id
        self.timeout_s = timeout_s
        self.multi_partition = multi_partition
        self._count = 1  # partitions of the topic as found (or created) by open()
        self._opened = False
        self._producer: Producer | None = None
        self._consumer: Consumer | None = None
        self._admin: AdminClient | None = None  # multi-partition reads (one ListOffsets), the topic id
        self._identity = TopicIdentity(topic, self._get_admin, timeout_s)  # a reader notices a recreated topic
        self._fenced = False
        # One reading consumer, re-assigned per scan: concurrent scans (REST threads asking for the
        # end offset while the herder reads) would unassign each other's partition mid-fetch.
        self._scan_lock = threading.Lock()
        # One append at a time: librdkafka allows one transaction call per producer at once, and a failed
        # append replaces the producer (a new one with the same transactional id fences the other thread's).
        self._append_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"KafkaLog(topic={self.topic!r}, bootstrap_servers={self.bootstrap_servers!r})"

    # -- errors -------------------------------------------------------------------------

    def _error(self, action: str, err: KafkaError | str) -> StorageError:
        """A StorageError naming the topic, servers and cause: FencedError when fenced, StorageUnavailable for
        a transport error or a timeout (retried with backoff), a plain StorageError for anything else (an
        authorization failure, a bad setting), which is reported with its reason instead of retried forever.
        A text (not a KafkaError) is one of this class's own timeouts."""
        text = err.str() if isinstance(err, KafkaError) else str(err)
        message = f"Kafka log {self.topic!r} at {self.bootstrap_servers}: {action} failed: {text}"
        if isinstance(err, KafkaError) and err.code() in FENCED_CODES:
            return FencedError(message + " (a newer writer with the same transactional id took over)")
        if not isinstance(err, KafkaError) or unavailable(err):
            return StorageUnavailable(message)
        return StorageError(message)

    @contextmanager
    def _wrapped(self, action: str) -> Iterator[None]:
        """Turn librdkafka exceptions raised inside the block into StorageError."""
        try:
            yield
        except KafkaException as exc:
            self._drop_reader(action)
            raise self._error(action, exc.args[0] if exc.args else str(exc)) from exc
        except FutureTimeout as exc:
            self._drop_reader(action)
            raise self._error(action, f"no answer within {self.timeout_s}s") from exc
        except StorageError:
            self._drop_reader(action)
            raise

    def _drop_reader(self, action: str) -> None:
        """New clients after a failed read (after a broker restart the old ones failed with FENCED_LEADER_EPOCH)."""
        consumer = self._consumer if action.startswith("reading") else None
        if consumer is not None:
            self._consumer, self._admin = None, None
            with suppress(KafkaException):  # it may fail as the read did; the read's error is what matters
                consumer.close()

    # -- clients and topic --------------------------------------------------------------

    def _config(self, settings: Callable[..., dict[str, Any]], defaults: dict[str, Any] | None = None
                ) -> dict[str, Any]:
        """Defaults, overridden by client_config's share for one kind of client: ``settings`` is
        ``admin_settings``, ``producer_settings`` or ``consumer_settings``; the bootstrap servers always ours."""
        return {"logger": _CLIENT_LOG, **settings(self.bootstrap_servers, self.client_config, None, defaults)}

    def open(self) -> None:
        """Connect and make sure the topic exists with a usable partition count; idempotent."""
        if self._opened:
            return
        admin = AdminClient(self._config(admin_settings))
        try:
            with self._wrapped("opening the topic"):
                self._ensure_topic(admin)
        finally:
            admin.poll(0)  # hand librdkafka's queued log lines to the logger
        self._opened = True

    def _ensure_topic(self, admin: AdminClient) -> None:
        """Create the topic if it is missing, else check its partition count."""
        existing = admin.list_topics(timeout=self.timeout_s).topics.get(self.topic)
        if existing is not None and existing.error is None:
            self._check_partitions(len(existing.partitions))
            return
        self._create_topic(admin)  # False when someone else created it first: its count is checked below
        fresh = admin.list_topics(timeout=self.timeout_s).topics.get(self.topic)
        if fresh is not None and fresh.error is None and fresh.partitions:
            self._check_partitions(len(fresh.partitions))
        else:  # not yet in metadata: trust the creator
            self._count = max(1, self.partitions)

    def _create_topic(self, admin: AdminClient) -> bool:
        """Create the topic; False when someone else created it first."""
        if self.partitions > 1 and not self.multi_partition:
            raise StorageError(
                f"Kafka topic {self.topic!r} does not exist at {self.bootstrap_servers}; sparkcat uses "
                f"single-partition internal topics and will not create one with {self.partitions} partitions"
            )
        config = {"cleanup.policy": "compact"} if self.compact else {}
        new = NewTopic(self.topic, self.partitions, self.replication_factor, config=config)
        futures = admin.create_topics([new], operation_timeout=self.timeout_s, request_timeout=self.timeout_s)
        try:
            futures[self.topic].result(timeout=self.timeout_s + 5)
        except KafkaException as exc:
            if exc.args and isinstance(exc.args[0], KafkaError):
                if exc.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS:
                    return False
            raise
        return True

    def _check_partitions(self, count: int) -> None:
        """A log that must be totally ordered needs exactly one partition; a multi-partition log takes any."""
        self._count = count
        if not self.multi_partition and count != 1:
            raise StorageError(
                f"Kafka topic {self.topic!r} at {self.bootstrap_servers} has {count} partitions; "
                "sparkcat needs it to have exactly 1 so its records stay in order"
            )

    def _get_producer(self) -> Producer:
        """The idempotent (or transactional) producer, created on first append."""
        if self._fenced:
            raise self._error("append", KafkaError(KafkaError._FENCED, "this writer was fenced earlier"))
        if self._producer is None:
            timeout_ms = int(self.timeout_s * 1000)
            defaults: dict[str, Any] = {"enable.idempotence": True, "acks": "all", "message.timeout.ms": timeout_ms}
            if self.transactional_id is not None:
                defaults["transaction.timeout.ms"] = max(60_000, timeout_ms)
            conf = self._config(producer_settings, defaults)
            if self.transactional_id is not None:
                conf["transactional.id"] = self.transactional_id
            producer = Producer(conf)
            if self.transactional_id is not None:
                with self._wrapped("initializing transactions"):
                    producer.init_transactions(self.timeout_s)
            self._producer = producer
        return self._producer

    def _get_consumer(self) -> Consumer:
        """A consumer that only ever uses assign() (its group id is never committed to)."""
        if self._consumer is None:
            defaults = {
                "group.id": f"sparkcat-log-reader-{uuid.uuid4().hex}",
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                "enable.partition.eof": True,
                "auto.offset.reset": "earliest",
                "isolation.level": "read_committed",
                "fetch.wait.max.ms": READ_FETCH_WAIT_MS,
            }
            self._consumer = Consumer(self._config(consumer_settings, defaults))
        return self._consumer

    def _get_admin(self) -> AdminClient:
        if self._admin is None:
            self._admin = AdminClient(self._config(admin_settings))
        return self._admin

    def start_writer(self) -> None:
        """Create the producer now: a transactional one fences every older writer with its id at once."""
        self.open()
        self._get_producer()

    # -- KeyedLog -----------------------------------------------------------------------

    def append(self, records: list[tuple[str, bytes | None]]) -> None:
        """Write records in order (each to its key's partition) and wait until all are acknowledged."""
        if not records:
            return
        with self._append_lock:
            self._append(records)

    def _append(self, records: list[tuple[str, bytes | None]]) -> None:
        self.open()
        producer = self._get_producer()
        try:
            if self.transactional_id is None:
                self._append_idempotent(producer, records)
            else:
                self._append_transaction(producer, records)
        except StorageError as exc:
            self._producer = None  # a fresh producer next time; a fenced one stays fenced
            self._fenced = self._fenced or isinstance(exc, FencedError)
            raise
        finally:
            producer.poll(0)  # serve queued callbacks and librdkafka log lines

    def _append_idempotent(self, producer: Producer, records: list[tuple[str, bytes | None]]) -> None:
        """Produce, flush, and fail if any record was not delivered."""
        failures: list[KafkaError] = []
        with self._wrapped("append"):
            self._produce_all(producer, records, failures)
            remaining = producer.flush(self.timeout_s + 5)
        if failures:
            raise self._error("append", failures[0])
        if remaining:
            raise self._error("append", f"{remaining} record(s) not acknowledged within {self.timeout_s}s")

    def _append_transaction(self, producer: Producer, records: list[tuple[str, bytes | None]]) -> None:
        """Produce all records in one transaction; abort it if the commit fails."""
        failures: list[KafkaError] = []
        with self._wrapped("append (transaction)"):
            producer.begin_transaction()
            try:
                self._produce_all(producer, records, failures)
                producer.commit_transaction(self.timeout_s)
            except KafkaException as exc:
                if exc.args and isinstance(exc.args[0], KafkaError) and exc.args[0].txn_requires_abort():
                    producer.abort_transaction(self.timeout_s)
                raise

    def _produce_all(
        self, producer: Producer, records: list[tuple[str, bytes | None]], failures: list[KafkaError]
    ) -> None:
        """Queue every record for its key's partition (in order per partition); delivery errors land in ``failures``."""

        def on_delivery(err: KafkaError | None, _msg: Message) -> None:
            if err is not None:
                failures.append(err)

        by_partition: dict[int, list[tuple[bytes, bytes | None]]] = {}
        for key, value in records:
            raw = key.encode("utf-8")
            target = partition_for(raw, self._count) if self._count > 1 else 0
            by_partition.setdefault(target, []).append((raw, value))
        for target, group in by_partition.items():
            produce_all(producer, self.topic, [v for _, v in group], [k for k, _ in group], partition=target,
                        on_delivery=on_delivery, wait_s=0.1)

    def read(self, start: int = 0) -> list[LogRecord]:
        """Every record from offset ``start`` up to the end of the partition as of now.

        A multi-partition log reads all its partitions from their beginning (``start`` must be 0):
        its positions are per partition, which ``read_since`` keeps.
        """
        self.open()
        if self._count > 1 or self.multi_partition:
            if start != 0:
                raise StorageError(f"Kafka log {self.topic!r} has {self._count} partitions: read it with read_since")
            return self.read_since(None)[0]
        return self._read_partition(start, follow=False)

    def _read_partition(self, start: int, follow: bool) -> list[LogRecord]:
        """``read`` of the one partition; ``follow``: a reader going on from what it read (``read_since``), which
        must also notice a new topic of the same name that already holds as many records (``TopicIdentity``)."""
        with self._scan_lock:
            consumer = self._get_consumer()
            partition = TopicPartition(self.topic, 0)
            with self._wrapped("reading"):
                if follow and start == 0:
                    self._identity.remember()
                low, high = self._watermarks(consumer)
                if start > high:  # a reader's cursor is at most the end it saw: the topic is not that log any more
                    self._identity.forget()
                    raise LogRewound(f"Kafka log {self.topic!r} ends at offset {high}, before offset {start} already "
                                     "read: the topic was deleted and created again, or truncated")
                if follow and start > 0:
                    self._identity.check(idle=start == high)
                if start == high:
                    return []
                partition.offset = max(start, low)
                return multi.poll_to_ends(consumer, [partition], {0: start}, self.timeout_s, _to_record,
                                          self._error).get(0, [])

    def read_since(self, cursor: Cursor) -> tuple[list[LogRecord], Cursor]:
        """Records after ``cursor`` (None: from the start) and the cursor after them.

        On a multi-partition log the cursor is ``{partition: next offset}``; records of one partition
        come in order, partitions one after another (a key lives in one partition).
        """
        self.open()
        if not self.multi_partition:
            start = cursor or 0
            records = self._read_partition(start, follow=True)
            return records, (records[-1].offset + 1 if records else start)
        with self._scan_lock, self._wrapped("reading"):
            return multi.read_partitions(self._get_consumer(), self._get_admin(), self.topic, self._count,
                                         dict(cursor or {}), self.timeout_s, _to_record, self._error)

    def end_offset(self) -> int:
        """The high watermark of partition 0 (the offset the next record will get); summed over a multi-partition log."""
        self.open()
        with self._scan_lock, self._wrapped("reading the end offset"):
            consumer = self._get_consumer()
            return sum(self._watermarks(consumer, p)[1] for p in range(self._count))

    def wait_stable(self, timeout_s: float = 150.0) -> None:
        """Wait until the last stable offset reaches the high watermark seen now.

        Under ``read_committed`` a read ends at the last stable offset, before the first record
        of the oldest open transaction (a task's batch, or a killed driver's zombie until it is
        fenced or times out). Once that offset passes today's high watermark, every transaction
        open now has committed or aborted, and a read sees all that was committed before it.
        """
        self.open()
        with self._wrapped("waiting for open transactions"):
            highs = self._uncommitted_ends()
            deadline = time.monotonic() + timeout_s
            while True:
                with self._scan_lock:
                    consumer = self._get_consumer()
                    stable = [self._watermarks(consumer, p)[1] for p in range(self._count)]
                if all(s >= h for s, h in zip(stable, highs)):
                    return
                if time.monotonic() > deadline:
                    raise self._error("waiting for open transactions",
                                      f"offsets up to {highs} still not stable after {timeout_s}s (at {stable})")
                time.sleep(0.05)

    def _uncommitted_ends(self) -> list[int]:
        """Each partition's high watermark itself (a ``read_uncommitted`` ListOffsets), not the last stable offset."""
        # read_uncommitted after the client config: a worker's kafka.isolation.level must not turn this
        # high watermark into the stable offset, which would make wait_stable return at once
        defaults = {"group.id": f"sparkcat-log-end-{uuid.uuid4().hex}", "enable.auto.commit": False}
        consumer = Consumer({**self._config(consumer_settings, defaults), "isolation.level": "read_uncommitted"})
        try:
            return [self._watermarks(consumer, p)[1] for p in range(self._count)]
        finally:
            consumer.close()

    def _watermarks(self, consumer: Consumer, partition: int = 0) -> tuple[int, int]:
        """(low, high) watermark of a partition; waits while a topic created a moment ago has no leader yet."""
        return multi.watermarks(consumer, TopicPartition(self.topic, partition), self.timeout_s)

    def close(self) -> None:
        """Close the consumer and drop the producer; the next call reopens."""
        consumer, self._consumer, self._admin = self._consumer, None, None
        self._identity.forget()
        if consumer is not None:
            consumer.close()
        if self._producer is not None and self.transactional_id is None:
            self._producer.flush(self.timeout_s)
        self._producer = None
        self._opened = False


def _to_record(msg: Message) -> LogRecord:
    """A LogRecord from a fetched message; a missing key reads as ''."""
    key = msg.key()
    text = key.decode("utf-8", errors="replace") if key is not None else ""
    return LogRecord(msg.offset(), text, msg.value())
