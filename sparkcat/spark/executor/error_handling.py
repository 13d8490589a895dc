"""Bad records on executors: Connect's ``errors.tolerance``, error log and dead letter queue.

Runs in Spark's Python workers, one ``RecordErrors`` per Spark task (it holds a producer), built there from
the pickled ``QueryPlan`` (``record_errors``).

Kafka Connect's ``RetryWithToleranceOperator`` with its ``LogReporter`` and
``DeadLetterQueueReporter``, for the stages sparkcat runs per record in Python: the key and
value converters (``KEY_CONVERTER``, ``VALUE_CONVERTER``). Connect tolerates any exception in
converters and transforms and only ``RetriableException`` elsewhere; sparkcat's transforms are
projections of the whole batch (a connector's records whose transforms fail are found by the driver after
the batch failed, ``spark.driver.transform_errors`` for a sink and ``source_transform_errors`` for a source,
and reported here as stage ``TRANSFORMATION``),
it has no header converters, and a sink task's ``put`` or ``flush`` failing fails its task, as in
Connect. So ``RecordErrors.failed`` is called for conversion failures, and for a source record
Kafka refused (Connect's ``KAFKA_PRODUCE`` stage, ``source_sends``) with ``errors.tolerance=all``:

1. report: one ERROR log line (``errors.log.enable``; the consumed record's coordinates, or the
   source record, with ``errors.log.include.messages``), then the dead letter queue
   (``errors.deadletterqueue.topic.name``), as Connect reports before it decides;
2. with ``errors.tolerance=all`` the record is skipped (its offset still counts as consumed);
   with ``none`` the task fails with ``ToleranceExceededError`` naming the record's coordinates
   (topic, partition, offset for a consumed record; source partition and offset for a source
   record), where Connect's task trace says only "Tolerance exceeded in error handler".

A source connector's bad records go to the dead letter queue too (a sparkcat extension; Connect
gives source connectors the error log only), keyed and valued with the JSON (schemas off) of the
record's key and value, without the topic/partition/offset headers.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from sparkcat.config.connector import connector_settings
from sparkcat.errors import ConnectorError
from sparkcat.kafka.dead_letter_queue import DeadLetterQueue, ErrorOrigin
from sparkcat.model.error_metrics import ErrorCounts
from sparkcat.spark.query_plan import QueryPlan, task_failure_message

__all__ = ["ErrorSettings", "ConsumedRecord", "SourceRow", "RecordErrors", "LogReporter",
           "ToleranceExceededError", "KEY_CONVERTER", "VALUE_CONVERTER", "class_name", "tolerance_message",
           "record_errors", "convert_source_batch", "without_rows", "source_row", "keys_of"]

log = logging.getLogger(__name__)

KEY_CONVERTER, VALUE_CONVERTER = "KEY_CONVERTER", "VALUE_CONVERTER"
_TIMESTAMP_TYPES = {0: "CreateTime", 1: "LogAppendTime"}


class ToleranceExceededError(ConnectorError):
    """A record failed with ``errors.tolerance=none``: its task fails (Connect's "Tolerance exceeded")."""


@dataclass(frozen=True)
class ErrorSettings:
    """A connector's error handling keys (``errors.*``), from its ``ConnectorSettings``."""

    tolerance_all: bool = False
    log_enable: bool = False
    log_include_messages: bool = False
    dlq_topic: str = ""
    dlq_replication_factor: int = 3
    dlq_context_headers: bool = False

    @classmethod
    def of(cls, config: dict[str, Any]) -> ErrorSettings:
        """The settings of a (validated, placeholder-resolved) connector config, as the framework parses them."""
        s = connector_settings(config)
        return cls(s.tolerate_all, s.log_errors, s.log_error_messages, s.dlq_topic, s.dlq_replication_factor,
                   s.dlq_context_headers)


def class_name(obj: Any) -> str:
    """The ``module:Class`` path of an object's class (Connect names the Java class)."""
    cls = type(obj)
    return f"{cls.__module__}:{cls.__qualname__}"


def _millis(stamp: Any) -> int | None:
    """A Kafka timestamp (ms or a datetime from Spark's ``timestamp`` column) in ms; None when absent."""
    if stamp is None:
        return None
    if hasattr(stamp, "timestamp"):
        return int(stamp.timestamp() * 1000)
    return int(stamp) if int(stamp) >= 0 else None


@dataclass
class ConsumedRecord:
    """A sink connector's record as read from Kafka, bytes untouched: what goes to the dead letter queue."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)
    timestamp: Any = None
    timestamp_type: int | None = None

    def coordinates(self) -> str:
        """Connect's ``where consumed record is {topic='t', partition=0, offset=5, timestamp=..., timestampType=...}``.

        Connect names the timestamp type too; sparkcat's sink input has no ``timestampType`` column.
        """
        text = f"{{topic='{self.topic}', partition={self.partition}, offset={self.offset}"
        ms = _millis(self.timestamp)
        if ms is not None:  # the type when the rows carry it (sparkcat's sink input has the timestamp only)
            text += f", timestamp={ms}" + (f", timestampType={_TIMESTAMP_TYPES[self.timestamp_type]}"
                                           if self.timestamp_type in _TIMESTAMP_TYPES else "")
        return f", where consumed record is {text}}}"

    details = coordinates  # Connect logs a consumed record's coordinates, never its key or value

    def dead_letter(self) -> tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]], int | None]:
        return self.key, self.value, list(self.headers), _millis(self.timestamp)


@dataclass
class SourceRow:
    """A source connector's record (a row of its query) that could not be converted to Kafka bytes."""

    source_partition: str          # the partition key: compact JSON of the source partition
    source_offset: str             # JSON of the source offset
    topic: str | None
    key: Any
    value: Any
    timestamp_ms: int | None = None

    def coordinates(self) -> str:
        return (f", where source record is {{sourcePartition={self.source_partition}, "
                f"sourceOffset={self.source_offset}, topic='{self.topic}'}}")

    def details(self) -> str:
        """Connect's ``where source record is = SourceRecord{...} ConnectRecord{...}``, key and value included."""
        return (f", where source record is = SourceRecord{{sourcePartition={self.source_partition}, "
                f"sourceOffset={self.source_offset}}} ConnectRecord{{topic='{self.topic}', key={self.key!r}, "
                f"value={self.value!r}, timestamp={self.timestamp_ms}}}")

    def dead_letter(self) -> tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]], int | None]:
        return _json_bytes(self.key), _json_bytes(self.value), [], self.timestamp_ms or None


def _json_bytes(value: Any) -> bytes | None:
    """JsonConverter (schemas off) bytes of a source record's key or value; its text if even JSON fails."""
    from sparkcat.api.records import record_text
    from sparkcat.converters import JsonConverter
    converter = JsonConverter()
    converter.configure({"schemas.enable": "false"}, False)
    try:
        return converter.to_bytes(value, None)
    except Exception:
        return None if value is None else record_text(value).encode("utf-8")


def _context(origin: ErrorOrigin, details: str) -> str:
    return f"Executing stage '{origin.stage}' with class '{origin.class_name}'{details}."


def tolerance_message(origin: ErrorOrigin, record: ConsumedRecord | SourceRow) -> str:
    """The task failure of a record failing with ``errors.tolerance=none``, naming the record's coordinates.

    It names the task too (``task_failure_message``) when the connector is known.
    """
    cause = origin.error
    text = (f"Tolerance exceeded in error handler. {_context(origin, record.coordinates())}"
            f" Caused by: {type(cause).__name__}: {cause}")
    return task_failure_message(origin.connector, origin.task, ToleranceExceededError(text)) if origin.connector \
        else text


class LogReporter:
    """Connect's LogReporter: one ERROR line per failure, with the exception; the record only if asked."""

    def __init__(self, include_messages: bool, logger: logging.Logger | None = None) -> None:
        self.include_messages = include_messages
        self.log = logger or log

    def message(self, origin: ErrorOrigin, record: ConsumedRecord | SourceRow) -> str:
        details = record.details() if self.include_messages else ""
        return f"Error encountered in task {origin.connector}-{origin.task}. {_context(origin, details)}"

    def report(self, origin: ErrorOrigin, record: ConsumedRecord | SourceRow) -> None:
        self.log.error(self.message(origin, record), exc_info=origin.error)


class RecordErrors:
    """The tolerance operator of one Spark task: reports each failed record, then skips it or fails the task.

    ``producer_conf``: the dead letter queue's producer settings (the connector's producer, as in
    Connect). ``dlq`` may be given instead (tests). ``counts``: Connect's error handling metrics of
    each connector task seen here (``ErrorCounts``), sent back with the batch's result.
    """

    def __init__(self, connector: str, settings: ErrorSettings, producer_conf: dict[str, str] | None = None,
                 dlq: DeadLetterQueue | None = None, logger: logging.Logger | None = None,
                 producer: Any = None) -> None:
        self.connector, self.settings = connector, settings
        self.reporter = LogReporter(settings.log_include_messages, logger) if settings.log_enable else None
        if dlq is None and settings.dlq_topic and producer_conf is not None:
            dlq = DeadLetterQueue(settings.dlq_topic, producer_conf, settings.dlq_context_headers, producer=producer)
        self.dlq = dlq
        self.skipped = 0
        self.counts: dict[int, ErrorCounts] = {}

    @classmethod
    def none(cls, connector: str = "") -> RecordErrors:
        """Connect's defaults: nothing logged, no dead letter queue, the first bad record fails its task.

        Without ``connector`` the failure does not name its task; the caller's ``raise_task_error`` does.
        """
        return cls(connector, ErrorSettings())

    def failed(self, task: int, stage: str, executing: Any, error: BaseException,
               record: ConsumedRecord | SourceRow) -> None:
        """``record`` failed in ``stage`` of ``executing``: report it, then return (skip it) or raise.

        Counted as Connect's ``RetryWithToleranceOperator`` counts a failed conversion: one failure and
        one error, a logged error and a dead letter when reported so, and a skipped record when tolerated.
        """
        executing_class = executing if isinstance(executing, str) else class_name(executing)  # str: named already
        origin = ErrorOrigin(self.connector, task, stage, executing_class, error,
                             *((record.topic, record.partition, record.offset)
                               if isinstance(record, ConsumedRecord) else ()))
        counts = self.counts.setdefault(task, ErrorCounts())
        counts.record_failures += 1
        counts.record_errors += 1
        counts.last_error_ms = int(time.time() * 1000)
        if self.reporter is not None:
            self.reporter.report(origin, record)
            counts.errors_logged += 1
        if self.dlq is not None:
            self.dlq.send(origin, *record.dead_letter())
            counts.dlq_produce_requests += 1
        if not self.settings.tolerance_all:
            if self.dlq is not None:
                self.dlq.flush()  # as Connect: the record is in the dead letter queue before the task fails
            raise ToleranceExceededError(tolerance_message(origin, record)) from error
        self.skipped += 1
        counts.records_skipped += 1

    def flush(self) -> None:
        """Wait for the dead letters of this Spark task (before its batch reports offsets)."""
        if self.dlq is not None:
            self.dlq.flush()


def record_errors(plan: QueryPlan, producer_conf: dict[str, str], producer: Any = None) -> RecordErrors:
    """The error handling of one Spark task of ``plan`` (executor side; placeholders resolved here).

    Dead letters go through the process's cached producer of ``producer_conf``, or through
    ``producer`` when given (a transactional producer: they then commit or abort with its records).
    """
    from sparkcat.policy.input_policy import prepare
    return RecordErrors(plan.connector, ErrorSettings.of(prepare(plan.connector_config)), producer_conf,
                        producer=producer)


def source_row(cols: dict[str, list[Any]], i: int, key: Any, value: Any) -> SourceRow:
    """Row ``i`` of a connector source's columns (``_partition``, ``_offset``, ``topic``, ``timestamp_ms``)."""
    return SourceRow(cols["_partition"][i], cols["_offset"][i], cols["topic"][i], key, value,
                     cols["timestamp_ms"][i])


def keys_of(json_keys: list[str | None]) -> list[Any]:
    """A connector source's ``key`` column (JSON texts) as Python values."""
    return [None if k is None else json.loads(k) for k in json_keys]


def convert_source_batch(batch: Any, value_type: Any, convs: tuple[Any, Any], errors: RecordErrors,
                         key_type: Any = None) -> tuple[list[Any], list[Any], list[int]]:
    """Keys and values of one Arrow batch of a connector source's rows as Kafka bytes, and the rows skipped.

    Whole columns first (``kafka_serialisation.column_bytes``, vectorised); only if that raises is
    the batch converted again row by row, key then value as in Connect, to find the records that
    fail: each goes to ``errors`` (which raises with ``errors.tolerance=none``). The keys and
    values returned leave the skipped rows out. A converter whose bytes depend on the record's
    topic (AvroConverter: its subject) goes row by row at once, told each row's topic. ``key_type``:
    the keys' type when the chain gave them a schema (``kafka_serialisation.key_type_of``), else None.
    """
    from sparkcat.converters import at_topic, topic_aware
    key_conv, value_conv = convs
    if not (topic_aware(key_conv) or topic_aware(value_conv)):
        converted = _whole_columns(batch, value_type, convs, key_type)
        if converted is not None:
            return converted
    col, index = batch.column, batch.schema.get_field_index
    cols = {n: col(index(n)).to_pylist() for n in ("_task", "_partition", "_offset", "topic", "timestamp_ms")}
    raw_values = col(index("value")).to_pylist(maps_as_pydicts="lossy")
    keys: list[Any] = []
    values = []
    skipped: list[int] = []
    for i, (key, value) in enumerate(zip(keys_of(col(index("key")).to_pylist()), raw_values)):
        stage, conv, topic = KEY_CONVERTER, key_conv, cols["topic"][i]
        try:
            key_bytes = None if key is None else at_topic(key_conv, topic).to_bytes(key, key_type)
            stage, conv = VALUE_CONVERTER, value_conv
            value_bytes = at_topic(value_conv, topic).to_bytes(value, value_type)
        except Exception as e:
            errors.failed(cols["_task"][i], stage, conv, e, source_row(cols, i, key, value))
            skipped.append(i)
            continue
        keys.append(key_bytes)
        values.append(value_bytes)
    return keys, values, skipped


def _whole_columns(batch: Any, value_type: Any, convs: tuple[Any, Any],
                   key_type: Any = None) -> tuple[list[Any], list[Any], list[int]] | None:
    """The batch's keys and values converted column-wise, or None when a record failed (find it row by row)."""
    from sparkcat.spark.executor.kafka_serialisation import column_bytes
    col, index = batch.column, batch.schema.get_field_index
    key_conv, value_conv = convs
    try:
        values = column_bytes(col(index("value")), value_type, value_conv)
        return column_bytes(col(index("key")), key_type, key_conv, json_keys=True), values, []
    except Exception:
        log.debug("A batch of connector source rows failed conversion; converting it row by row", exc_info=True)
        return None


def without_rows(values: Any, skipped: list[int]) -> Any:
    """``values`` (a list, or one value standing for every row) without the rows ``skipped``."""
    if not skipped or not isinstance(values, list):
        return values
    drop = set(skipped)
    return [v for i, v in enumerate(values) if i not in drop]
