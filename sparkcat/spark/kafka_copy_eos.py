"""The kafka copy sink with ``exactly.once.support=required``: each task's share of a micro-batch in one
Kafka transaction that also carries the task's new positions.

Spark's Kafka writer (the at-least-once path, ``kafka_copy_writer``) has no transactions, so here the
rows go through ``mapInArrow`` to a transactional confluent-kafka producer, one Spark partition per
connector task (``kafka_input.route``). Per task and micro-batch, on the executor:

1. a fresh producer with ``transactional.id = {group.id}-{connector}-{task}`` (Connect's
   ``Worker.taskTransactionalId``); ``init_transactions`` fences any earlier producer of that id (a
   zombie of a killed driver, an earlier Spark attempt) and aborts its open transaction;
2. ``begin_transaction``, the rows produced with their key, value, headers, timestamp and, when the
   target has it, partition (the same records the at-least-once path writes);
3. in the same transaction, the task's positions as offsets-store records (Connect's sink shape
   ``["NAME",{"kafka_partition":p,"kafka_topic":t}]`` -> ``{"kafka_offset":next}``, partition 0 of
   the worker's offsets topic, which is why the target must be the worker's cluster);
4. ``commit_transaction``: the records and the positions become visible together, or neither.

Replays: the first batch of a query (the only one that can repeat a batch of an earlier run) and any
Spark task retry first fence, wait until no transaction older than the fencing is open on the offsets
topic (its last stable offset reaches the high watermark seen after fencing), then read the committed
positions (``floors``). A row below its partition's floor was committed by an earlier attempt and is
skipped; every other row is written. So a batch whose transaction committed is skipped, one that
aborted (or never ran) is rewritten, per partition, whatever moment the driver died at.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from itertools import chain
from typing import Any

from sparkcat.api.util import partition_key
from sparkcat.errors import ConfigError, ConnectorError
from sparkcat.kafka.partitioner import keyed_partition, partition_count
from sparkcat.kafka.producers import (
    TRANSACTION_TIMEOUT_MS,
    LeaderLease,
    commit_under_lease,
    fence_transactional_ids,
    task_transactional_id,
    transactional_producer,
)
from sparkcat.spark.batch_results import raise_task_error, worker_id
from sparkcat.spark.kafka_input import sink_position, tp_key
from sparkcat.spark.kill_points import hold
from sparkcat.spark.plan import QueryPlan
from sparkcat.storage import json_codec

__all__ = ["exactly_once_required", "EosCopy", "EOS_RESULT_SCHEMA", "eos_producer_conf", "fence", "committed_floors",
           "copy_partition"]

log = logging.getLogger(__name__)
_CLIENT_LOG = logging.getLogger("sparkcat.spark.kafka.client")

EOS_RESULT_SCHEMA = "task INT, worker_id STRING, records BIGINT, offsets STRING, skipped BIGINT, txn_ms DOUBLE"
TXN_TIMEOUT_S = 60.0
#: What the Java writer's settings become for librdkafka: Java's partitioner for keyed records.
_PYTHON_DEFAULTS = {"partitioner": "murmur2_random"}
_DROPPED = ("interceptor.classes",)  # the timestamp interceptor: this producer sets timestamps itself


def exactly_once_required(config: Mapping[str, object]) -> bool:
    """Whether the connector's ``exactly.once.support`` is ``required`` (case-insensitive, as Connect reads it)."""
    return str(config.get("exactly.once.support") or "requested").strip().lower() == "required"


def eos_producer_conf(writer_options: Mapping[str, str], interceptor: str) -> dict[str, str]:
    """The transactional producer's settings from the at-least-once writer's (``kafka.``-prefixed) options.

    Raises ConfigError naming a setting librdkafka does not know (a Java-only producer override).
    """
    conf = dict(_PYTHON_DEFAULTS)
    for key, value in writer_options.items():
        conf[key.removeprefix("kafka.")] = value
    named = [c.strip() for c in conf.pop("interceptor.classes", "").split(",")]
    others = [c for c in named if c and c != interceptor]
    if others:
        raise ConfigError(f"exactly.once.support=required writes with a Python producer, which cannot load the Java "
                          f"interceptors {', '.join(others)}", {"producer.override.interceptor.classes": ["Java only"]})
    timeout = max(TRANSACTION_TIMEOUT_MS, int(conf.get("delivery.timeout.ms", conf.get("message.timeout.ms", 0)) or 0))
    conf["transaction.timeout.ms"] = str(timeout)
    conf["enable.idempotence"] = "true"
    _check_known(conf)
    return conf


def _check_known(conf: Mapping[str, str]) -> None:
    """Build (without connecting) a producer from ``conf`` to refuse settings librdkafka does not know."""
    from confluent_kafka import KafkaException, Producer
    try:
        Producer({**{k: v for k, v in conf.items() if k != "bootstrap.servers"}, "log_level": 0})
    except KafkaException as e:
        raise ConfigError(f"exactly.once.support=required writes with a Python (librdkafka) producer: {e}",
                          {"exactly.once.support": [str(e)]}) from e


def fence(conf: Mapping[str, str], group_id: str, connector: str, tasks: int) -> None:
    """Fence the producers of task ids ``0..tasks-1`` (in parallel): their open transactions are aborted."""
    fence_transactional_ids(dict(conf), [task_transactional_id(group_id, connector, t) for t in range(tasks)],
                            _CLIENT_LOG, TXN_TIMEOUT_S)


def _wait_stable(conf: Mapping[str, str], topic: str, timeout_s: float) -> None:
    """Wait until no transaction opened before now is still open on any partition of ``topic``.

    Compares the last stable offset (read_committed) with the high watermark (read_uncommitted)
    taken first; a transaction nobody fenced (another task id) ends by commit, abort or its timeout.
    """
    from confluent_kafka import Consumer, TopicPartition
    client = {k: v for k, v in conf.items() if k.startswith(("security.", "sasl.", "ssl.")) or k == "bootstrap.servers"}
    raw = Consumer({**client, "group.id": "sparkcat-eos-probe", "isolation.level": "read_uncommitted"})
    committed = Consumer({**client, "group.id": "sparkcat-eos-probe", "isolation.level": "read_committed"})
    try:
        tps = [TopicPartition(topic, p) for p in range(partition_count(raw, topic, TXN_TIMEOUT_S))]
        highs = [raw.get_watermark_offsets(tp, timeout=TXN_TIMEOUT_S)[1] for tp in tps]
        deadline = time.monotonic() + timeout_s
        while any(committed.get_watermark_offsets(tp, timeout=TXN_TIMEOUT_S, cached=False)[1] < high
                  for tp, high in zip(tps, highs)):
            if time.monotonic() > deadline:
                raise TimeoutError(f"a transaction on {topic} stayed open for {timeout_s:.0f}s")
            time.sleep(0.1)
    finally:
        raw.close()
        committed.close()


def committed_floors(conf: Mapping[str, str], offsets_store: Mapping[str, str], connector: str) -> dict[str, int]:
    """``{"topic:partition": next offset}`` committed for ``connector``, once no older transaction is open."""
    from sparkcat.storage.factory import open_offsets_store
    _wait_stable(conf, offsets_store["topic"], TRANSACTION_TIMEOUT_MS / 1000 + 10)
    store = open_offsets_store(offsets_store)
    try:
        pairs = store.partitions(connector)
    finally:
        store.close()
    return {tp_key(p["kafka_topic"], p["kafka_partition"]): int(o["kafka_offset"]) for p, o in pairs
            if isinstance(o, dict) and "kafka_offset" in o and "kafka_topic" in p and "kafka_partition" in p}


@dataclass(frozen=True)
class EosCopy:
    """What the executors need to copy one micro-batch exactly once (plain data: it is pickled to them)."""

    connector: str
    group_id: str
    conf: dict[str, str]
    offsets_store: dict[str, str]
    targets: dict[str, str]          # source topic -> target topic
    counts: dict[str, int]           # source topic -> target partition count (0: unknown)
    batch_id: int
    floors: dict[str, int] | None    # committed positions when this batch may repeat an earlier one
    lease: LeaderLease | None = None  # the planning driver's proof of leadership, checked at commit


# ---------------------------------------------------------------- executors


def _unwritten(batch: Any, floors: Mapping[str, int]) -> Any:
    """The rows of ``batch`` at or past their partition's committed position (all rows without floors)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    if not floors or batch.num_rows == 0:
        return batch
    keys = pc.binary_join_element_wise(batch.column("topic"), pc.cast(batch.column("partition"), pa.string()), ":")
    names = list(floors)
    floor = pc.take(pa.array([floors[k] for k in names], pa.int64()), pc.index_in(keys, value_set=pa.array(names)))
    return batch.filter(pc.greater_equal(batch.column("offset"), pc.fill_null(floor, -1)))


def _headers(column: Any) -> list[Any] | None:
    """Spark's headers column as confluent-kafka header lists (None: no row has headers)."""
    if column.null_count == len(column):
        return None
    return [None if hs is None else [(h["key"], h["value"]) for h in hs] for hs in column.to_pylist()]


def _produce(producer: Any, spec: EosCopy, batch: Any) -> None:
    """Queue one Arrow batch of Kafka rows: target topic, key, value, headers, timestamp, partition kept."""
    col = batch.column
    sources = col("topic").to_pylist()
    unplanned = set(sources) - spec.targets.keys()
    if unplanned:  # a topic that appeared after the batch was planned: the replay after the restart has it
        raise ConnectorError(f"topic(s) {sorted(unplanned)} appeared after micro-batch {spec.batch_id} was planned; "
                             "the batch is replayed once its targets are known")
    topics = [spec.targets[t] for t in sources]
    parts = [p if p < spec.counts.get(t, 0) else -1 for t, p in zip(sources, col("partition").to_pylist())]
    stamps = [ts if ts is not None and ts > 0 else 0 for ts in col("timestamp").to_pylist()]  # 0: the producer's now
    keys, values, headers = col("key").to_pylist(), col("value").to_pylist(), _headers(col("headers"))
    produce, n, i = producer.produce, len(topics), 0
    while i < n:
        try:
            for i in range(i, n):
                produce(topics[i], values[i], keys[i], partition=parts[i], timestamp=stamps[i],
                        headers=None if headers is None else headers[i])
            i = n
        except BufferError:
            producer.poll(0.05)


def _positions(batch: Any, ends: dict[tuple[str, int], int]) -> None:
    """Fold the next offset to read of each source partition in ``batch`` into ``ends``."""
    import pyarrow as pa
    if batch.num_rows == 0:
        return
    table = pa.Table.from_batches([batch.select(["topic", "partition", "offset"])])
    for row in table.group_by(["topic", "partition"]).aggregate([("offset", "max")]).to_pylist():
        key = (row["topic"], int(row["partition"]))
        ends[key] = max(ends.get(key, 0), int(row["offset_max"]) + 1)


def _produce_positions(producer: Any, spec: EosCopy, ends: Mapping[tuple[str, int], int]) -> list:
    """Queue the task's new positions as offsets-store records; returns them for the result row."""
    name = json_codec.dumps(spec.connector).decode()
    out = []
    for (topic, partition), end in sorted(ends.items()):
        pos, offset = sink_position(topic, partition, end)
        key, topic = f"[{name},{partition_key(pos)}]".encode(), spec.offsets_store["topic"]
        producer.produce(topic, json_codec.dumps(offset), key, partition=keyed_partition(producer, topic, key))
        out.append((pos, offset))
    return out


def _result(task: int, records: int, skipped: int, offsets: list, txn_ms: float) -> Any:
    import json

    import pyarrow as pa
    return pa.RecordBatch.from_pylist(
        [{"task": task, "worker_id": worker_id(), "records": records,
          "offsets": json.dumps(offsets, separators=(",", ":")), "skipped": skipped, "txn_ms": txn_ms}],
        schema=pa.schema([("task", pa.int32()), ("worker_id", pa.string()), ("records", pa.int64()),
                          ("offsets", pa.string()), ("skipped", pa.int64()), ("txn_ms", pa.float64())]))


def copy_partition(spec: EosCopy, batches: Iterator[Any]) -> Iterator[Any]:
    """Executor: one connector task's rows of the micro-batch in one transaction with its positions."""
    from pyspark import TaskContext
    first = next((b for b in batches if b.num_rows), None)
    if first is None:
        return
    task = first.column("_task")[0].as_py()
    producer, floors, txn_s, started = None, spec.floors, 0.0, time.monotonic()
    records = skipped = 0
    ends: dict[tuple[str, int], int] = {}
    try:
        ctx = TaskContext.get()
        producer = transactional_producer(dict(spec.conf), task_transactional_id(spec.group_id, spec.connector, task),
                                          _CLIENT_LOG, TXN_TIMEOUT_S)
        if ctx is not None and ctx.attemptNumber() > 0:  # an earlier attempt may have committed: fenced now
            floors = committed_floors(spec.conf, spec.offsets_store, spec.connector)
        txn_s += time.monotonic() - started
        producer.begin_transaction()
        for batch in chain([first], batches):
            rows = _unwritten(batch, floors or {})
            skipped += batch.num_rows - rows.num_rows
            if rows.num_rows:
                _produce(producer, spec, rows)
                _positions(rows, ends)
                records += rows.num_rows
                hold(spec.connector, "copy-mid-write", spec.batch_id, task)
        offsets = _produce_positions(producer, spec, ends)
        hold(spec.connector, "copy-before-commit", spec.batch_id, task)
        committing = time.monotonic()
        commit_under_lease(producer, spec.lease, TXN_TIMEOUT_S)
        txn_s += time.monotonic() - committing
        hold(spec.connector, "copy-after-commit", spec.batch_id, task)
    except Exception as e:
        _abort(producer)
        raise_task_error(spec.connector, task, e)
    yield _result(task, records, skipped, offsets, txn_s * 1000)


def _abort(producer: Any) -> None:
    """Abort the open transaction of a failed task when the producer still can (a fenced one cannot)."""
    if producer is None:
        return
    try:
        producer.abort_transaction(TXN_TIMEOUT_S)
    except Exception as e:  # the task's own error is the one reported; the next init_transactions aborts
        log.warning("Aborting the transaction of a failed copy task failed: %s", e)


def plan_group_id(plan: QueryPlan) -> str:
    """The worker's ``group.id`` the plan carries (Connect's cluster id in transactional ids)."""
    return plan.group_id or "sparkcat-cluster"
