"""``sparkcat-kafka-direct``: a sink connector's task fed by its consumer in one Python worker.

For sink tasks that implement ``put_messages`` (the built-in ``kafka`` sink), records never become
Spark rows: the Spark partition of task *i* reads task *i*'s ranges of the micro-batch with a
confluent-kafka consumer and hands each ``consume`` result to the task in the same process, as
Kafka Connect's ``WorkerSinkTask`` polls its consumer and calls ``put`` on one thread. This skips
the Arrow round trip through the JVM and the second Python worker of the ``mapInArrow`` path,
which together cost more than the reading and writing themselves.

Batches are planned exactly as by ``sparkcat-kafka`` (same offsets, admission control, task
split), and the query checkpoint holds the same offsets. Each Spark partition yields one row of
``RESULT_SCHEMA``: the task, its executor, how many records it put and the next offset of each
of its Kafka partitions. A failing task raises ``task_failure_message``, so the micro-batch fails,
is not committed, and the herder marks that task FAILED, as on the other paths.

The micro-batch's id for ``flush`` comes from the local property ``BATCH_ID_PROPERTY``, which the
foreachBatch handler sets before it runs the batch's job (local properties reach every task).

Differences a user can see: Spark's input-row count (Spark UI, ``numInputRows``) counts one row
per task, not records; the query progress's observed metric ``records`` and sparkcat's
``/metrics`` count records.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from pyspark.sql.datasource import InputPartition
from pyspark.sql.types import StructType

from sparkcat.plugins import load_class
from sparkcat.spark.batch_writers import RESULT_SCHEMA, SinkTaskContext, start_sink_task, worker_id
from sparkcat.spark.kafka_source import (
    KafkaInputPartition,
    KafkaSource,
    KafkaStreamReader,
    _drop_cached_consumer,
    range_messages,
)
from sparkcat.spark.plan import TASK_FAILURE_MARK, task_failure_message

__all__ = ["FORMAT", "BATCH_ID_PROPERTY", "KafkaDirectSinkSource", "DirectSinkPartition", "uses_direct_path"]

FORMAT = "sparkcat-kafka-direct"
BATCH_ID_PROPERTY = "sparkcat.sink.batch.id"


def uses_direct_path(task_class: str) -> bool:
    """Whether a sink task class takes confluent-kafka messages (``put_messages``)."""
    try:
        return callable(getattr(load_class(task_class), "put_messages", None))
    except Exception:  # an unloadable class fails later, in the put() path, with its own error
        return False


class DirectSinkPartition(InputPartition):
    """One task's Kafka ranges of a batch plus what it takes to run the task there (pickled)."""

    def __init__(self, kafka: KafkaInputPartition, task_class: str, task_config: dict[str, str],
                 context: dict[str, Any]) -> None:
        super().__init__(kafka.task)
        self.kafka = kafka
        self.task_class = task_class
        self.task_config = task_config
        self.context = context  # SinkTaskContext fields

    def __repr__(self) -> str:
        return f"DirectSinkPartition(task={self.kafka.task}, ranges={self.kafka.ranges!r})"


class KafkaDirectSinkSource(KafkaSource):
    """The ``sparkcat-kafka-direct`` source: options of ``sparkcat-kafka`` plus ``sink`` (JSON)."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        return RESULT_SCHEMA

    def streamReader(self, schema: StructType) -> DirectSinkReader:
        return DirectSinkReader(self.options)


class DirectSinkReader(KafkaStreamReader):
    """Plans like ``KafkaStreamReader``; its partitions also carry the task to run."""

    def __init__(self, options: Mapping[str, str]) -> None:
        super().__init__(options)
        spec = json.loads(options["sink"])
        self.task_class: str = spec["task_class"]
        self.task_configs: list[dict[str, str]] = spec["task_configs"]
        self.context: dict[str, Any] = spec["context"]

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        return [DirectSinkPartition(p, self.task_class, self.task_configs[p.task], self.context)
                for p in super().partitions(start, end)]

    def read(self, partition: InputPartition) -> Iterator[tuple]:
        assert isinstance(partition, DirectSinkPartition)
        return run_task(partition)


def run_task(part: DirectSinkPartition) -> Iterator[tuple]:
    """Executor: read the task's ranges into its ``put_messages``, flush, and yield its result row."""
    kafka = part.kafka
    if not any(end > first for _t, _p, first, end in kafka.ranges):
        return
    task = None
    records = 0
    try:
        context = SinkTaskContext(task_id=kafka.task, **part.context)
        task = start_sink_task(part.task_class, part.task_config, context)
        batch_id = _batch_id()
        begin = getattr(task, "begin_batch", None)
        if begin is None or begin(batch_id):  # False: the task already holds this batch (a replay)
            for messages in range_messages(kafka):
                task.put_messages(messages)
                records += len(messages)
            task.flush(batch_id)
    except Exception as exc:
        _drop_cached_consumer(kafka.bootstrap_servers, kafka.client_config)
        if TASK_FAILURE_MARK in str(exc):
            raise
        raise RuntimeError(task_failure_message(kafka.connector or "?", kafka.task, exc)) from exc
    finally:
        if task is not None:
            task.stop()
    offsets = [({"kafka_topic": t, "kafka_partition": p}, {"kafka_offset": end})
               for t, p, first, end in kafka.ranges if end > first]
    yield kafka.task, worker_id(), records, json.dumps(offsets, separators=(",", ":"))


def _batch_id() -> int:
    from pyspark import TaskContext
    ctx = TaskContext.get()
    value = ctx.getLocalProperty(BATCH_ID_PROPERTY) if ctx is not None else None
    if value is None:
        value = ctx.getLocalProperty("streaming.sql.batchId") if ctx is not None else None
    return int(value) if value is not None else -1
