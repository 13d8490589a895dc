"""What the herder knows about one connector it runs: its instance, task configs, query and failures."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sparkcat.api.connector import Connector
from sparkcat.runtime.query_runner import RunningQuery
from sparkcat.runtime.recovery import AutoRestart, Retries
from sparkcat.spark.kafka_input import tp_key
from sparkcat.spark.plan import BatchResult


@dataclass
class Progress:
    """What this driver's queries of one connector committed since it started (``GET /metrics``).

    Spark's own progress (``StreamingQuery.recentProgress``) restarts with each query and
    keeps only its last batches, so these totals are kept here, in this one place.
    """

    batches: int = 0
    records: int = 0
    last_batch_s: float = 0.0
    # exactly-once batches: how many, and the sum of each one's slowest task's producer init + commit
    transaction_batches: int = 0
    transaction_ms: float = 0.0

    @property
    def transaction_s(self) -> float:
        return self.transaction_ms / 1000

    def add(self, result: BatchResult) -> None:
        self.batches += 1
        self.records += result.records
        self.last_batch_s = result.duration_s
        if result.transaction_ms is not None:
            self.transaction_batches += 1
            self.transaction_ms += result.transaction_ms


@dataclass
class ConnectorRuntime:
    """Driver-side state of one connector; observed state only (targets live in the config log)."""

    name: str
    config: dict[str, str]
    instance: Connector | None = None
    desired_task_configs: list[dict[str, str]] | None = None
    query: RunningQuery | None = None
    failed_tasks: dict[int, str] = field(default_factory=dict)
    failed: str | None = None           # the connector itself failed (trace)
    task_workers: dict[int, str] = field(default_factory=dict)
    last_restart_offset: int = -1
    progress: Progress = field(default_factory=Progress)
    sink: tuple[str, str, list[dict[str, str]]] | None = None   # embedded sink: class, task class, configs
    sink_offsets: dict[str, tuple[dict, dict]] = field(default_factory=dict)
    retries: Retries = field(default_factory=Retries)               # transient failures of its query
    auto_restart: AutoRestart = field(default_factory=AutoRestart)  # Strimzi's auto-restart bookkeeping

    def set_sink_offset(self, partition: dict, offset: Any) -> None:
        """Remember where the sink's query is in one Kafka partition (offset None: forget it)."""
        key = tp_key(partition.get("kafka_topic"), partition.get("kafka_partition"))
        if offset is None:
            self.sink_offsets.pop(key, None)
        else:
            self.sink_offsets[key] = (partition, offset)

    def stop_instance(self) -> None:
        if self.instance is not None:
            try:
                self.instance.stop()
            finally:
                self.instance = None
                self.desired_task_configs = None
