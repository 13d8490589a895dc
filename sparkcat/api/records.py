"""Records exchanged between tasks and the runtime: what a source produces, what a sink receives."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass
class SourceRecord:
    """One record produced by ``SourceTask.poll``.

    ``source_partition`` and ``source_offset`` are small JSON-able dicts, exactly as
    in Kafka Connect; the runtime stores the last offset per partition in the
    offsets store. ``value`` is a Python value matching the task's ``value_schema``
    (a dict for a struct, a str for a string schema). ``topic`` may be None when the
    records go to a sink named by the connector's ``sink.*`` keys.

    >>> record = SourceRecord({"increment": 1}, {"position": 3}, "seq_1", value={"position": 3, "value": 3})
    >>> record.topic, record.source_offset, record.key, record.headers
    ('seq_1', {'position': 3}, None, [])
    """

    source_partition: dict[str, Any]
    source_offset: dict[str, Any]
    topic: str | None
    value: Any = None
    key: Any = None
    kafka_partition: int | None = None
    timestamp_ms: int | None = None
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)


@dataclass
class SinkRecord:
    """One record handed to ``SinkTask.put``, with its Kafka position (topic, partition, offset).

    ``key`` and ``value`` are already converted by the connector's converters (for
    the JSON converter: parsed JSON; for String: str; for ByteArray: bytes), then through the
    connector's ``transforms``. ``original_topic``, ``original_kafka_partition`` and
    ``original_kafka_offset`` are where the record was in Kafka whatever a transform did to
    ``topic`` (Connect's ``originalTopic()`` etc., KIP-793); they default to the record's own.

    >>> SinkRecord("orders", 0, 7).original_topic, SinkRecord("t2", 0, 7, original_topic="t").original_topic
    ('orders', 't')
    """

    topic: str
    kafka_partition: int
    kafka_offset: int
    value: Any = None
    key: Any = None
    timestamp_ms: int | None = None
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)
    original_topic: str | None = None
    original_kafka_partition: int | None = None
    original_kafka_offset: int | None = None

    def __post_init__(self) -> None:
        if self.original_topic is None:
            self.original_topic = self.topic
        if self.original_kafka_partition is None:
            self.original_kafka_partition = self.kafka_partition
        if self.original_kafka_offset is None:
            self.original_kafka_offset = self.kafka_offset


def record_text(value: Any) -> str:
    """A record key or value as text: compact JSON for dicts, lists and Spark Rows; ``true``/``false``; ``null``.

    What a text sink writes and what Connect's StringConverter sends for a value that is not
    already text. Bytes are decoded as UTF-8 (bad bytes replaced).

    >>> record_text({"id": 1, "ok": True}), record_text(False), record_text(None), record_text(b"hi")
    ('{"id":1,"ok":true}', 'false', 'null', 'hi')
    """
    if isinstance(value, str):
        return value
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8", errors="replace")
    if hasattr(value, "asDict"):  # a Spark Row, without importing pyspark
        value = value.asDict(recursive=True)
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)
    return str(value)
