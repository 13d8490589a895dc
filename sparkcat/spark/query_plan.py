"""What the herder hands to Spark to run one connector, and what each micro-batch reports back: plain data
that both sides share.

The driver builds a ``QueryPlan`` and pickles it to executors inside every handler's ``mapInArrow`` function;
executors report ``TaskBatchResult``s that the driver merges into a ``BatchResult``. So every field is plain
data, and this module imports neither ``driver/`` nor ``executor/``. ``tp_key`` and ``sink_position`` name a
sink's Kafka positions the same way on both sides.
"""

from __future__ import annotations

import dataclasses
import json
import socket
from dataclasses import dataclass, field
from collections.abc import Callable
from typing import Any

from sparkcat.kafka.producers import LeaderLease
from sparkcat.model.error_metrics import ErrorCounts


@dataclass
class QueryPlan:
    """Everything needed to (re)start the streaming query of one connector.

    ``task_configs[i]`` is task i; ``excluded_tasks`` are FAILED tasks whose
    partitions must not advance until the task is restarted (the other tasks keep
    running). For a source connector with ``sink.*`` keys, ``sink_class`` and
    ``sink_task_configs`` name the sink its records go to instead of Kafka.
    """

    connector: str
    connector_type: str                      # "source" or "sink"
    connector_class: str                     # module:Class of the connector
    task_class: str                          # module:Class of its task
    connector_config: dict[str, str]
    task_configs: list[dict[str, str]]
    checkpoint_dir: str
    bootstrap_servers: str = ""              # Kafka for records (sources' output, sinks' input)
    kafka_config: dict[str, str] = field(default_factory=dict)
    offsets_store: dict[str, str] = field(default_factory=dict)   # how executors/readers open the offsets store
    sink_class: str | None = None
    sink_task_class: str | None = None
    sink_task_configs: list[dict[str, str]] = field(default_factory=list)
    excluded_tasks: list[int] = field(default_factory=list)
    trigger_interval_ms: int = 1000
    batch_max_records: int = 100000
    # Exactly-once output to Kafka (a source without sink.*, on a worker with exactly.once.source.support
    # enabled): each task's batch and its source offsets in one transaction of "{group_id}-{connector}-{task}".
    exactly_once: bool = False
    group_id: str = ""
    # A Java source connector from plugin.path: the Connect host its tasks run in on executors (its jars and
    # worker keys, ``plugins.HostedJavaConnector.host_spec``); empty for Python connectors.
    java_host: dict[str, Any] = field(default_factory=dict)
    # The worker's topic.creation.enable: a source's tasks create its topics by its topic.creation.* keys (KIP-158)
    topic_creation: bool = True

    @property
    def live_tasks(self) -> list[int]:
        """The task ids that run: every task but the excluded (FAILED) ones, in order."""
        excluded = set(self.excluded_tasks)
        return [t for t in range(len(self.task_configs)) if t not in excluded]

    @property
    def query_name(self) -> str:
        """The Spark UI shows the query under the connector's name."""
        return self.connector

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> QueryPlan:
        return cls(**json.loads(text))


#: Where a query's batches get the driver's current ``LeaderLease`` (None: no group, this driver alone leads).
LeaseSource = Callable[[], LeaderLease | None]


def no_lease() -> LeaderLease | None:
    """The lease source of a driver without a leader group."""
    return None


TopicPartitionKey = tuple[str, int]


def tp_key(topic: str, partition: int) -> str:
    """``"topic:partition"``: the key of a Kafka topic-partition in stored sink offsets, tallies and routing.

    >>> tp_key("orders", 3)
    'orders:3'
    """
    return f"{topic}:{partition}"


def sink_position(topic: str, partition: int, next_offset: int) -> tuple[dict[str, Any], dict[str, int]]:
    """A sink's position in one topic-partition, shaped as Connect's offsets API shows it.

    >>> sink_position("orders", 3, 42)
    ({'kafka_topic': 'orders', 'kafka_partition': 3}, {'kafka_offset': 42})
    """
    return {"kafka_topic": topic, "kafka_partition": partition}, {"kafka_offset": next_offset}


#: Spark's executor id of the driver: a ``local`` master's only executor.
DRIVER_EXECUTOR = "driver"


def driver_worker_id() -> str:
    """``HOST:driver``, the ``worker_id`` of work the driver's own JVM runs: every task on a ``local`` master, and a
    native sink's tasks, whose batches the driver plans and commits while Spark spreads their Kafka partitions
    over the executors (so no one executor runs a task)."""
    return f"{socket.gethostname()}:{DRIVER_EXECUTOR}"


@dataclass
class TaskBatchResult:
    """What one task did in one micro-batch, reported from its executor."""

    task: int
    worker_id: str
    records: int
    # (source partition, last offset written) for source connectors; for sink
    # connectors the partition is {"kafka_topic", "kafka_partition"} and the offset
    # {"kafka_offset": next offset to read}, as Connect's offsets API shows them.
    offsets: list[tuple[dict[str, Any], Any]] = field(default_factory=list)
    # Connect's error handling metrics of the batch (records failed, skipped, dead-lettered); None: nothing failed
    errors: ErrorCounts | None = None
    # A source task's topics it sent records to in the batch (KIP-558's active topics)
    topics: list[str] = field(default_factory=list)


@dataclass
class BatchResult:
    """One committed micro-batch of a connector's query."""

    connector: str
    batch_id: int
    tasks: dict[int, TaskBatchResult]
    duration_s: float
    # Exactly-once batches: the slowest task's fresh producer (metadata + init_transactions) and commit, in ms.
    transaction_ms: float | None = None
    # The writer committed the tasks' positions to the offsets store itself, with the records (transactions).
    positions_stored: bool = False

    @property
    def records(self) -> int:
        return sum(t.records for t in self.tasks.values())


class QueryStopping(RuntimeError):
    """Raised by a batch that begins while its query is being stopped (or its driver stopped leading), so it is
    not committed."""


TASK_FAILURE_MARK = "sparkcat task failed:"


def task_failure_message(connector: str, task: int, error: BaseException) -> str:
    """The text a failing task raises with: a query's exception reaches the driver as text, and the driver reads
    the task id back from it (``runtime.execution.failures.Failure.of_query``)."""
    return f"{TASK_FAILURE_MARK} {connector}-{task}: {type(error).__name__}: {error}"

