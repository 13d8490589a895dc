"""Reading a sink task's Kafka offset ranges on an executor (``shared_sink``), with pooled consumers.

A consumer per range would pay its connection and metadata (a third of a second) every batch, so consumers are
pooled per settings in each Python worker: one is taken out while a task reads (an abandoned slow task keeps
its own, ``shared_source.run_bounded``) and put back after, and a daemon thread closes those idle longer than
``IDLE_CLOSE_S``, so a worker holds no connection to a cluster it no longer reads.
"""

from __future__ import annotations

import threading
import time
from typing import Any

__all__ = ["read_ranges", "READ_TIMEOUT_S", "IDLE_CLOSE_S"]

#: How long a task may take to read its ranges (they exist: the driver listed them) before it fails.
READ_TIMEOUT_S = 60.0
#: A pooled consumer unused this long is closed.
IDLE_CLOSE_S = 30.0
_CONSUME_BATCH = 10_000
#: One poll's wait: a batch consume returns only when it is full or this is over, and a range's end is an event.
_POLL_S = 0.02

Key = tuple[tuple[str, str], ...]
#: cache: idle consumers per settings, each with when it was put back and the topics whose metadata it holds
_POOL: dict[Key, list[tuple[float, Any, set[str]]]] = {}
_POOL_LOCK = threading.Lock()
_REAPER: list[threading.Thread] = []


def _settings(settings: dict[str, Any]) -> dict[str, Any]:
    # fetch.wait.max.ms: the ranges exist, so a fetch the broker holds back only delays the partitions behind it
    return {"fetch.wait.max.ms": 10, **settings, "enable.auto.commit": False, "enable.partition.eof": True,
            "group.id": settings.get("group.id") or "sparkcat-shared-sinks",
            "isolation.level": settings.get("isolation.level", "read_committed")}


def _take(conf: dict[str, Any]) -> tuple[Key, Any, set[str]]:
    from confluent_kafka import Consumer
    key = tuple(sorted((k, str(v)) for k, v in conf.items()))
    with _POOL_LOCK:
        idle = _POOL.get(key)
        if idle:
            _, consumer, known = idle.pop()
            return key, consumer, known
        if not _REAPER:
            _REAPER.append(threading.Thread(target=_reap, name="sparkcat-consumer-reaper", daemon=True))
            _REAPER[0].start()
    return key, Consumer(conf), set()


def _give_back(key: Key, consumer: Any, known: set[str]) -> None:
    with _POOL_LOCK:
        _POOL.setdefault(key, []).append((time.monotonic(), consumer, known))


def _reap() -> None:
    while True:
        time.sleep(IDLE_CLOSE_S / 3)
        now, closing = time.monotonic(), []
        with _POOL_LOCK:
            for key, idle in _POOL.items():
                closing += [c for at, c, _ in idle if now - at > IDLE_CLOSE_S]
                idle[:] = [entry for entry in idle if now - entry[0] <= IDLE_CLOSE_S]
        for consumer in closing:
            consumer.close()


def read_ranges(settings: dict[str, Any], connector: str, task: int,
                ranges: list[tuple[str, int, int, int]]) -> Any:
    """The records of ``ranges`` (``(topic, partition, start, end)``, end exclusive) as Spark's Kafka rows (an
    Arrow batch with ``_task``), in offset order per partition. Raises when they cannot be read within
    ``READ_TIMEOUT_S``."""
    cols: dict[str, list[Any]] = {k: [] for k in ("topic", "partition", "offset", "timestamp", "key", "value",
                                                   "headers")}
    ends = {(t, p): end for t, p, start, end in ranges if end > start}
    if ends:
        key, consumer, known = _take(_settings(settings))
        try:
            _learn(consumer, {t for t, _ in ends} - known, known)
            _read(consumer, ranges, ends, cols, f"{connector}-{task}")
            consumer.unassign()
        except BaseException:  # a consumer in an unknown state is not pooled again
            consumer.close()
            raise
        _give_back(key, consumer, known)
    return _rows(task, cols)


def _learn(consumer: Any, topics: set[str], known: set[str]) -> None:
    """Ask each topic's metadata before its first assign: librdkafka's fetcher otherwise backs off until it has
    learned the new topic's leaders, about a second per topic (measured on the test broker: 1.0 s against 25 ms),
    and a shared sink's first batch reads each member's topics in turn."""
    for topic in sorted(topics):
        consumer.list_topics(topic, timeout=READ_TIMEOUT_S)
        known.add(topic)


def _read(consumer: Any, ranges: list[tuple[str, int, int, int]], ends: dict[tuple[str, int], int],
          cols: dict[str, list[Any]], who: str) -> None:
    from confluent_kafka import KafkaError, TopicPartition
    consumer.assign([TopicPartition(t, p, start) for t, p, start, end in ranges if end > start])
    deadline = time.monotonic() + READ_TIMEOUT_S
    while ends:
        if time.monotonic() > deadline:
            raise TimeoutError(f"reading {sorted(ends)} for task {who} took over {READ_TIMEOUT_S:.0f} s")
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
