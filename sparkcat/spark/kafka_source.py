"""``sparkcat-kafka``: a Spark streaming source that reads Kafka topics as a sink connector's consumer would.

Spark's own Kafka connector is a JVM jar these machines cannot fetch, so this is a Python data
source on confluent-kafka (librdkafka). It reads like Kafka Connect's sink consumer, split over
the connector's tasks::

    spark.readStream.format("sparkcat-kafka")
        .option("bootstrap.servers", "broker:9092")
        .option("topics", "orders,payments")          # or .option("topics.regex", "orders-.*")
        .option("tasks", "2")                         # the connector's tasks
        .option("max.records.per.task", "100000")     # admission control per task and batch
        .load()

Rows have ``SCHEMA``; ``_task`` names the task that read the row. A tombstone has a null value.

Offsets are ``{"topic:partition": next offset to read}``. The topic-partitions, sorted by
(topic, partition), are split over the tasks with ``group_partitions`` (as Connect's
``ConnectorUtils.groupPartitions``), so a task owns a stable set while the set of partitions is
stable. Partitions without an offset (new topics, new partitions, a fresh query) start at the
earliest offset, as Connect's sink consumers do (``auto.offset.reset=earliest``), unless the
``starting.offsets`` option names them. An offset past the end of its partition (a topic that was
deleted and created again) is reset to the earliest offset, as ``auto.offset.reset`` does.

Where the code runs (pyspark 4.3):

- The *stream reader* (``initialOffset``/``latestOffset``/``partitions``) lives in one long-lived
  Python process next to the driver. It keeps one consumer, created on first use, to list
  metadata and find the end of every partition.
- ``read`` runs in executor Python workers on a different reader instance, so it uses only what is
  in the pickled ``KafkaInputPartition``. Consumers are cached per worker process in
  ``_CONSUMER_CACHE`` and re-assigned every batch.

Finding the end of a partition robustly (Tansu): ListOffsets is only a *hint*. Tansu answers it
with the base offset of the newest record batch plus one (not the high watermark) and ignores the
isolation level, and a fetch past the end hangs on Tansu instead of failing with
OFFSET_OUT_OF_RANGE. So the end is the offset of librdkafka's end-of-partition event
(``enable.partition.eof``), which comes from the high watermark (or, with read_committed, the last
stable offset) of a Fetch response: the reader assigns every partition at the highest offset it
knows to be at or before the end (the end found last time, the low watermark, or the ListOffsets
hint) and reads to that event. On a real Kafka broker the hint is already the end, so this costs
one empty fetch. A hint that proves to be past the end (no answer within the scan budget) is
dropped for the rest of the reader's life and the partition is scanned again from a verified
offset. Executors never fetch past a planned end: they stop at ``end - 1`` (or at the
end-of-partition event, for ranges that end in a transaction marker or compacted gap).
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows
from pyspark.sql.types import BinaryType, IntegerType, LongType, StringType, StructField, StructType

from sparkcat.api.util import group_partitions
from sparkcat.errors import ConfigError, ConnectorError
from sparkcat.spark.plan import task_failure_message

__all__ = [
    "FORMAT",
    "SCHEMA",
    "SCHEMA_STRUCT",
    "ARROW_SCHEMA",
    "KafkaSource",
    "KafkaStreamReader",
    "KafkaInputPartition",
    "KafkaSourceError",
    "KafkaSourceOptions",
    "TopicPartitionKey",
    "offset_key",
    "parse_offset_key",
    "assign_tasks",
    "spread_budget",
    "plan_end_offsets",
    "plan_partitions",
    "end_offsets",
    "sink_group_id",
    "commit_group_offsets",
    "close_cached_clients",
]

log = logging.getLogger(__name__)
_CLIENT_LOG = logging.getLogger("sparkcat.spark.kafka_source.client")  # librdkafka's own messages

FORMAT = "sparkcat-kafka"
SCHEMA = "topic STRING, partition INT, offset BIGINT, timestamp BIGINT, key BINARY, value BINARY, _task INT"
SCHEMA_STRUCT = StructType(
    [
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", LongType()),
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("_task", IntegerType()),
    ]
)
ARROW_SCHEMA = pa.schema(
    [
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("timestamp", pa.int64()),
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("_task", pa.int32()),
    ]
)

DEFAULT_MAX_RECORDS_PER_TASK = 100_000
DEFAULT_TIMEOUT_MS = 30_000
DEFAULT_END_SCAN_MS = 2_000
ARROW_BATCH_ROWS = 10_000

TopicPartitionKey = tuple[str, int]

_EOF = KafkaError._PARTITION_EOF
_TRANSIENT_CODES = frozenset(
    {KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN, KafkaError._TIMED_OUT, KafkaError._RESOLVE}
)
# Defaults of every reading consumer (driver and executors); ``kafka.*`` options override them.
# The group id is never joined (assign() only) and never committed to.
_CONSUMER_DEFAULTS: dict[str, Any] = {
    "group.id": "sparkcat-kafka-source",
    "enable.auto.commit": False,
    "enable.auto.offset.store": False,
    "enable.partition.eof": True,
    "auto.offset.reset": "earliest",
    # sparkcat's own writers are transactional; read only what they committed. Override with
    # kafka.isolation.level=read_uncommitted for Kafka Connect's (and the consumer's) default.
    "isolation.level": "read_committed",
    "fetch.wait.max.ms": 10,
    # librdkafka stops fetching a partition for this long once its prefetch queue is full
    # (default 1000 ms): with batches of 10^5 records that stalled every batch by a second.
    "fetch.queue.backoff.ms": 20,
}


class KafkaSourceError(ConnectorError):
    """Reading Kafka failed: the message names the servers, and the topic/partition when known."""


# -- offsets and planning: pure functions --------------------------------------------------


def offset_key(topic: str, partition: int) -> str:
    """The key of one partition in the source's offsets: ``"topic:partition"``."""
    return f"{topic}:{int(partition)}"


def parse_offset_key(key: str) -> TopicPartitionKey:
    """``"topic:partition"`` back to ``(topic, partition)`` (Kafka topic names cannot hold ':')."""
    topic, sep, partition = key.rpartition(":")
    if not sep or not topic:
        raise ValueError(f"not a topic:partition offset key: {key!r}")
    return topic, int(partition)


def assign_tasks(topic_partitions: Iterable[TopicPartitionKey], tasks: int) -> list[list[TopicPartitionKey]]:
    """The partitions of each task: sorted by (topic, partition), split with ``group_partitions``."""
    return group_partitions(sorted(set(topic_partitions)), tasks)


def spread_budget(available: Sequence[int], budget: int) -> list[int]:
    """How many records each partition of one task may read when together they may read ``budget``.

    Water-filling in partition order: every partition with data gets an equal share, what a
    partition cannot use goes to the others, and a remainder smaller than one record per
    partition goes to the first ones. No partition starves while another has a backlog, and the
    result depends only on the arguments (so a replayed batch plans the same).

    >>> spread_budget([100, 100, 100], 10)
    [4, 3, 3]
    >>> spread_budget([2, 100, 0], 10)
    [2, 8, 0]
    """
    takes = [0] * len(available)
    remaining = max(0, int(budget))
    active = [i for i, n in enumerate(available) if n > 0]
    while remaining > 0 and active:
        share = remaining // len(active)
        if share == 0:
            for i in active[:remaining]:
                takes[i] += 1
            break
        for i in active:
            take = min(share, available[i] - takes[i])
            takes[i] += take
            remaining -= take
        active = [i for i in active if takes[i] < available[i]]
    return takes


def plan_end_offsets(
    start: Mapping[str, int],
    ends: Mapping[TopicPartitionKey, int],
    tasks: int,
    budget_per_task: int | None,
    lows: Mapping[TopicPartitionKey, int] | None = None,
    exact: Iterable[TopicPartitionKey] | None = None,
    carry: Iterable[str] = (),
) -> dict[str, int]:
    """The end offsets of the next batch, as a sorted ``{"topic:partition": offset}``.

    ``ends`` are the ends found for the partitions that exist now (``exact`` says which are known
    exactly; the others are lower bounds; all are exact when ``exact`` is None); ``lows`` their low
    watermarks (0 when unknown). A partition missing from ``start`` begins at its low watermark;
    an offset past an *exact* end is reset to the low watermark (Connect's
    ``auto.offset.reset=earliest`` on OFFSET_OUT_OF_RANGE), one past a lower bound waits.
    ``carry`` are keys of ``start`` to keep unchanged though their partition is not in ``ends``
    (it vanished from metadata but still matches the subscription), so they never restart from
    the beginning. ``budget_per_task`` (None: no limit) caps each task's records, spread over
    its partitions with ``spread_budget``; tasks are formed over all returned keys, exactly as
    ``plan_partitions`` forms them.
    """
    lows = lows or {}
    exact_set = set(ends) if exact is None else set(exact)
    begin: dict[TopicPartitionKey, int] = {}
    stop: dict[TopicPartitionKey, int] = {}
    for tp, end in ends.items():
        low = max(0, lows.get(tp, 0))
        current = start.get(offset_key(*tp))
        if current is None:
            first = low
        elif current > end:
            if tp in exact_set:
                log.warning(
                    "offset %d of %s:%d is past the end of the partition (%d); resetting to the earliest "
                    "offset %d (auto.offset.reset=earliest)", current, tp[0], tp[1], end, low,
                )
                first = low
            else:
                first = end = current  # the end is only a lower bound here: wait for it
        else:
            first = max(current, low)
        begin[tp] = first
        stop[tp] = max(first, end)
    for key in carry:
        if key in start:
            tp = parse_offset_key(key)
            if tp not in ends:
                begin[tp] = stop[tp] = int(start[key])
    result = dict(stop)
    if budget_per_task is not None:
        for owned in assign_tasks(begin, tasks):
            takes = spread_budget([stop[tp] - begin[tp] for tp in owned], budget_per_task)
            for tp, take in zip(owned, takes, strict=True):
                result[tp] = begin[tp] + take
    return {offset_key(*tp): result[tp] for tp in sorted(result)}


def plan_partitions(
    start: Mapping[str, int], end: Mapping[str, int], tasks: int
) -> list[tuple[int, list[tuple[str, int, int, int]]]]:
    """The work of each task with any: ``(task, [(topic, partition, first, end), ...])``.

    Depends only on the two offsets (Spark replays a batch after a restart by calling
    ``partitions(start, end)`` again). A partition missing from ``start`` is read from offset 0,
    which the consumer moves up to the low watermark; so is one whose start lies past its end
    (the reset that ``plan_end_offsets`` planned).
    """
    work = []
    for task, owned in enumerate(assign_tasks((parse_offset_key(k) for k in end), tasks)):
        ranges = []
        for topic, partition in owned:
            stop = int(end[offset_key(topic, partition)])
            first = int(start.get(offset_key(topic, partition), 0))
            if first > stop:
                first = 0
            if first < stop:
                ranges.append((topic, partition, first, stop))
        if ranges:
            work.append((task, ranges))
    return work


# -- options ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class KafkaSourceOptions:
    """The source's options, parsed and checked (``from_options``); plain data."""

    bootstrap_servers: str
    topics: tuple[str, ...] = ()
    topics_regex: str | None = None
    tasks: int = 1
    max_records_per_task: int = DEFAULT_MAX_RECORDS_PER_TASK
    starting_offsets: dict[str, int] = field(default_factory=dict)
    client_config: dict[str, str] = field(default_factory=dict)
    connector: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_MS / 1000
    end_scan_s: float = DEFAULT_END_SCAN_MS / 1000

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> KafkaSourceOptions:
        opts = {str(k).lower(): v for k, v in options.items()}
        errors: dict[str, list[str]] = {}

        def integer(name: str, default: int, minimum: int) -> int:
            raw = opts.get(name)
            if raw is None or str(raw).strip() == "":
                return default
            try:
                value = int(str(raw).strip())
            except ValueError:
                errors.setdefault(name, []).append(f"must be an integer, got {raw!r}")
                return default
            if value < minimum:
                errors.setdefault(name, []).append(f"must be at least {minimum}, got {value}")
            return value

        bootstrap = str(opts.get("bootstrap.servers", "")).strip()
        if not bootstrap:
            errors.setdefault("bootstrap.servers", []).append("is required")
        topics = tuple(t.strip() for t in str(opts.get("topics", "") or "").split(",") if t.strip())
        regex = str(opts.get("topics.regex", "") or "").strip() or None
        if topics and regex:
            errors.setdefault("topics", []).append("set either topics or topics.regex, not both")
        elif not topics and not regex:
            errors.setdefault("topics", []).append("one of topics or topics.regex is required")
        if regex is not None:
            try:
                re.compile(regex)
            except re.error as exc:
                errors.setdefault("topics.regex", []).append(f"is not a valid regular expression: {exc}")
        starting: dict[str, int] = {}
        raw_start = opts.get("starting.offsets")
        if raw_start and str(raw_start).strip():
            try:
                parsed = json.loads(raw_start)
                if not isinstance(parsed, dict):
                    raise ValueError("not a JSON object")
                for key, value in parsed.items():
                    parse_offset_key(key)
                    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                        raise ValueError(f"offset of {key!r} must be a non-negative integer")
                    starting[offset_key(*parse_offset_key(key))] = value
            except ValueError as exc:
                errors.setdefault("starting.offsets", []).append(
                    f'must be a JSON object {{"topic:partition": offset}}: {exc}'
                )
        tasks = integer("tasks", 1, 1)
        budget = integer("max.records.per.task", DEFAULT_MAX_RECORDS_PER_TASK, 1)
        timeout_ms = integer("timeout.ms", DEFAULT_TIMEOUT_MS, 1)
        scan_ms = integer("end.scan.ms", DEFAULT_END_SCAN_MS, 1)
        if errors:
            detail = "; ".join(f"{k} {m}" for k, ms in errors.items() for m in ms)
            raise ConfigError(f"Invalid {FORMAT} source options: {detail}", errors)
        client = {k[len("kafka."):]: str(v) for k, v in opts.items() if k.startswith("kafka.")}
        client.pop("bootstrap.servers", None)
        return cls(
            bootstrap_servers=bootstrap,
            topics=topics,
            topics_regex=regex,
            tasks=tasks,
            max_records_per_task=budget,
            starting_offsets=starting,
            client_config=client,
            connector=str(opts["connector"]) if opts.get("connector") else None,
            timeout_s=timeout_ms / 1000,
            end_scan_s=scan_ms / 1000,
        )

    def subscribed(self, topic: str) -> bool:
        """Whether ``topic`` is one this source reads (Connect's full-match regex semantics)."""
        if self.topics_regex is not None:
            return re.fullmatch(self.topics_regex, topic) is not None and not topic.startswith("__")
        return topic in self.topics

    def describe(self) -> str:
        who = f" of connector {self.connector!r}" if self.connector else ""
        return f"{FORMAT} source{who} at {self.bootstrap_servers}"


def _consumer_config(
    bootstrap: str, client_config: Mapping[str, Any], extra: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Reading-consumer defaults, overridden by ``client_config``, except what the reading logic needs."""
    return {
        "logger": _CLIENT_LOG,
        **_CONSUMER_DEFAULTS,
        **(extra or {}),
        **client_config,
        "bootstrap.servers": bootstrap,
        "enable.partition.eof": True,   # the end of a partition is an event, not a guess
        "enable.auto.commit": False,    # positions live in Spark's checkpoint, never in a group
    }


def _error_text(err: Any) -> str:
    if isinstance(err, KafkaException) and err.args and isinstance(err.args[0], KafkaError):
        return err.args[0].str()
    if isinstance(err, KafkaError):
        return err.str()
    return str(err)


# -- finding the end of partitions ------------------------------------------------------------


@dataclass
class _Ends:
    """What a scan for partition ends found."""

    ends: dict[TopicPartitionKey, int]          # exact where in ``exact``, else a verified lower bound
    exact: set[TopicPartitionKey]
    lows: dict[TopicPartitionKey, int]
    hint_failed: bool = False                    # a ListOffsets hint lay past the end (Tansu)


def _list_offsets(
    consumer: Consumer, tps: Sequence[TopicPartitionKey], latest: bool, timeout_s: float, servers: str
) -> dict[TopicPartitionKey, int]:
    """ListOffsets for all partitions in one request per broker (earliest or latest).

    A partition the broker answers with an error (a topic created a moment ago has no leader yet)
    is left out: ListOffsets only gives hints here, and the fetch that follows reports lasting errors.
    """
    if not tps:
        return {}
    special = -1 if latest else -2  # ListOffsets' LATEST / EARLIEST timestamps
    try:
        answers = consumer.offsets_for_times([TopicPartition(t, p, special) for t, p in tps], timeout=timeout_s)
    except KafkaException as exc:
        raise KafkaSourceError(
            f"Kafka at {servers}: listing {'latest' if latest else 'earliest'} offsets of "
            f"{_names(tps)} failed: {_error_text(exc)}"
        ) from exc
    result = {}
    for answer in answers:
        tp = (answer.topic, answer.partition)
        if answer.error is not None:
            log.debug("Kafka at %s: ListOffsets of %s:%d: %s", servers, tp[0], tp[1], answer.error.str())
            continue
        result[tp] = max(0, answer.offset)
    return result


def _names(tps: Iterable[TopicPartitionKey], limit: int = 5) -> str:
    items = [f"{t}:{p}" for t, p in tps]
    more = f" and {len(items) - limit} more" if len(items) > limit else ""
    return ", ".join(items[:limit]) + more


def _assign(consumer: Consumer, partitions: list[TopicPartition]) -> None:
    """Replace the assignment (nothing here ever pauses a partition, so none needs resuming)."""
    consumer.assign(partitions)


def _scan_round(
    consumer: Consumer, positions: Mapping[TopicPartitionKey, int], budget_s: float, servers: str
) -> tuple[dict[TopicPartitionKey, int], dict[TopicPartitionKey, int], KafkaError | None]:
    """Assign at ``positions`` and read until each partition's end-of-partition event or the budget.

    Returns (exact ends from EOF events, last offset + 1 seen for the others, last broker error).
    """
    exact: dict[TopicPartitionKey, int] = {}
    seen: dict[TopicPartitionKey, int] = {}
    broker_error: KafkaError | None = None
    if not positions:
        return exact, seen, broker_error
    _assign(consumer, [TopicPartition(t, p, int(o)) for (t, p), o in positions.items()])
    try:
        deadline = time.monotonic() + budget_s
        while len(exact) < len(positions):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            msg = consumer.poll(min(0.2, left))
            if msg is None:
                continue
            err = msg.error()
            tp = (msg.topic(), msg.partition())
            if err is None:
                if tp in positions and tp not in exact:
                    seen[tp] = max(seen.get(tp, 0), msg.offset() + 1)
            elif err.code() == _EOF:
                if tp in positions and tp not in exact:
                    exact[tp] = msg.offset()
            elif err.code() in _TRANSIENT_CODES and not err.fatal():
                broker_error = err
            else:
                where = f"partition {tp[0]}:{tp[1]}" if tp[0] else _names(positions)
                raise KafkaSourceError(f"Kafka at {servers}: reading the end of {where} failed: {err.str()}")
    finally:
        consumer.unassign()
    return exact, seen, broker_error


def _find_ends(
    consumer: Consumer,
    topic_partitions: Iterable[TopicPartitionKey],
    known: Mapping[TopicPartitionKey, int] | None = None,
    *,
    use_hints: bool = True,
    require_exact: bool = False,
    timeout_s: float = DEFAULT_TIMEOUT_MS / 1000,
    scan_s: float = DEFAULT_END_SCAN_MS / 1000,
    servers: str = "?",
) -> _Ends:
    """The end of each partition, found by fetching to the end-of-partition event (see module doc)."""
    tps = sorted(set(topic_partitions))
    known = known or {}
    lows = _list_offsets(consumer, tps, latest=False, timeout_s=timeout_s, servers=servers)
    hints = _list_offsets(consumer, tps, latest=True, timeout_s=timeout_s, servers=servers) if use_hints else {}
    verified = {tp: max(lows.get(tp, 0), known.get(tp, 0)) for tp in tps}
    positions = {tp: max(verified[tp], hints.get(tp, 0)) for tp in tps}
    result = _Ends(ends={}, exact=set(), lows=lows)
    deadline = time.monotonic() + timeout_s
    first_round = True
    while positions:
        exact, seen, broker_error = _scan_round(consumer, positions, scan_s, servers)
        for tp, end in exact.items():
            result.ends[tp] = end
            result.exact.add(tp)
        retry = {}
        for tp, position in positions.items():
            if tp in exact:
                continue
            if tp in seen:
                verified[tp] = max(verified[tp], seen[tp])  # offsets before a fetched record exist
            elif position > verified[tp]:
                result.hint_failed = True  # no answer at the hint: it lay past the end
            elif broker_error is None:
                log.warning(
                    "Kafka at %s: no answer from %s:%d at offset %d within %gs (a slow broker, or a topic "
                    "deleted and created again while the query ran: then restart the query)",
                    servers, tp[0], tp[1], position, scan_s,
                )
            retry[tp] = verified[tp]
        if not retry:
            break
        if time.monotonic() > deadline:
            cause = f" (last error: {broker_error.str()})" if broker_error is not None else ""
            raise KafkaSourceError(
                f"Kafka at {servers}: could not find the end of {_names(retry)} within {timeout_s:g}s{cause}"
            )
        hint_retry = {tp: o for tp, o in retry.items() if positions[tp] > o and tp not in seen}
        if require_exact or broker_error is not None:
            positions = retry
        elif first_round and hint_retry:
            positions = hint_retry  # one more round, from verified offsets, for failed hints
            for tp in retry.keys() - hint_retry.keys():
                result.ends[tp] = retry[tp]
        else:
            for tp, offset in retry.items():
                result.ends[tp] = offset  # a lower bound; the next batch continues from here
            break
        first_round = False
    return result


def end_offsets(
    consumer: Consumer,
    topic_partitions: Iterable[TopicPartitionKey | TopicPartition],
    known: Mapping[TopicPartitionKey, int] | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_MS / 1000,
) -> dict[TopicPartitionKey, int]:
    """The exact end of each partition: ``{(topic, partition): offset the next record will get}``.

    Under ``isolation.level=read_committed`` the end is the last stable offset. Works on Tansu,
    whose ListOffsets answer is wrong, and on Kafka, where it costs one empty fetch per partition.
    ``consumer`` must be a consumer used with assign() only and ``enable.partition.eof=true``;
    its assignment is replaced and cleared. ``known`` may hold ends found earlier (each at or
    before today's end) to fetch less. Raises ``KafkaSourceError`` when an end cannot be found
    within ``timeout_s`` (broker down, unknown partition).
    """
    tps = [
        (tp.topic, tp.partition) if isinstance(tp, TopicPartition) else (tp[0], int(tp[1]))
        for tp in topic_partitions
    ]
    found = _find_ends(consumer, tps, known, require_exact=True, timeout_s=timeout_s, scan_s=min(timeout_s, 2.0))
    return dict(found.ends)


# -- the data source --------------------------------------------------------------------------


class KafkaInputPartition(InputPartition):
    """One task's work in one batch; everything ``read`` needs on an executor (pickled)."""

    def __init__(
        self,
        task: int,
        ranges: list[tuple[str, int, int, int]],
        bootstrap_servers: str,
        client_config: dict[str, str],
        connector: str | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_MS / 1000,
    ) -> None:
        super().__init__(task)
        self.task = task
        self.ranges = ranges  # (topic, partition, first offset, end offset exclusive)
        self.bootstrap_servers = bootstrap_servers
        self.client_config = client_config
        self.connector = connector
        self.timeout_s = timeout_s

    def __repr__(self) -> str:
        return f"KafkaInputPartition(task={self.task}, ranges={self.ranges!r})"


class KafkaSource(DataSource):
    """The ``sparkcat-kafka`` streaming source (see the module documentation for its options)."""

    SCHEMA = SCHEMA
    SCHEMA_STRUCT = SCHEMA_STRUCT

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        return SCHEMA

    def streamReader(self, schema: StructType) -> KafkaStreamReader:
        return KafkaStreamReader(self.options)


class KafkaStreamReader(DataSourceStreamReader):
    """Plans batches on the driver side; ``read`` runs on executors. No network work in __init__."""

    def __init__(self, options: Mapping[str, str]) -> None:
        self.opts = KafkaSourceOptions.from_options(options)
        self._consumer: Consumer | None = None
        self._initial: dict[str, int] | None = None
        self._known_ends: dict[TopicPartitionKey, int] = {}
        self._use_hints = True
        self._latest: dict[str, int] = {}

    # driver side --------------------------------------------------------------------------

    def _get_consumer(self) -> Consumer:
        if self._consumer is None:
            self._consumer = Consumer(_consumer_config(self.opts.bootstrap_servers, self.opts.client_config))
        return self._consumer

    def _error(self, text: str) -> KafkaSourceError:
        return KafkaSourceError(f"{self.opts.describe()}: {text}")

    def _discover(self) -> list[TopicPartitionKey]:
        """The subscribed topic-partitions that exist now, sorted; a missing named topic is an error."""
        consumer = self._get_consumer()
        grace_until = time.monotonic() + min(self.opts.timeout_s, 5.0)
        while True:
            try:
                metadata = consumer.list_topics(timeout=self.opts.timeout_s)
            except KafkaException as exc:
                raise self._error(f"cannot list topics within {self.opts.timeout_s:g}s: {_error_text(exc)}") from exc
            found: list[TopicPartitionKey] = []
            present = set()
            for name, topic in metadata.topics.items():
                if not self.opts.subscribed(name) or topic.error is not None or not topic.partitions:
                    continue
                present.add(name)
                found.extend((name, p) for p in topic.partitions)
            missing = [t for t in self.opts.topics if t not in present]
            if not missing:
                return sorted(found)
            if time.monotonic() > grace_until:
                errs = {t: metadata.topics[t].error for t in missing if t in metadata.topics}
                detail = "; ".join(f"{t}: {e.str()}" for t, e in errs.items() if e is not None)
                raise self._error(
                    f"topic(s) {', '.join(repr(t) for t in missing)} do not exist" + (f" ({detail})" if detail else "")
                )
            time.sleep(0.25)

    def _ends(self, tps: Sequence[TopicPartitionKey]) -> _Ends:
        try:
            found = _find_ends(
                self._get_consumer(),
                tps,
                self._known_ends,
                use_hints=self._use_hints,
                timeout_s=self.opts.timeout_s,
                scan_s=self.opts.end_scan_s,
                servers=self.opts.bootstrap_servers,
            )
        except KafkaSourceError as exc:
            raise self._error(str(exc)) from exc
        if found.hint_failed and self._use_hints:
            log.info("%s: the broker's ListOffsets answer lay past the end of a partition; "
                     "finding ends by fetching only from now on", self.opts.describe())
            self._use_hints = False
        present = set(tps)
        self._known_ends = {tp: end for tp, end in self._known_ends.items() if tp in present}
        for tp, end in found.ends.items():
            self._known_ends[tp] = max(end, self._known_ends.get(tp, 0)) if tp not in found.exact else end
        return found

    def initialOffset(self) -> dict[str, int]:
        """``starting.offsets`` where given, else each partition's earliest offset (cached: Spark asks twice)."""
        if self._initial is None:
            tps = self._discover()
            lows = _list_offsets(self._get_consumer(), tps, False, self.opts.timeout_s, self.opts.bootstrap_servers)
            initial = {offset_key(*tp): lows.get(tp, 0) for tp in tps}
            for key, value in self.opts.starting_offsets.items():
                if self.opts.subscribed(parse_offset_key(key)[0]):
                    initial[key] = value
            self._initial = {k: initial[k] for k in sorted(initial, key=parse_offset_key)}
        return dict(self._initial)

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadMaxRows(self.opts.tasks * self.opts.max_records_per_task)

    def _budget(self, limit: ReadLimit | None) -> int | None:
        """Records per task this batch: None for ReadAllAvailable (Spark's contract), else the cap."""
        if isinstance(limit, ReadMaxRows):
            return max(1, min(self.opts.max_records_per_task, limit.max_rows // self.opts.tasks))
        if limit is None or isinstance(limit, ReadAllAvailable):
            return None
        return self.opts.max_records_per_task

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict[str, int]:
        """The end of the next batch: the true end of each partition, capped to each task's budget."""
        t0 = time.monotonic()
        start = {k: int(v) for k, v in (start or {}).items()}
        tps = self._discover()
        found = self._ends(tps)
        carry = [k for k in start if self.opts.subscribed(parse_offset_key(k)[0])]
        self._latest = plan_end_offsets(start, found.ends, self.opts.tasks, None, found.lows, found.exact, carry)
        end = plan_end_offsets(
            start, found.ends, self.opts.tasks, self._budget(limit), found.lows, found.exact, carry
        )
        elapsed = time.monotonic() - t0
        log.log(logging.INFO if elapsed > 1.0 else logging.DEBUG, "%s: latestOffset over %d partition(s) took %.3fs",
                self.opts.describe(), len(tps), elapsed)
        return end

    def reportLatestOffset(self) -> dict[str, int]:
        """The uncapped ends seen by the last latestOffset (the query progress shows the lag)."""
        return dict(self._latest)

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        """One partition per task with work; only offsets decide it, so a replay plans the same."""
        work = plan_partitions(start or {}, end or {}, self.opts.tasks)
        parts: list[InputPartition] = [
            KafkaInputPartition(
                task, ranges, self.opts.bootstrap_servers, dict(self.opts.client_config),
                self.opts.connector, self.opts.timeout_s,
            )
            for task, ranges in work
        ]
        if not parts:  # a batch that only moved offsets (a reset) still needs one (empty) partition
            parts.append(KafkaInputPartition(0, [], self.opts.bootstrap_servers, {}, self.opts.connector))
        return parts

    def commit(self, end: dict) -> None:
        """Nothing to do: Kafka is replayable and the checkpoint holds the offsets.

        The runtime commits a sink connector's offsets (to its offsets store and, with
        ``commit_group_offsets``, to the ``connect-NAME`` consumer group) from the results of
        the batch's writes, once they are durable; committing here could run ahead of them.
        """

    def stop(self) -> None:
        consumer, self._consumer = self._consumer, None
        if consumer is not None:
            try:
                consumer.close()
            except (KafkaException, RuntimeError):  # already closed or broker gone: nothing to release
                pass

    # executor side ------------------------------------------------------------------------

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, KafkaInputPartition)
        return read_partition(partition)


# -- executors: reading one task's ranges ---------------------------------------------------

# Consumers of this executor Python process, by (bootstrap servers, frozen client config):
# librdkafka handles are expensive to create and hold broker connections, and a Python worker
# runs one task at a time, so each batch re-assigns a cached consumer. The pid guards against
# a handle inherited through fork (librdkafka handles do not survive fork).
_CONSUMER_CACHE: dict[tuple[str, tuple[tuple[str, str], ...]], tuple[int, Consumer]] = {}
_CACHE_LOCK = threading.Lock()


def _cache_key(bootstrap: str, client_config: Mapping[str, Any]) -> tuple[str, tuple[tuple[str, str], ...]]:
    return bootstrap, tuple(sorted((str(k), str(v)) for k, v in client_config.items()))


def _cached_consumer(bootstrap: str, client_config: Mapping[str, Any]) -> Consumer:
    key = _cache_key(bootstrap, client_config)
    with _CACHE_LOCK:
        entry = _CONSUMER_CACHE.get(key)
        if entry is not None and entry[0] == os.getpid():
            return entry[1]
        consumer = Consumer(_consumer_config(bootstrap, client_config))
        _CONSUMER_CACHE[key] = (os.getpid(), consumer)
        return consumer


def _drop_cached_consumer(bootstrap: str, client_config: Mapping[str, Any]) -> None:
    with _CACHE_LOCK:
        entry = _CONSUMER_CACHE.pop(_cache_key(bootstrap, client_config), None)
    if entry is not None and entry[0] == os.getpid():
        try:
            entry[1].close()
        except (KafkaException, RuntimeError):
            pass


def read_partition(partition: KafkaInputPartition) -> Iterator[pa.RecordBatch]:
    """Arrow batches of exactly the records in the partition's ranges (with ``connector``, failures
    are raised as ``RuntimeError(task_failure_message(...))`` so the herder finds the task)."""
    try:
        yield from _read_ranges(partition)
    except Exception as exc:
        _drop_cached_consumer(partition.bootstrap_servers, partition.client_config)
        if partition.connector:
            raise RuntimeError(task_failure_message(partition.connector, partition.task, exc)) from exc
        raise


def _read_ranges(part: KafkaInputPartition) -> Iterator[pa.RecordBatch]:
    columns: tuple[list, ...] = ([], [], [], [], [], [])
    topics, partitions, offsets, timestamps, keys, values = columns
    for messages in range_messages(part):
        topics.extend([m.topic() for m in messages])
        partitions.extend([m.partition() for m in messages])
        offsets.extend([m.offset() for m in messages])
        timestamps.extend([ts if kind else None for kind, ts in (m.timestamp() for m in messages)])
        keys.extend([m.key() for m in messages])
        values.extend([m.value() for m in messages])
        if len(offsets) >= ARROW_BATCH_ROWS:
            yield _to_arrow(columns, part.task)
            for column in columns:
                column.clear()
    if offsets:
        yield _to_arrow(columns, part.task)


def range_messages(part: KafkaInputPartition) -> Iterator[list[Message]]:
    """The records of the partition's ranges, exactly, as lists of confluent-kafka messages.

    Each list is what one ``consume`` call brought, minus errors, end-of-partition events and
    records outside the ranges; records of one Kafka partition come in offset order. Raises
    ``KafkaSourceError`` when nothing arrives for ``timeout_s`` or on a non-transient error.
    """
    pending = {(t, p): (first, end) for t, p, first, end in part.ranges if end > first}
    if not pending:
        return
    servers = part.bootstrap_servers
    consumer = _cached_consumer(servers, part.client_config)
    next_offset = {tp: first for tp, (first, _end) in pending.items()}
    task = part.task
    _assign(consumer, [TopicPartition(t, p, first) for (t, p), (first, _end) in pending.items()])
    try:
        deadline = time.monotonic() + part.timeout_s
        last_error: KafkaError | None = None
        while pending:
            want = sum(pending[tp][1] - next_offset[tp] for tp in pending)
            msgs = consumer.consume(num_messages=max(1, min(ARROW_BATCH_ROWS, want)), timeout=0.2)
            if not msgs:
                if time.monotonic() > deadline:
                    cause = f" (last error: {last_error.str()})" if last_error is not None else ""
                    raise KafkaSourceError(
                        f"Kafka at {servers}: task {task} read nothing from {_names(pending)} for "
                        f"{part.timeout_s:g}s; still expecting offsets "
                        + ", ".join(f"{t}:{p} [{next_offset[t, p]}, {pending[t, p][1]})" for t, p in list(pending)[:5])
                        + cause
                    )
                continue
            deadline = time.monotonic() + part.timeout_s
            kept = []
            for msg in msgs:
                err = msg.error()
                tp = (msg.topic(), msg.partition())
                if err is not None:
                    code = err.code()
                    if code == _EOF:
                        if tp in pending and msg.offset() >= pending[tp][1]:
                            _done(consumer, pending, tp)  # the range ended in a marker or gap
                    elif code in _TRANSIENT_CODES and not err.fatal():
                        last_error = err
                    else:
                        where = f"partition {tp[0]}:{tp[1]}" if tp[0] else _names(pending)
                        raise KafkaSourceError(f"Kafka at {servers}: task {task} reading {where} failed: {err.str()}")
                    continue
                bounds = pending.get(tp)
                if bounds is None:
                    continue  # a partition already finished (prefetched before the pause)
                offset = msg.offset()
                if offset < bounds[0]:
                    continue
                if offset >= bounds[1]:
                    _done(consumer, pending, tp)
                    continue
                kept.append(msg)
                next_offset[tp] = offset + 1
                if offset >= bounds[1] - 1:
                    _done(consumer, pending, tp)
            if kept:
                yield kept
    finally:
        try:
            consumer.unassign()
        except (KafkaException, RuntimeError):
            pass


def _done(consumer: Consumer, pending: dict, tp: TopicPartitionKey) -> None:
    """A partition's range is complete: stop fetching it.

    incremental_unassign, not pause: a pause outlives unassign/assign, and resuming right after
    assign() delays that partition's first fetch by about a second in librdkafka 2.x.
    """
    del pending[tp]
    try:
        consumer.incremental_unassign([TopicPartition(tp[0], tp[1])])
    except KafkaException:
        pass


def _to_arrow(columns: tuple[list, ...], task: int) -> pa.RecordBatch:
    topics, partitions, offsets, timestamps, keys, values = columns
    return pa.RecordBatch.from_arrays(
        [
            pa.array(topics, pa.string()),
            pa.array(partitions, pa.int32()),
            pa.array(offsets, pa.int64()),
            pa.array(timestamps, pa.int64()),
            pa.array(keys, pa.binary()),
            pa.array(values, pa.binary()),
            pa.array([task] * len(offsets), pa.int32()),
        ],
        schema=ARROW_SCHEMA,
    )


# -- Kafka Connect's sink consumer group ------------------------------------------------------

class _GroupCommitter:
    """A consumer of group ``group_id`` that only commits; one commit at a time, with a deadline.

    ``commit(asynchronous=False)`` waits for the group coordinator without a bound (45 s and more
    with the broker down), so commits are asynchronous and ``poll`` serves their callback.
    """

    def __init__(self, config: dict[str, Any]) -> None:
        self.lock = threading.Lock()
        self._answer: tuple[KafkaError | None, list[TopicPartition]] | None = None
        self.consumer = Consumer({**config, "on_commit": self._on_commit})

    def _on_commit(self, err: KafkaError | None, partitions: list[TopicPartition]) -> None:
        self._answer = (err, partitions)

    def commit(self, offsets: list[TopicPartition], timeout_s: float) -> tuple[KafkaError | None, list[TopicPartition]]:
        with self.lock:
            self._answer = None
            self.consumer.commit(offsets=offsets, asynchronous=True)
            deadline = time.monotonic() + timeout_s
            while self._answer is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no answer from the group coordinator within {timeout_s:g}s")
                self.consumer.poll(min(0.1, left))
            return self._answer

    def close(self) -> None:
        try:
            self.consumer.close()
        except (KafkaException, RuntimeError):
            pass


_COMMITTERS: dict[tuple[str, str, tuple[tuple[str, str], ...]], _GroupCommitter] = {}


def sink_group_id(connector: str) -> str:
    """The consumer group Kafka Connect gives a sink connector: ``connect-NAME``."""
    return f"connect-{connector}"


def commit_group_offsets(
    bootstrap: str,
    group_id: str,
    offsets: Mapping[TopicPartitionKey, int],
    client_config: Mapping[str, Any] | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_MS / 1000,
) -> None:
    """Commit ``{(topic, partition): next offset to read}`` to consumer group ``group_id``.

    A simple (non-member) commit, as ``kafka-consumer-groups --reset-offsets`` does: the group is
    never joined, so this takes milliseconds, and Connect tooling (lag monitors, a Kafka Connect
    cluster taking over) sees the sink's progress. A real broker refuses it while the group has
    active members. Raises ``KafkaSourceError`` on a refusal or after ``timeout_s``. Consumers
    are cached per (servers, group, config); ``close_cached_clients`` releases them.
    """
    if not offsets:
        return
    config = {str(k): str(v) for k, v in (client_config or {}).items()}
    key = (bootstrap, group_id, tuple(sorted(config.items())))
    with _CACHE_LOCK:
        committer = _COMMITTERS.get(key)
        if committer is None:
            committer = _GroupCommitter(
                {"logger": _CLIENT_LOG, **config, "bootstrap.servers": bootstrap, "group.id": group_id,
                 "enable.auto.commit": False}
            )
            _COMMITTERS[key] = committer
    wanted = [TopicPartition(t, int(p), int(o)) for (t, p), o in sorted(offsets.items())]
    what = f"Kafka at {bootstrap}: committing offsets of {_names(offsets)} to group {group_id!r} failed"
    try:
        err, answers = committer.commit(wanted, timeout_s)
    except (KafkaException, TimeoutError) as exc:
        with _CACHE_LOCK:
            if _COMMITTERS.get(key) is committer:
                del _COMMITTERS[key]
        # closing waits for the coordinator too: do not hold up the caller for it
        threading.Thread(target=committer.close, name="sparkcat-commit-close", daemon=True).start()
        raise KafkaSourceError(f"{what}: {_error_text(exc)}") from exc
    failed = [a for a in answers or [] if a.error is not None]
    if err is not None and not failed:
        raise KafkaSourceError(f"{what}: {err.str()}")
    if failed:
        raise KafkaSourceError(f"{what}: " + ", ".join(f"{a.topic}:{a.partition}: {a.error.str()}" for a in failed))


def close_cached_clients() -> None:
    """Close the cached consumers of this process (executor readers and group committers)."""
    with _CACHE_LOCK:
        readers = [c for pid, c in _CONSUMER_CACHE.values() if pid == os.getpid()]
        committers = list(_COMMITTERS.values())
        _CONSUMER_CACHE.clear()
        _COMMITTERS.clear()
    for committer in committers:
        committer.close()
    for consumer in readers:
        try:
            consumer.close()
        except (KafkaException, RuntimeError):
            pass

