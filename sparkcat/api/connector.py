"""Connector and task interfaces, shaped like Kafka Connect's for planned, replayable micro-batches.

Which side runs what: ``Connector`` objects live on the driver. A ``SourceTask`` is
built twice: on the driver (``partitions``, ``latest_offsets``: planning, must be
cheap) and on executors (``poll``: reading). A ``SinkTask`` runs on executors. Task
classes are therefore re-created from their class path and config on each side;
they must not hold clients created in ``__init__``, only in ``start``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from typing import Any

from sparkcat.api.config import ConfigDef, ConfigValue
from sparkcat.api.records import SinkRecord, SourceRecord


class Task(ABC):
    """Base of source and sink tasks."""

    def version(self) -> str:
        return "unknown"

    @abstractmethod
    def start(self, config: dict[str, str]) -> None:
        """Receive the task config produced by ``Connector.task_configs``; open clients here."""

    def stop(self) -> None:
        """Release what ``start`` opened; called once per ``start``."""


class SourceTask(Task):
    """Reads one task's share of a source as replayable ranges of offsets.

    ``poll(partition, start, end)`` must be deterministic for a given range: Spark
    replays a micro-batch after a failure and exactly-once sinks rely on the replay
    giving the same records.
    """

    @abstractmethod
    def partitions(self) -> list[dict[str, Any]]:
        """The source partitions this task owns (e.g. ``[{"increment": 1}]``)."""

    @abstractmethod
    def latest_offsets(self, current: dict[str, Any]) -> dict[str, Any]:
        """Driver side: how far data is available now, per source partition.

        ``current`` maps the JSON key of each source partition (see
        ``sparkcat.api.partition_key``) to its last committed offset (None before the
        first record). Return the same keys with the newest available offset.
        """

    @abstractmethod
    def poll(self, partition: dict[str, Any], start: Any, end: Any) -> Iterable[SourceRecord]:
        """Executor side: exactly the records after offset ``start`` up to and including ``end``."""

    def advance(self, partition: dict[str, Any], start: Any, end: Any, max_records: int) -> Any:
        """Return an offset between ``start`` and ``end`` that covers at most ``max_records`` records.

        Used by admission control (``batch.max.records``). The default admits the
        whole range; sources with countable offsets override it.
        """
        return end

    def value_schema(self) -> str:
        """Spark DDL of the record value (``"STRING"``, or a struct like ``"position BIGINT, value BIGINT"``)."""
        return "STRING"


class SinkTask(Task):
    """Writes records to an external system, on executors.

    Contract: ``put`` may buffer; ``flush`` must make everything put so far durable.
    A raise in ``put`` or ``flush`` fails the micro-batch: nothing of it is committed
    in the query's checkpoint, so the batch is replayed when the task restarts.
    ``batch_id`` makes idempotent writes possible: a sink that records the last
    batch id it committed can skip a replayed batch.

    Each micro-batch runs each task as one instance (``start``, ``put`` in chunks, ``flush``,
    ``stop``) on one executor, with the records of the topic-partitions it owns. A task class
    with ``wants_raw_bytes = True`` gets keys and values as the bytes in Kafka.
    """

    @abstractmethod
    def put(self, records: list[SinkRecord]) -> None:
        """Write (or buffer) records."""

    def flush(self, batch_id: int) -> None:
        """Make every record put so far durable; called at the end of each micro-batch."""


class Connector(ABC):
    """Base of source and sink connectors; runs on the driver.

    ``path_keys`` names the config keys whose values are files or directories the
    connector's tasks open. The runtime checks them against the worker's
    ``file.allowed.dirs`` (symlinks and ``..`` resolved) when the config is
    validated and again where each task starts, so a connector need not.
    """

    path_keys: tuple[str, ...] = ()

    def version(self) -> str:
        return "unknown"

    def config_def(self) -> ConfigDef:
        """The connector's own keys; the runtime adds the common connector keys."""
        return ConfigDef()

    def validate(self, config: Mapping[str, Any]) -> list[ConfigValue]:
        """Checks across keys that ``config_def`` cannot express (Connect's ``Connector.validate``).

        Return one ``ConfigValue`` with errors per offending key; they are reported with the
        per-key errors. The default has none.
        """
        return []

    @abstractmethod
    def start(self, config: dict[str, str]) -> None:
        """Receive the connector config (already validated against ``config_def``)."""

    @abstractmethod
    def task_class(self) -> type[Task]:
        """The task class to run; must be importable on executors."""

    @abstractmethod
    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        """At most ``max_tasks`` task configs; each becomes one task (one partition of the query)."""

    def stop(self) -> None:
        """Release what ``start`` opened."""


class SourceConnector(Connector):
    """A connector that produces records (to Kafka by default, or to a sink named by ``sink.*``)."""

    connector_type = "source"


class SinkConnector(Connector):
    """A connector that consumes Kafka topics (``topics`` or ``topics.regex``) into an external system."""

    connector_type = "sink"
