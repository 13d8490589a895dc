"""``SinkTaskContext``: what a sink task may learn about its worker.

The writers that were here are split by job: ``handlers`` (which handler writes a plan's
batches), ``batch_results`` (per-task tallies and results), ``source_to_kafka`` with
``kafka_serialisation`` and ``sparkcat.kafka.producers``, and ``sink_tasks``. This class stays
until it moves to ``sparkcat.api`` with the rest of the plugin API.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["SinkTaskContext"]


@dataclass(frozen=True)
class SinkTaskContext:
    """What a sink task may learn about its worker (Connect's ``SinkTaskContext``), via ``initialize``.

    ``bootstrap_servers`` and ``kafka_config`` (the worker's ``kafka.*`` settings, prefixes such as
    ``producer.`` kept) describe the Kafka cluster the connector's records come from.
    """

    connector: str
    task_id: int
    bootstrap_servers: str = ""
    kafka_config: dict[str, str] = field(default_factory=dict)
