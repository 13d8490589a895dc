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

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from sparkcat.api.task_context import SinkTaskContext
from sparkcat.spark.executor.batch_results import result_batch, Tally
from sparkcat.spark.executor.kafka_ranges import read_ranges
from sparkcat.spark.executor.shared_source import member_tasks, run_bounded
from sparkcat.spark.executor.sink_tasks import put_kafka_rows
from sparkcat.spark.query_plan import QueryPlan, sink_position, tp_key

__all__ = ["SinkPart", "SinkWrite", "put_members"]


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


def put_members(writes: dict[str, SinkWrite], sink_batch: int, batches: Iterator[Any],
                bound_s: float) -> Iterator[Any]:
    """Executor: each ``(task, payload)`` row's ranges read and put; rows of connectors not in ``writes`` (they
    left the query after the batch was planned) are skipped: they restart from their stored offsets."""
    for write, part in member_tasks(writes, batches):
        yield from run_bounded(lambda w=write, p=part: _put_task(w, p, sink_batch), part.connector, part.task,
                               bound_s)


def _put_task(write: SinkWrite, part: SinkPart, sink_batch: int) -> list[Any]:
    rows = read_ranges(write.consumer, part.connector, part.task, part.ranges)
    out = list(put_kafka_rows(write.plan, sink_batch, write.contexts, write.raw, None, write.dlq_producer,
                              iter([rows])))
    return [_at_range_ends(r, part) for r in out] or [_positions_only(part)]


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
