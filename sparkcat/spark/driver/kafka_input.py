"""Kafka input on Spark's own Kafka source (``spark-sql-kafka-0-10``): sink connectors and the config log.

A sink connector's query reads its topics with ``spark.readStream.format("kafka")``, configured
here from the ``QueryPlan`` (``reader_options``):

- ``topics.regex`` -> ``subscribePattern``, anchored so that it matches whole topic names as in
  Connect (new matching topics are picked up by Spark and start at their earliest offset);
  ``topics`` -> ``subscribePattern`` too, of exactly those names: Spark's ``subscribe`` describes
  the named topics and fails the query when one does not exist, where a Connect sink's consumer
  waits for it; the pattern reads the topics that exist and each missing one once it is created;
- the consumer's settings from ``sparkcat.kafka.client_settings`` (the worker's ``kafka.*`` for
  consumers and the connector's ``consumer.override.*``, in the Java client's names), as
  ``kafka.``-prefixed options; ``isolation.level`` defaults to ``read_committed``, fetches are
  bigger than the consumer's defaults (``READER_DEFAULTS``);
- ``startingOffsets``: where the offsets store says the connector stopped, ``earliest`` for every
  other partition (Connect's ``auto.offset.reset`` for sinks). Spark uses it only for a fresh
  checkpoint, so a new query (``tasks.max`` changed, checkpoint lost) continues exactly there.
  Spark wants specific offsets for exactly the partitions it finds, so they are listed from
  metadata just before the query starts; a partition added in between fails the query's first
  batch (Spark's assertion names both sets): its tasks are FAILED until restarted;
- ``maxOffsetsPerTrigger`` = ``batch.max.records`` x live tasks; ``failOnDataLoss=false``, as a
  Connect sink consumer carries on (from the earliest offset) when records it has not read yet
  were deleted, or its topic was deleted and created again; Spark logs a warning instead.

Tasks stay Connect's tasks: the subscribed topic-partitions, sorted by (topic, partition), are
split over the live (not FAILED) tasks with ``group_partitions`` (Connect's
``ConnectorUtils.groupPartitions``), so a task owns a stable set. A FAILED task's partitions go to
the other tasks, as a Kafka Connect consumer group rebalances them when that task's consumer
leaves. ``route`` tags every row of a micro-batch with its task (``_task``) and, unless every task
owns at most one partition (Spark reads one Kafka partition per Spark partition), shuffles the
rows so that one Spark partition holds exactly the rows of one task: each task's records then go
through one instance of its SinkTask per micro-batch.

Everything here runs on the driver (``subscribed_partitions`` asks the broker for metadata with a
cached confluent-kafka AdminClient, one per Kafka configuration in the process).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sparkcat.api.util import group_partitions
from sparkcat.errors import ConnectorError
from sparkcat.kafka.admins import worker_admin
from sparkcat.kafka.client_settings import ClientKind, connector_overrides, spark_source_options
from sparkcat.spark.query_plan import TopicPartitionKey, tp_key

__all__ = ["SparkKafkaError", "Assignment", "reader_options",
           "starting_offsets_option", "assign_tasks", "subscribed_partitions", "partition_route_keys",
           "murmur3_int", "route", "INTERNAL_TOPICS",
           "subscribed_topics"]

#: Kafka's own internal topics, which a pattern subscription never matches.
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})
METADATA_TIMEOUT_S = 30.0
#: Consumer defaults of sink input (worker settings and consumer.override.* win). Bigger fetches than
#: the Java consumer's 1 MB per partition: each Spark task reads one partition and fetches again only
#: when its buffer is empty, so small fetches left the copy waiting on round trips (measured with
#: bench/run.py --only copy: 154k -> 215k records/s, the same batches, load average under 2).
#: fetch.max.wait.ms: a fetch that finds nothing is held that long by the broker, and the requests behind it on
#: the connection with it. At a range's end on a transactional topic (a commit marker, no record) Spark's task asks
#: the earliest and latest offsets, each behind a prefetch held 500 ms by default: a sink's slot idled about a
#: second per batch (thread dumps of the scale benchmark). Spark's tasks read ranges known to exist.
READER_DEFAULTS = {"isolation.level": "read_committed", "max.partition.fetch.bytes": str(8 << 20),
                   "fetch.max.bytes": str(64 << 20), "fetch.max.wait.ms": "10"}


class SparkKafkaError(ConnectorError):
    """Setting up Spark's Kafka input failed (metadata, subscription); the message names the servers."""


def _subscription(config: Mapping[str, str]) -> tuple[list[str], str | None]:
    topics = [t.strip() for t in str(config.get("topics") or "").split(",") if t.strip()]
    regex = str(config.get("topics.regex") or "").strip() or None
    if bool(topics) == bool(regex):
        raise SparkKafkaError("a sink connector needs exactly one of topics or topics.regex")
    return topics, regex


def subscribed_topics(config: Mapping[str, str], existing: Mapping[str, Any]) -> list[str]:
    """The topics of ``existing`` (a cluster's, by name) a sink connector's config subscribes: the config read
    once and its regex compiled once for all of them (a shared sink query asks it of every member each trigger)."""
    topics, regex = _subscription(config)
    if regex is None:
        return [t for t in dict.fromkeys(topics) if t in existing]
    pattern = re.compile(regex)
    return [t for t in existing if t not in INTERNAL_TOPICS and pattern.fullmatch(t) is not None]


def subscribed(config: Mapping[str, str], topic: str) -> bool:
    """Whether a sink connector's config subscribes ``topic`` (Connect's full-match regex)."""
    return bool(subscribed_topics(config, {topic: None}))


def starting_offsets_option(stored: Mapping[str, int], partitions: Iterable[TopicPartitionKey]) -> str:
    """Spark's ``startingOffsets`` JSON: the stored next offset, else -2 (earliest), for every partition.

    Spark wants every partition it is assigned when offsets are specific, so ``partitions``
    must be all subscribed partitions; stored offsets of partitions that no longer exist are
    left out.

    >>> starting_offsets_option({"a:1": 7, "gone:0": 3}, [("a", 0), ("a", 1)])
    '{"a": {"0": -2, "1": 7}}'
    """
    out: dict[str, dict[str, int]] = {}
    for topic, partition in sorted(set(partitions)):
        out.setdefault(topic, {})[str(partition)] = int(stored.get(tp_key(topic, partition), -2))
    return json.dumps(out, sort_keys=True)


def reader_options(plan: Any, stored: Mapping[str, int], partitions: Sequence[TopicPartitionKey] | None) -> dict[str, str]:
    """All options of the sink connector's ``readStream.format("kafka")`` (see the module doc).

    ``stored`` is ``{"topic:partition": next offset}`` from the offsets store; ``partitions``
    the subscribed partitions now (needed only when ``stored`` is not empty).
    """
    config = plan.connector_config
    topics, regex = _subscription(config)
    options = spark_source_options(plan.bootstrap_servers, plan.kafka_config,
                                   connector_overrides(config, ClientKind.CONSUMER), READER_DEFAULTS)
    if regex is not None:
        # anchored: Spark matches the pattern anywhere in a topic name, Connect matches whole names
        options["subscribePattern"] = f"^(?:{regex})$"
    else:
        options["subscribePattern"] = names_pattern(topics)
    if stored and partitions:
        options["startingOffsets"] = starting_offsets_option(stored, partitions)
    else:
        options["startingOffsets"] = "earliest"
    live = max(1, len(plan.task_configs) - len(set(plan.excluded_tasks)))
    options["maxOffsetsPerTrigger"] = str(plan.batch_max_records * live)
    options["failOnDataLoss"] = "false"
    options["includeHeaders"] = "true"
    return options


def names_pattern(topics: Sequence[str]) -> str:
    """A Java regex matching exactly these topic names (every character not a letter, digit or ``_`` escaped).

    >>> names_pattern(["orders.v1", "a-b"])
    '^(?:orders\\\\.v1|a\\\\-b)$'
    """
    def escape(name: str) -> str:  # Java allows a backslash before any character that is not a letter or digit
        return "".join(c if c.isalnum() or c == "_" else "\\" + c for c in name)
    return "^(?:" + "|".join(escape(t) for t in topics) + ")$"


def assign_tasks(partitions: Iterable[TopicPartitionKey], task_ids: Sequence[int]) -> dict[TopicPartitionKey, int]:
    """The task of each partition: sorted by (topic, partition), split over ``task_ids`` with ``group_partitions``.

    >>> assign_tasks([("b", 0), ("a", 1), ("a", 0)], [0, 2])
    {('a', 0): 0, ('a', 1): 0, ('b', 0): 2}
    """
    if not task_ids:
        raise ValueError("no live task to assign partitions to")
    owners: dict[TopicPartitionKey, int] = {}
    for task, owned in zip(task_ids, group_partitions(sorted(set(partitions)), len(task_ids)), strict=True):
        for tp in owned:
            owners[tp] = task
    return owners


# ---------------------------------------------------------------- metadata (driver)

def connector_admin(plan: Any) -> Any:
    """The AdminClient of one connector's work on the worker's Kafka: the worker's settings and its ``admin.override.*``."""
    return worker_admin(plan.bootstrap_servers, plan.kafka_config, connector_admin_overrides(plan))


def connector_admin_overrides(plan: Any) -> dict[str, str]:
    """The connector's ``admin.override.*`` settings, prefix stripped and placeholders resolved."""
    config = plan.connector_config
    overrides = connector_overrides(config, ClientKind.ADMIN)
    if overrides:  # placeholders resolved here, and only when there are overrides: this runs once per batch
        from sparkcat.policy.input_policy import POLICY_KEY, prepare
        own = {k: v for k, v in config.items() if k == POLICY_KEY or k.startswith(f"{ClientKind.ADMIN.value}.override.")}
        overrides = connector_overrides(prepare(own), ClientKind.ADMIN)
    return overrides


def admin_identity_consumer(plan: Any) -> dict[str, Any]:
    """A driver-side consumer's settings that act as the connector's AdminClient would: the worker's consumer
    settings and the connection and credentials of ``admin.override.*`` (the sink group's commits, a shared sink
    query's end watch, which ListOffsets requests with that identity stand in for)."""
    from sparkcat.kafka.client_settings import connection_settings, consumer_settings
    return consumer_settings(plan.bootstrap_servers, plan.kafka_config,
                             connection_settings(connector_admin_overrides(plan)))


def subscribed_partitions(plan: Any) -> list[TopicPartitionKey]:
    """The topic-partitions the sink connector subscribes to now, sorted (one metadata request)."""
    from confluent_kafka import KafkaException
    try:
        metadata = connector_admin(plan).list_topics(timeout=METADATA_TIMEOUT_S)
    except KafkaException as e:
        raise SparkKafkaError(f"Kafka at {plan.bootstrap_servers}: listing topics for connector "
                              f"{plan.connector!r} failed: {e}") from e
    existing = {name: topic for name, topic in metadata.topics.items() if topic.error is None}
    return sorted((name, p) for name in subscribed_topics(plan.connector_config, existing)
                  for p in existing[name].partitions)


# ---------------------------------------------------------------- routing rows to tasks (driver builds, executors run)


def murmur3_int(value: int, seed: int = 42) -> int:
    """Spark's ``Murmur3_x86_32.hashInt`` (what ``hash(int column)`` and hash partitioning compute)."""
    mask = 0xFFFFFFFF

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & mask

    k1 = (value & mask) * 0xCC9E2D51 & mask
    k1 = rotl(k1, 15) * 0x1B873593 & mask
    h1 = rotl(seed ^ k1, 13) * 5 + 0xE6546B64 & mask
    h1 ^= 4
    h1 ^= h1 >> 16
    h1 = h1 * 0x85EBCA6B & mask
    h1 ^= h1 >> 13
    h1 = h1 * 0xC2B2AE35 & mask
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 & 0x80000000 else h1


def partition_route_keys(n: int) -> list[int]:
    """Integers ``k[i]`` that Spark's hash partitioning into ``n`` partitions sends to partition ``i``.

    Repartitioning by ``k[task index]`` puts each task's rows in a Spark partition of its own
    (repartitioning by the task id itself could put two tasks in one partition).
    """
    keys: list[int | None] = [None] * n
    left, candidate = n, 0
    while left:
        slot = murmur3_int(candidate) % n
        if keys[slot] is None:
            keys[slot] = candidate
            left -= 1
        candidate += 1
    return [int(k) for k in keys if k is not None]


@dataclass(frozen=True)
class Assignment:
    """Which live task owns each subscribed partition, for one micro-batch."""

    owners: dict[TopicPartitionKey, int]
    live: tuple[int, ...]

    @property
    def one_partition_per_task(self) -> bool:
        """True when no task owns two partitions: Spark's input partitions are then already per task."""
        return len(set(self.owners.values())) == len(self.owners)

    @classmethod
    def of(cls, partitions: Iterable[TopicPartitionKey], task_ids: Sequence[int]) -> Assignment:
        return cls(assign_tasks(partitions, task_ids), tuple(task_ids))


def tag_tasks(df: Any, assignment: Assignment) -> Any:
    """The Kafka rows of one micro-batch with ``_task``: the task that owns each row's partition.

    A row of a partition the assignment does not know (a topic that appeared after the
    metadata was read) goes to the first live task, so no row is ever dropped.
    """
    from pyspark.sql import functions as F
    pairs = []
    for (topic, partition), task in sorted(assignment.owners.items()):
        pairs += [F.lit(tp_key(topic, partition)), F.lit(task)]
    tp = F.concat_ws(":", F.col("topic"), F.col("partition").cast("string"))  # tp_key, as a column
    owner = F.create_map(*pairs)[tp] if pairs else F.lit(None)
    return df.withColumn("_task", F.coalesce(owner, F.lit(assignment.live[0])).cast("int"))


def route(df: Any, assignment: Assignment, coalesce_one: bool = True) -> Any:
    """``tag_tasks``, then one Spark partition per task (a shuffle only when one of several tasks owns several
    partitions, or, with ``coalesce_one=False``, when the one task does: a JVM function after ``coalesce`` fails to
    deserialise on a cluster's executors under Scala 2.13, measured on a standalone cluster)."""
    from pyspark.sql import functions as F
    tagged = tag_tasks(df, assignment)
    if assignment.one_partition_per_task:
        return tagged
    if len(assignment.live) == 1 and coalesce_one:
        # One task: its Kafka partitions are read one after the other in one Spark task, without the shuffle
        # (a map stage, a result stage and an exchange per micro-batch) that repartitioning would add.
        return tagged.coalesce(1)
    index = {task: i for i, task in enumerate(assignment.live)}
    keys = partition_route_keys(len(assignment.live))
    route_map = F.create_map(*[x for task, i in index.items() for x in (F.lit(task), F.lit(keys[i]))])
    routed = tagged.withColumn("_route", route_map[F.col("_task")].cast("int"))
    return routed.repartition(len(assignment.live), F.col("_route")).drop("_route")
