"""The kafka copy sink's frame writer: whole micro-batches to Kafka with Spark's own Kafka writer.

``kafka_copy_handler(plan)`` is the handler factory ``KafkaSinkTask.frame_writer`` names
(``handlers.handler_for`` dispatches to it). Per micro-batch, on the driver:

1. ``_ranges``: one small aggregation over the batch gives, per source topic-partition, its
   record count and last offset (what the offsets store, status and offsets API need);
2. ``CopyTargets.prepare``: the target of each source topic in the batch (``TopicRouter``: the
   self-feeding guard), created with the source's partition count when missing
   (``target.topic.create``), and each target's partition count (metadata, cached);
3. ``copy_frame`` + ``DataFrameWriter.format("kafka").save()``: every row goes to Kafka on the
   executors, in the JVM: target topic from ``target.topic.format`` as a column expression, key,
   value and headers unchanged, the partition kept when the target has it (else null: the
   producer's partitioner), the timestamp in the reserved header ``TIMESTAMP_HEADER`` that
   ``org.sparkcat.kafka.HeaderTimestampInterceptor`` (``jvm/interceptor``) turns back into the
   record's timestamp.

The batch is persisted between 1 and 3 so Kafka is read once. ``save`` returns when every record
is acknowledged (Spark's writer flushes its producer at the end of each write task); any error
fails the micro-batch, which Spark replays from the checkpoint: at-least-once, as before. With
``exactly.once.support=required`` the handler is ``_eos_copy_handler`` instead: Kafka transactions
of a Python producer per task (``kafka_copy_eos``), no persist and no JVM writer.

Tasks stay Connect's tasks for status and offsets: each source partition's records count for the
task that owns it (``kafka_input.assign_tasks``, as the SinkTask path routes rows). The writing
itself is spread by Spark over the executors by Kafka partition, so ``worker_id`` is the driver's,
which runs the batch's write.
"""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from sparkcat.connectors.kafka_sink import (
    CONFIG_DEF,
    COPY_PRODUCER_DEFAULTS,
    METADATA_MAX_AGE_S,
    TARGET_BOOTSTRAP_CONFIG,
    TARGET_REPLICATION_CONFIG,
    TARGET_TOPIC_CREATE_CONFIG,
    TARGET_TOPIC_FORMAT_CONFIG,
    TOPIC_PLACEHOLDER,
    TopicRouter,
    producer_overrides,
    target_servers,
)
from sparkcat.errors import ConfigError, ConnectorError, SparkcatError
from sparkcat.policy.input_policy import prepare
from sparkcat.spark.batch_results import batch_result
from sparkcat.spark.kafka_copy_eos import (
    EOS_RESULT_SCHEMA,
    EosCopy,
    committed_floors,
    copy_partition,
    eos_producer_conf,
    exactly_once_required,
    fence,
    plan_group_id,
)
from sparkcat.spark.kafka_input import (
    Assignment,
    TopicPartitionKey,
    route,
    sink_position,
    subscribed_partitions,
    worker_admin,
)
from sparkcat.kafka.producers import LeaderLease
from sparkcat.spark.kill_points import hold
from sparkcat.spark.leases import write_under_lease
from sparkcat.spark.plan import BatchResult, LeaseSource, QueryPlan, TaskBatchResult, no_lease, task_failure_message

__all__ = ["kafka_copy_handler", "writer_options", "copy_frame", "CopyTargets", "TIMESTAMP_HEADER", "INTERCEPTOR"]

log = logging.getLogger(__name__)

#: The reserved header carrying a record's timestamp (8 bytes, big-endian epoch ms) to the interceptor.
TIMESTAMP_HEADER = "sparkcat.timestamp"
#: sparkcat's producer interceptor (``jvm/interceptor``, in ``.jars/spark``).
INTERCEPTOR = "org.sparkcat.kafka.HeaderTimestampInterceptor"
METADATA_TIMEOUT_S = 30.0
#: Settings of the Python (librdkafka) clients in the worker's kafka.* that the Java producer does not know.
_PYTHON_CLIENT_ONLY = frozenset({"logger", "log_level", "debug", "enable.partition.eof", "enable.auto.offset.store",
                                 "fetch.wait.max.ms", "fetch.queue.backoff.ms", "queued.min.messages"})
#: What the admin client of another target cluster takes from producer.override.*: how to connect.
_CONNECTION_PREFIXES = ("security.", "sasl.", "ssl.")


# ---------------------------------------------------------------- writer options


def writer_options(config: Mapping[str, str], worker_bootstrap: str,
                   worker_kafka: Mapping[str, Any]) -> dict[str, str]:
    """Options of Spark's Kafka writer: ``kafka.``-prefixed producer settings for the target cluster.

    Copy defaults < the worker's kafka settings (own cluster only; ``producer.`` stripped,
    ``consumer.``/``admin.`` left out) < ``producer.override.*``. The interceptor that restores
    timestamps is always set (after any interceptor the settings name). Raises ConfigError for
    overrides Spark's writer cannot honour (``kafka_sink.producer_overrides``).
    """
    servers = target_servers(dict(config), worker_bootstrap)
    conf = dict(COPY_PRODUCER_DEFAULTS)
    if servers == worker_bootstrap:
        for key, value in worker_kafka.items():
            if key.startswith(("consumer.", "admin.")):
                continue
            key = key.removeprefix("producer.")
            if key not in _PYTHON_CLIENT_ONLY and key not in ("key.serializer", "value.serializer"):
                conf[key] = str(value)
    conf.update(producer_overrides(dict(config)))
    interceptors = [c.strip() for c in conf.get("interceptor.classes", "").split(",") if c.strip()]
    conf["interceptor.classes"] = ",".join([c for c in interceptors if c != INTERCEPTOR] + [INTERCEPTOR])
    conf["bootstrap.servers"] = servers
    return {f"kafka.{k}": v for k, v in sorted(conf.items())}


# ---------------------------------------------------------------- the written frame


def _target_topic(fmt: str) -> Column:
    """``target.topic.format`` as a column: literal pieces around the row's ``topic``."""
    pieces = fmt.split(TOPIC_PLACEHOLDER)
    cols: list[Column] = []
    for i, piece in enumerate(pieces):
        if i:
            cols.append(F.col("topic"))
        if piece:
            cols.append(F.lit(piece))
    return F.concat(*cols) if len(cols) > 1 else cols[0]


def copy_frame(batch: DataFrame, fmt: str, partitions: Mapping[str, int]) -> DataFrame:
    """The rows Spark's Kafka writer takes: topic, key, value, headers (+ timestamp header), partition.

    ``partitions`` maps each source topic to its target's partition count: a row keeps its
    partition when the target has it, else null (the producer's partitioner). A negative
    timestamp (none in Kafka) is not carried, so the producer stamps the record.
    """
    counts = F.create_map(*[x for t, n in sorted(partitions.items()) for x in (F.lit(t), F.lit(n))]) \
        if partitions else F.create_map().cast("map<string,int>")
    keep = F.col("partition") < F.coalesce(counts[F.col("topic")], F.lit(0))
    stamp = F.struct(F.lit(TIMESTAMP_HEADER).alias("key"),
                     F.unhex(F.lpad(F.hex(F.col("timestamp")), 16, "0")).alias("value"))
    # Most records have no headers (null): a new one-element array is cheaper than a concat there.
    with_stamp = F.when(F.col("headers").isNull(), F.array(stamp)).otherwise(F.concat(F.col("headers"), F.array(stamp)))
    headers = F.when(F.col("timestamp") >= 0, with_stamp).otherwise(F.col("headers"))
    return batch.select(_target_topic(fmt).alias("topic"), "key", "value", headers.alias("headers"),
                        F.when(keep, F.col("partition")).cast("int").alias("partition"))


# ---------------------------------------------------------------- target topics (driver)


@dataclass
class CopyTargets:
    """Target topics of one connector: routing, creation and partition counts (metadata cached)."""

    router: TopicRouter
    create: bool
    replication: int
    target_admin: Any
    counts: dict[str, tuple[float, int]] = field(default_factory=dict)
    created: set[str] = field(default_factory=set)

    def prepare(self, topics: Sequence[str], source_partitions: Mapping[str, int]) -> dict[str, int]:
        """Source topic -> its target's partition count (0: unknown, left to the partitioner).

        Raises ConnectorError naming the topic when a target would feed the copy itself or
        cannot be created; ``source_partitions`` gives the partition count a new target gets.
        """
        out = {}
        for topic in topics:
            target = self.router(topic)
            if self.create and target not in self.created:
                self._ensure(target, source_partitions.get(topic, 1))
            out[topic] = self._count(target)
        return out

    def _ensure(self, target: str, partitions: int) -> None:
        """Create ``target`` unless it exists; either way its partition count is known from here on.

        The count of a topic just created is the one asked for: metadata may not show the topic yet,
        and a count of 0 would hand the first batch's records to the partitioner.
        """
        from confluent_kafka.admin import NewTopic
        existing = self.target_admin.list_topics(timeout=METADATA_TIMEOUT_S).topics  # a full listing never auto-creates
        md = existing.get(target)
        if md is not None and md.error is None and md.partitions:
            self.counts[target] = (time.monotonic(), len(md.partitions))
        else:
            future = self.target_admin.create_topics([NewTopic(target, partitions, self.replication)])[target]
            try:
                future.result(timeout=METADATA_TIMEOUT_S)
                log.info("Created target topic %s with %d partition(s)", target, partitions)
                self.counts[target] = (time.monotonic(), partitions)
            except Exception as e:
                if "TOPIC_ALREADY_EXISTS" not in str(e):  # another copy created it first: its metadata says how many
                    raise ConnectorError(f"creating target topic {target!r} failed: {e}") from e
        self.created.add(target)

    def _count(self, target: str) -> int:
        cached = self.counts.get(target)
        now = time.monotonic()
        if cached is not None and now - cached[0] < METADATA_MAX_AGE_S:
            return cached[1]
        md = self.target_admin.list_topics(timeout=METADATA_TIMEOUT_S).topics.get(target)
        count = len(md.partitions) if md is not None and md.error is None else 0
        self.counts[target] = (now, count)
        return count


def _target_admin(plan: QueryPlan, servers: str, config: Mapping[str, str]) -> Any:
    """An AdminClient for the target cluster: the worker's (cached) on its own cluster, else a new one."""
    if servers == plan.bootstrap_servers:
        return worker_admin(plan.bootstrap_servers, plan.kafka_config)
    from confluent_kafka.admin import AdminClient
    settings = {k[len("producer.override."):]: str(v) for k, v in config.items()
                if k.startswith("producer.override.") and k[len("producer.override."):].startswith(_CONNECTION_PREFIXES)}
    return AdminClient({**settings, "bootstrap.servers": servers})


# ---------------------------------------------------------------- the handler


@dataclass(frozen=True)
class _Range:
    """What one micro-batch holds of one source partition."""

    topic: str
    partition: int
    records: int
    last_offset: int


def _ranges(batch: DataFrame) -> list[_Range]:
    """Records and last offset per source topic-partition of the batch (one small Spark job)."""
    rows = batch.groupBy("topic", "partition").agg(F.count(F.lit(1)).alias("n"), F.max("offset").alias("last")) \
        .collect()
    return [_Range(r.topic, int(r.partition), int(r.n), int(r.last)) for r in rows]


def _result(plan: QueryPlan, batch_id: int, ranges: Sequence[_Range], assignment: Assignment,
            started: float) -> BatchResult:
    """Per task: its records and, per source partition it owns, the next offset to read."""
    wid = f"{socket.gethostname()}:driver"
    tasks: dict[int, TaskBatchResult] = {}
    for r in sorted(ranges, key=lambda r: (r.topic, r.partition)):
        task = assignment.owners.get((r.topic, r.partition), assignment.live[0])
        result = tasks.setdefault(task, TaskBatchResult(task, wid, 0, []))
        result.records += r.records
        result.offsets.append(sink_position(r.topic, r.partition, r.last_offset + 1))
    return BatchResult(plan.connector, batch_id, tasks, time.monotonic() - started)


def _blamed(plan: QueryPlan, tasks: Sequence[int], error: Exception) -> RuntimeError:
    """An error naming every task in ``tasks`` (the herder marks each FAILED), the full error once at the end.

    A failed JVM write's text is a long Java stack trace: each task's line gets its first line only.
    """
    text = str(error).strip()
    first = text.splitlines()[0][:500] if text else ""
    short = error if isinstance(error, SparkcatError) else RuntimeError(first)
    lines = [task_failure_message(plan.connector, t, short) for t in sorted(set(tasks))]
    if short is not error and text != first:
        lines.append(text)
    return RuntimeError("\n".join(lines))


def _owners(assignment: Assignment, ranges: Sequence[_Range], topics: Sequence[str] | None = None) -> list[int]:
    return [assignment.owners.get((r.topic, r.partition), assignment.live[0])
            for r in ranges if topics is None or r.topic in topics]


def kafka_copy_handler(plan: QueryPlan, lease: LeaseSource = no_lease) -> Callable[[DataFrame, int], BatchResult]:
    """The foreachBatch handler of a kafka copy sink connector (see the module doc); ``lease``: exactly-once's.

    Raises ConfigError at once for a config the writer cannot run (refused producer settings,
    no cluster to write to, or a source connector naming this sink in ``sink.*``).
    """
    if plan.connector_type != "sink":
        raise ConfigError(f"connector {plan.connector}: the kafka sink copies Kafka topics and cannot take a source "
                          "connector's records (sink.connector.class); a source connector writes to Kafka by default")
    config = prepare(plan.connector_config)  # placeholders resolved here, on the driver where the writer runs
    parsed = CONFIG_DEF.parse(config)
    options = writer_options(config, plan.bootstrap_servers, plan.kafka_config)
    servers = options["kafka.bootstrap.servers"]
    fmt = str(parsed[TARGET_TOPIC_FORMAT_CONFIG])
    if exactly_once_required(config):
        return _eos_copy_handler(plan, config, options, lease)
    live = plan.live_tasks
    targets: list[CopyTargets] = []  # built on the first batch: no network work while the query starts

    def handler(batch_df: DataFrame, batch_id: int) -> BatchResult:
        started = time.monotonic()
        partitions: list[TopicPartitionKey] = subscribed_partitions(plan)
        assignment = Assignment.of(partitions, live)
        batch = batch_df.persist(StorageLevel.MEMORY_AND_DISK)
        counted_at = [time.monotonic()]
        try:
            ranges = _ranges(batch)
            counted_at.append(time.monotonic())
            if not ranges:
                return BatchResult(plan.connector, batch_id, {}, time.monotonic() - started)
            if not targets:
                targets.append(CopyTargets(TopicRouter.of(config, same_cluster=servers == plan.bootstrap_servers),
                                           bool(parsed[TARGET_TOPIC_CREATE_CONFIG]),
                                           int(parsed[TARGET_REPLICATION_CONFIG]),
                                           _target_admin(plan, servers, config)))
            counts = _prepare_targets(plan, targets[0], partitions, sorted({r.topic for r in ranges}),
                                      lambda topic: _owners(assignment, ranges, [topic]))
            prepared = time.monotonic()
            try:
                copy_frame(batch, fmt, counts).write.format("kafka").options(**options).save()
            except Exception as e:  # a failed write fails every task with records in the batch
                raise _blamed(plan, _owners(assignment, ranges), e) from e
            result = _result(plan, batch_id, ranges, assignment, started)
            log.debug("%s batch %d: %d records; metadata %.2fs, read and count %.2fs, targets %.2fs, write %.2fs",
                      plan.connector, batch_id, result.records, counted_at[0] - started,
                      counted_at[1] - counted_at[0], prepared - counted_at[1], time.monotonic() - prepared)
            return result
        finally:
            batch.unpersist()

    return handler


def _prepare_targets(plan: QueryPlan, targets: CopyTargets, partitions: Sequence[TopicPartitionKey],
                     topics: Sequence[str], owners: Callable[[str], list[int]]) -> dict[str, int]:
    """``CopyTargets.prepare`` for each topic; a failure fails the tasks ``owners(topic)`` names."""
    source_counts: dict[str, int] = {}
    for topic, _p in partitions:
        source_counts[topic] = source_counts.get(topic, 0) + 1
    counts: dict[str, int] = {}
    for topic in topics:
        try:
            counts.update(targets.prepare([topic], {topic: source_counts.get(topic, 1)}))
        except Exception as e:  # the tasks owning this topic's partitions fail
            raise _blamed(plan, owners(topic), e) from e
    return counts


def _eos_copy_handler(plan: QueryPlan, config: dict[str, str], options: dict[str, str],
                      lease: LeaseSource) -> Callable[[DataFrame, int], BatchResult]:
    """The handler with ``exactly.once.support=required`` (``kafka_copy_eos``): transactions per task and batch.

    The first batch of the query fences the connector's task ids and reads the committed positions, so
    that a batch an earlier run committed is not written twice (see ``kafka_copy_eos``).
    """
    servers = options["kafka.bootstrap.servers"]
    if servers != plan.bootstrap_servers or plan.offsets_store.get("backend") != "kafka":
        raise ConfigError(f"connector {plan.connector}: exactly.once.support=required writes the copy's positions "
                          "to the offsets topic in the same transaction as its records, so the target must be the "
                          "worker's own Kafka cluster; leave target.bootstrap.servers unset",
                          {TARGET_BOOTSTRAP_CONFIG: ["must be the worker's cluster for exactly-once"]})
    conf = eos_producer_conf(options, INTERCEPTOR)
    group, live = plan_group_id(plan), plan.live_tasks
    targets: list[CopyTargets] = []
    replayable = [True]  # only the first batch of a query can repeat a batch of an earlier run

    def handler(batch_df: DataFrame, batch_id: int) -> BatchResult:
        started = time.monotonic()
        partitions = subscribed_partitions(plan)
        assignment = Assignment.of(partitions, live)
        if not targets:
            parsed = CONFIG_DEF.parse(config)
            targets.append(CopyTargets(TopicRouter.of(config, same_cluster=True),
                                       bool(parsed[TARGET_TOPIC_CREATE_CONFIG]), int(parsed[TARGET_REPLICATION_CONFIG]),
                                       _target_admin(plan, servers, config)))
        topics = sorted({t for t, _ in partitions})
        owned = lambda topic: sorted({assignment.owners[(t, p)] for t, p in partitions if t == topic})  # noqa: E731
        counts = _prepare_targets(plan, targets[0], partitions, topics, owned)

        def run(held: LeaderLease | None, replay: bool) -> list[Any]:
            floors = None
            if replay:
                try:
                    fence(conf, group, plan.connector, len(plan.task_configs))
                    floors = committed_floors(conf, plan.offsets_store, plan.connector)
                except Exception as e:
                    raise _blamed(plan, live, e) from e
            spec = EosCopy(plan.connector, group, conf, dict(plan.offsets_store),
                           {t: targets[0].router(t) for t in topics}, counts, batch_id, floors, held)
            return route(batch_df, assignment).mapInArrow(lambda it: copy_partition(spec, it),
                                                          EOS_RESULT_SCHEMA).collect()

        rows = write_under_lease(lease, run, bool(replayable), plan.connector, batch_id)
        replayable.clear()
        hold(plan.connector, "copy-batch-written", batch_id)
        result = batch_result(plan.connector, batch_id, rows, started)
        log.debug("%s batch %d: %d records in transactions (%d skipped as committed before); init+commit "
                  "txn_ms=%.1f (longest task)", plan.connector, batch_id, result.records,
                  sum(r.skipped for r in rows), max((r.txn_ms for r in rows), default=0.0))
        return result

    return handler
