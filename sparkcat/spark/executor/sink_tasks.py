"""Sink tasks hosted on executors: ``put_source_rows`` and ``put_kafka_rows`` drive ``SinkTask``s (``put``/``flush``).

They run in Spark's Python workers as the ``mapInArrow`` functions of the driver's ``to_sink_task`` (a source
connector's records into the sink its ``sink.*`` keys name, skipping Kafka) and ``from_kafka_to_sink_task``
(a sink connector's Kafka records, routed to their tasks) handlers (``sparkcat.spark.driver.handlers``);
everything they need comes in the pickled ``QueryPlan``.

Each Spark partition starts the sink tasks its rows belong to (one instance per task and batch),
puts their records in chunks, flushes, stops them, and reports per task. Sink tasks that define
``initialize(context)`` get a ``SinkTaskContext`` (the worker's Kafka) before ``start``, as
Connect's ``SinkTask.initialize``. A sink task class with ``wants_raw_bytes = True`` gets keys
and values as the bytes in Kafka, whatever converters the connector config names. Sink tasks get
``sink_batch_id(...)`` (``driver.batch_reports``), not Spark's raw batch id. A sink connector with
``transforms`` has its batch decoded and transformed in Spark first (``sink_chain``, by the handler); its
records keep their original Kafka coordinates for positions.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from typing import Any

from sparkcat.api.records import SinkRecord
from sparkcat.plugins import load_class
from sparkcat.policy.input_policy import prepare
from sparkcat.spark.executor.batch_results import Tallies, columns, raise_task_error, result_batch
from sparkcat.api.task_context import SinkTaskContext
from sparkcat.converters import at_topic, converter_for
from sparkcat.spark.executor.error_handling import KEY_CONVERTER, VALUE_CONVERTER, ConsumedRecord, RecordErrors, record_errors
from sparkcat.spark.executor.sink_chain import transformed_records
from sparkcat.spark.executor.sink_decode import Side
from sparkcat.spark.query_plan import QueryPlan, sink_position, tp_key
from sparkcat.transforms import KEEP

__all__ = ["put_source_rows", "put_kafka_rows", "task_contexts", "wants_raw_bytes", "start_sink_task", "PUT_CHUNK"]

log = logging.getLogger(__name__)

PUT_CHUNK = 5_000
RecordsOf = Callable[[dict[str, list[Any]], Tallies], dict[int, list[SinkRecord]]]


def start_sink_task(task_class: str, config: dict[str, str], context: SinkTaskContext | None) -> Any:
    """A new sink task, given its context first (Connect's ``SinkTask.initialize``) when it asks for one, started."""
    task = load_class(task_class)()
    initialize = getattr(task, "initialize", None)
    if initialize is not None and context is not None:
        initialize(context)
    task.start(prepare(config))  # placeholders resolved and paths checked here, where the task starts
    return task


class _SinkTasks:
    """The sink tasks one Spark partition drives in one micro-batch, started on their first record."""

    def __init__(self, connector: str, task_class: str, configs: list[dict[str, str]], batch_id: int,
                 context_of: Callable[[int], SinkTaskContext] | None = None) -> None:
        self.connector, self.task_class, self.configs, self.batch_id = connector, task_class, configs, batch_id
        self.context_of = context_of
        self.tasks: dict[int, Any] = {}
        self.active: dict[int, bool] = {}
        self.blame: dict[int, int] = {}  # sink task -> the (source) task whose rows it took first

    def put(self, sink_id: int, blame: int, records: list[SinkRecord]) -> None:
        """Start ``sink_id`` (and ``begin_batch``) if needed, then put the records unless the batch is skipped."""
        try:
            if sink_id not in self.tasks:
                self._start(sink_id, blame)
            if self.active[sink_id]:
                self.tasks[sink_id].put(records)
        except Exception as e:
            raise_task_error(self.connector, blame, e)

    def _start(self, sink_id: int, blame: int) -> None:
        self.blame[sink_id] = blame
        context = self.context_of(sink_id) if self.context_of is not None else None
        task = start_sink_task(self.task_class, self.configs[sink_id], context)
        self.tasks[sink_id] = task
        self.active[sink_id] = False  # until begin_batch says otherwise
        begin = getattr(task, "begin_batch", None)
        self.active[sink_id] = True if begin is None else bool(begin(self.batch_id))

    def flush(self) -> None:
        """Flush every started sink task that did not skip the batch."""
        for sink_id, task in self.tasks.items():
            try:
                if self.active[sink_id]:
                    task.flush(self.batch_id)
            except Exception as e:
                raise_task_error(self.connector, self.blame[sink_id], e)

    def stop(self) -> None:
        for sink_id, task in self.tasks.items():
            try:
                task.stop()
            except Exception:
                log.warning("Stopping sink task %s-%d failed", self.connector, sink_id, exc_info=True)


def _drive_sinks(connector: str, sinks: _SinkTasks, batches: Iterator[Any], records_of: RecordsOf,
                 sink_of: Callable[[int], int], decode: bool, errors: RecordErrors | None = None) -> Iterator[Any]:
    """Executor: put each Arrow batch's records into the sink task of their task, flush, report per task.

    ``errors``: its dead letters are flushed with the sinks, before the batch reports its offsets.
    """
    tallies = Tallies()
    try:
        for batch in batches:
            for task, records in records_of(columns(batch), tallies).items():
                for lo in range(0, len(records), PUT_CHUNK):
                    sinks.put(sink_of(task), task, records[lo:lo + PUT_CHUNK])
        sinks.flush()
        if errors is not None:
            errors.flush()
    except Exception as e:
        raise_task_error(connector, tallies.current, e)
    finally:
        sinks.stop()
    if tallies:
        yield result_batch({t: tally.decoded() if decode else tally for t, tally in tallies.items()},
                           None if errors is None else errors.counts)


def _source_records(connector: str) -> RecordsOf:
    """SinkRecords from a source connector's rows: partition = task id, offset = index in the batch."""
    def records_of(cols: dict[str, list[Any]], tallies: Tallies) -> dict[int, list[SinkRecord]]:
        groups: dict[int, list[SinkRecord]] = {}
        keep, headers = cols.get(KEEP), cols.get("headers")
        for i, task in enumerate(cols["_task"]):
            tally = tallies.of(task)
            if keep is not None and keep[i] is False:  # dropped by a Filter transform: its offset still counts
                tally.offsets[cols["_partition"][i]] = (cols["_partition"][i], cols["_offset"][i])
                groups.setdefault(task, [])
                continue
            raw_key = cols["key"][i]
            groups.setdefault(task, []).append(SinkRecord(
                topic=cols["topic"][i] or connector, kafka_partition=task, kafka_offset=tally.records,
                value=cols["value"][i], key=None if raw_key is None else json.loads(raw_key),
                timestamp_ms=cols["timestamp_ms"][i],
                headers=[] if headers is None or headers[i] is None else [(e["key"], e["value"]) for e in headers[i]]))
            tally.add(cols["_partition"][i], cols["_partition"][i], cols["_offset"][i])
        return groups
    return records_of


def _headers(values: list[Any]) -> list[list[tuple[str, bytes | None]]]:
    """Spark's ``headers`` column (lists of {key, value} structs, or null) as lists of (key, value) pairs."""
    return [[] if h is None else [(e["key"], e["value"]) for e in h] for h in values]


def _consumed(cols: dict[str, list[Any]], headers: list[Any], i: int) -> ConsumedRecord:
    """Row ``i`` of the Kafka source's columns as the record it was in Kafka (for error reports)."""
    types = cols.get("timestampType")
    return ConsumedRecord(cols["topic"][i], cols["partition"][i], cols["offset"][i], cols["key"][i],
                          cols["value"][i], headers[i], cols["timestamp"][i], types[i] if types else None)


def _kafka_records(config: dict[str, str], raw: bool, errors: RecordErrors) -> RecordsOf:
    """SinkRecords from the Kafka source's rows, key and value through the connector's converters.

    ``raw``: keys and values stay the bytes they are in Kafka (ByteArrayConverter), whatever the config says.
    The tally of each task gets its record count and, per Kafka partition, the next offset to read.
    A record whose key or value fails conversion goes to ``errors`` (Connect's KEY_CONVERTER and
    VALUE_CONVERTER stages): skipped, its offset still consumed, or its task fails.
    """
    key_conv, value_conv = (None, None) if raw else (converter_for(config, True), converter_for(config, False))

    def records_of(cols: dict[str, list[Any]], tallies: Tallies) -> dict[int, list[SinkRecord]]:
        groups: dict[int, list[SinkRecord]] = {}
        tasks, topics, parts, offsets = cols["_task"], cols["topic"], cols["partition"], cols["offset"]
        keys, values, stamps = cols["key"], cols["value"], cols["timestamp"]
        headers = _headers(cols["headers"]) if "headers" in cols else [[] for _ in tasks]
        ends: dict[tuple[int, str, int], int] = {}
        current, group = None, None
        for i, task in enumerate(tasks):
            if task != current:
                tallies.of(task)
                current, group = task, groups.setdefault(task, [])
            ends[task, topics[i], parts[i]] = offsets[i] + 1
            key, value = keys[i], values[i]
            if key_conv is not None:
                stage, conv = KEY_CONVERTER, key_conv
                try:
                    key = at_topic(key_conv, topics[i]).from_bytes(key)
                    stage, conv = VALUE_CONVERTER, value_conv
                    value = at_topic(value_conv, topics[i]).from_bytes(value)
                except Exception as e:
                    errors.failed(task, stage, conv, e, _consumed(cols, headers, i))
                    continue
            group.append(SinkRecord(topics[i], parts[i], offsets[i], value, key, stamps[i], headers[i]))
        for task, records in groups.items():
            tallies.of(task).records += len(records)
        for (task, topic, kp), end in ends.items():
            tallies.of(task).offsets[tp_key(topic, kp)] = sink_position(topic, kp, end)
        if current is not None:
            tallies.of(current)
        return groups
    return records_of


def task_contexts(plan: QueryPlan, shared_query: bool = False) -> Callable[[int], SinkTaskContext]:
    """The ``SinkTaskContext`` of each task id (built on the executor that starts the task)."""
    servers, kafka = plan.bootstrap_servers, dict(plan.kafka_config)
    return lambda task_id: SinkTaskContext(plan.connector, task_id, servers, kafka, shared_query)


def wants_raw_bytes(task_class: str) -> bool:
    """Whether the sink task class takes keys and values as the bytes in Kafka (``wants_raw_bytes = True``)."""
    try:
        return bool(getattr(load_class(task_class), "wants_raw_bytes", False))
    except Exception:  # an unloadable task class fails on the executors, blamed on its task
        return False


def put_source_rows(plan: QueryPlan, sink_batch: int, contexts: Callable[[int], SinkTaskContext],
                    batches: Iterator[Any]) -> Iterator[Any]:
    """Executor: one Spark partition of a source connector's rows into its ``sink.*`` sink tasks (task id modulo
    their number); one result row per task (``RESULT_SCHEMA``)."""
    n_sink = len(plan.sink_task_configs)
    sinks = _SinkTasks(plan.connector, str(plan.sink_task_class), plan.sink_task_configs, sink_batch, contexts)
    return _drive_sinks(plan.connector, sinks, batches, _source_records(plan.connector),
                        lambda task: task % n_sink, decode=True)


def put_kafka_rows(plan: QueryPlan, sink_batch: int, contexts: Callable[[int], SinkTaskContext], raw: bool,
                   sides: list[Side] | None, dlq_producer: dict[str, str], batches: Iterator[Any]) -> Iterator[Any]:
    """Executor: one Spark partition of a sink connector's Kafka rows (routed: one task's) into its sink task.

    ``sides``: how ``sink_chain.transform_batch`` decoded the rows when the connector has ``transforms``, else
    None (the converters decode them here). One result row per task (``RESULT_SCHEMA``).
    """
    sinks = _SinkTasks(plan.connector, plan.task_class, plan.task_configs, sink_batch, contexts)
    errors = record_errors(plan, dlq_producer)
    records = _kafka_records(plan.connector_config, raw, errors) if sides is None \
        else transformed_records(plan.connector_config, raw, sides, errors)
    return _drive_sinks(plan.connector, sinks, batches, records, lambda task: task, decode=False, errors=errors)
