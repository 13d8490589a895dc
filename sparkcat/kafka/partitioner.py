"""Kafka's Java default partitioner for keyed records: murmur2 of the key bytes, made positive, mod partitions.

Kafka Connect's producers write its offsets and status topics with this partitioner; sparkcat
writes a record with the same key to the same partition, so per-key order holds between the two
runtimes (a reader keeps the last record per key, which is only defined within one partition).
It is librdkafka's ``murmur2_random`` for non-null keys; computing it here lets a writer pick the
partition itself whatever partitioner its producer was configured with.
"""

from __future__ import annotations

import threading
from typing import Any

_M = 0x5BD1E995
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2`` (seed 0x9747b28c) as a signed 32-bit int.

    >>> murmur2(b"21"), murmur2(b"foobar")
    (-973932308, -790332482)
    """
    length = len(data)
    h = (0x9747B28C ^ length) & _MASK
    whole = length & ~3
    for i in range(0, whole, 4):
        k = data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24)
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    rest = length & 3
    if rest == 3:
        h ^= data[whole + 2] << 16
    if rest >= 2:
        h ^= data[whole + 1] << 8
    if rest >= 1:
        h ^= data[whole]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for(key: bytes, partitions: int) -> int:
    """The partition Java's default partitioner gives a record with ``key`` (``toPositive(murmur2) % n``)."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions


_COUNTS: dict[str, int] = {}
_COUNTS_LOCK = threading.Lock()


def partition_count(client: Any, topic: str, timeout_s: float = 30.0) -> int:
    """The partition count of ``topic`` from a producer's or admin client's metadata, cached per process.

    Internal topics never shrink and sparkcat never grows them, so the first answer stays right.
    """
    with _COUNTS_LOCK:
        known = _COUNTS.get(topic)
    if known is not None:
        return known
    meta = client.list_topics(topic, timeout=timeout_s).topics.get(topic)
    if meta is None or meta.error is not None or not meta.partitions:
        raise LookupError(f"no metadata for topic {topic!r}: {meta.error if meta is not None else 'unknown topic'}")
    with _COUNTS_LOCK:
        _COUNTS[topic] = len(meta.partitions)
    return len(meta.partitions)


def keyed_partition(client: Any, topic: str, key: bytes) -> int:
    """The partition of ``topic`` that Java's default partitioner picks for ``key``."""
    return partition_for(key, partition_count(client, topic))
