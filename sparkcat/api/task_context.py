"""What a task may learn about where it runs (Connect's ``SinkTaskContext``)."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["SinkTaskContext"]


@dataclass(frozen=True)
class SinkTaskContext:
    """What a sink task may learn about its worker (Connect's ``SinkTaskContext``), via ``initialize``.

    ``bootstrap_servers`` and ``kafka_config`` (the worker's ``kafka.*`` settings, prefixes such as
    ``producer.`` kept) describe the Kafka cluster the connector's records come from. Built on the
    driver and shipped to executors, so it holds plain data only.

    >>> SinkTaskContext("orders-sink", 0, "broker:9092").bootstrap_servers
    'broker:9092'
    """

    connector: str
    task_id: int
    bootstrap_servers: str = ""
    kafka_config: dict[str, str] = field(default_factory=dict)
    # The task runs in a query shared with other connectors (docs/running.md): a batch is never replayed with
    # its id, so a task that skips what it already made durable does so by its records' Kafka positions.
    shared_query: bool = False
