"""Many sink connectors' tasks in one Spark job: each ``(connector, task)``'s Kafka ranges read and put.

The ``mapInArrow`` function of a shared sink query (``sparkcat.spark.driver.shared_sinks``). Every row of the
batch holds several sink tasks' ``SinkPart``s (the offset ranges of the topic-partitions each owns this batch),
put in turn. A task's records are read here with a confluent-kafka consumer (``read_committed``, assigned, no group) and put into the
connector's task exactly as a query of its own would (``sink_tasks.put_kafka_rows``: converters, the dead letter
queue, ``put``/``flush``). The task reports the end of each range as its position, so commit markers and aborted
records at a range's end are not read again. A task that fails reports its trace in a ``failure`` row instead of
failing the Spark job (``shared_source``'s rows).
"""

from __future__ import annotations

import pickle
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from sparkcat.api.task_context import SinkTaskContext
from sparkcat.spark.executor.batch_results import result_batch, Tally
from sparkcat.spark.executor.shared_source import failure_row, labelled
from sparkcat.spark.executor.sink_tasks import put_kafka_rows
from sparkcat.spark.query_plan import QueryPlan, sink_position, tp_key

__all__ = ["SinkPart", "SinkWrite", "put_members", "read_ranges", "READ_TIMEOUT_S"]

#: How long a task may take to read its ranges (they exist: the driver listed them) before it fails.
READ_TIMEOUT_S = 60.0
_CONSUME_BATCH = 10_000
#: One poll's wait: a batch consume returns only when it is full or this is over, and a range's end is an event.
_POLL_S = 0.02


@dataclass
class SinkPart:
    """One sink task's share of a batch: ``(topic, partition, start, end)`` ranges, end exclusive."""

    connector: str
    task: int
    ranges: list[tuple[str, int, int, int]]


@dataclass
class SinkWrite:
    """What the executors need to put one member connector's share of a batch (pickled with the function)."""

    plan: QueryPlan
    consumer: dict[str, Any]            # confluent-kafka settings: the worker's and consumer.override.*
    contexts: Callable[[int], SinkTaskContext]
    raw: bool                           # the task takes the bytes in Kafka (``wants_raw_bytes``)
    dlq_producer: dict[str, str]


def put_members(writes: dict[str, SinkWrite], sink_batch: int, batches: Iterator[Any]) -> Iterator[Any]:
    """Executor: each ``(task, payload)`` row's ranges read and put; rows of connectors not in ``writes`` (they
    left the query after the batch was planned) are skipped: they restart from their stored offsets."""
    for batch in batches:
        for payload in batch.column(batch.schema.get_field_index("payload")).to_pylist():
            parts: list[SinkPart] = pickle.loads(payload)  # several connectors' tasks, put in turn
            for part in parts:
                write = writes.get(part.connector)
                if write is not None:
                    yield from _put_task(write, part, sink_batch)


def _put_task(write: SinkWrite, part: SinkPart, sink_batch: int) -> Iterator[Any]:
    began = time.monotonic()
    try:
        rows = read_ranges(write.consumer, part)
        out = list(put_kafka_rows(write.plan, sink_batch, write.contexts, write.raw, None, write.dlq_producer,
                                  iter([rows])))
        out = [_at_range_ends(r, part) for r in out] or [_positions_only(part)]
    except Exception:  # the connector's task failed: reported, not raised (the other connectors commit)
        yield failure_row(part.connector, part.task, traceback.format_exc(), _ms_since(began))
        return
    elapsed = _ms_since(began)
    for result in out:
        yield labelled(result, part.connector, elapsed)


def _ms_since(began: float) -> float:
    return (time.monotonic() - began) * 1000


def _ends_json(part: SinkPart) -> str:
    import json
    return json.dumps([sink_position(t, p, end) for t, p, _, end in part.ranges], separators=(",", ":"))


def _at_range_ends(result: Any, part: SinkPart) -> Any:
    """The task's result row with its position at the end of every range it was given."""
    import pyarrow as pa
    i = result.schema.get_field_index("offsets")
    column = pa.array([_ends_json(part)] * result.num_rows, pa.string())
    return result.set_column(i, "offsets", column)


def _positions_only(part: SinkPart) -> Any:
    """A task whose ranges held no record (commit markers, aborted records) still moves on."""
    tally = Tally()
    for t, p, _, end in part.ranges:
        tally.offsets[tp_key(t, p)] = sink_position(t, p, end)
    return result_batch({part.task: tally})


# ---------------------------------------------------------------- reading the ranges

_CONSUMERS: dict[tuple[tuple[str, str], ...], Any] = {}  # cache: one consumer per settings in a Python worker


def _consumer(settings: dict[str, Any]) -> Any:
    from confluent_kafka import Consumer
    # fetch.wait.max.ms: the ranges exist, so a fetch the broker holds back only delays the partitions behind it
    conf = {"fetch.wait.max.ms": 10, **settings, "enable.auto.commit": False, "enable.partition.eof": True,
            "group.id": settings.get("group.id") or "sparkcat-shared-sinks",
            "isolation.level": settings.get("isolation.level", "read_committed")}
    key = tuple(sorted((k, str(v)) for k, v in conf.items()))
    consumer = _CONSUMERS.get(key)
    if consumer is None:
        consumer = _CONSUMERS[key] = Consumer(conf)
    return consumer


def read_ranges(settings: dict[str, Any], part: SinkPart) -> Any:
    """The records of ``part``'s ranges as Spark's Kafka rows (an Arrow batch with ``_task``), in offset order
    per partition. Raises when the ranges cannot be read within ``READ_TIMEOUT_S``."""
    from confluent_kafka import KafkaError, TopicPartition
    consumer = _consumer(settings)
    ends = {(t, p): end for t, p, start, end in part.ranges if end > start}
    cols: dict[str, list[Any]] = {k: [] for k in ("topic", "partition", "offset", "timestamp", "key", "value",
                                                   "headers")}
    if not ends:
        return _rows(part.task, cols)
    consumer.assign([TopicPartition(t, p, start) for t, p, start, end in part.ranges if end > start])
    deadline = time.monotonic() + READ_TIMEOUT_S
    try:
        while ends:
            if time.monotonic() > deadline:
                raise TimeoutError(f"reading {sorted(ends)} for task {part.connector}-{part.task} took over "
                                   f"{READ_TIMEOUT_S:.0f} s")
            for msg in consumer.consume(_CONSUME_BATCH, _POLL_S):
                tp = (msg.topic(), msg.partition())
                if msg.error() is not None and msg.error().code() != KafkaError._PARTITION_EOF:
                    raise RuntimeError(f"reading {tp[0]}-{tp[1]}: {msg.error()}")
                if tp not in ends:
                    continue
                # An end-of-partition event's offset is where the fetch stands: past commit markers and aborted
                # records, which are never delivered (librdkafka's position stays after the last record).
                reached = msg.offset() if msg.error() is not None else msg.offset() + 1
                if msg.error() is None and msg.offset() < ends[tp]:
                    _append(cols, msg)
                if reached >= ends[tp]:
                    del ends[tp]
    finally:
        consumer.unassign()
    return _rows(part.task, cols)


def _append(cols: dict[str, list[Any]], msg: Any) -> None:
    cols["topic"].append(msg.topic())
    cols["partition"].append(msg.partition())
    cols["offset"].append(msg.offset())
    cols["timestamp"].append(msg.timestamp()[1])
    cols["key"].append(msg.key())
    cols["value"].append(msg.value())
    headers = msg.headers()
    cols["headers"].append(None if headers is None else [{"key": k, "value": v} for k, v in headers])


def _rows(task: int, cols: dict[str, list[Any]]) -> Any:
    import pyarrow as pa
    header = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
    n = len(cols["offset"])
    return pa.RecordBatch.from_arrays([
        pa.array([task] * n, pa.int32()), pa.array(cols["topic"], pa.string()),
        pa.array(cols["partition"], pa.int32()), pa.array(cols["offset"], pa.int64()),
        pa.array(cols["timestamp"], pa.int64()), pa.array(cols["key"], pa.binary()),
        pa.array(cols["value"], pa.binary()), pa.array(cols["headers"], header),
    ], names=["_task", "topic", "partition", "offset", "timestamp", "key", "value", "headers"])
