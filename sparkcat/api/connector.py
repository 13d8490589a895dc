"""Connector and task interfaces, shaped like Kafka Connect's for planned, replayable micro-batches.

Which side runs what: ``Connector`` objects live on the driver. A ``SourceTask`` is
built twice: on the driver (``partitions``, ``latest_offsets``: planning, must be
cheap) and on executors (``poll``: reading). A ``SinkTask`` runs on executors. Task
classes are therefore re-created from their class path and config on each side;
they must not hold clients created in ``__init__``, only in ``start``. Kept whole (just over
400 lines, most of it the runnable examples in the docstrings) so an author reads one contract.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from enum import Enum
from typing import Any, ClassVar

from sparkcat.api.batch_writer import BatchWriteContext, BatchWriter
from sparkcat.api.config import ConfigDef, ConfigValue
from sparkcat.api.native import NativeWrite, NativeWriteContext
from sparkcat.api.records import SinkRecord, SourceRecord
from sparkcat.api.task_context import SinkTaskContext

__all__ = [
    "Connector",
    "ConnectorContext",
    "CopiesConfigToTasks",
    "ExactlyOnceSupport",
    "SinkConnector",
    "SinkTask",
    "SourceConnector",
    "SourceTask",
    "Task",
    "task_config_copies",
]


class ExactlyOnceSupport(str, Enum):
    """What a connector says of exactly-once delivery with a given config (Connect's ``ExactlyOnceSupport``).

    Returned by ``Connector.exactly_once_support``; ``None`` there means the connector does
    not say, and ``exactly.once.support=required`` is then refused.
    """

    SUPPORTED = "supported"
    UNSUPPORTED = "unsupported"


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

    A task that counts up from 0, one record per offset:

    >>> class CountTask(SourceTask):
    ...     def start(self, config):
    ...         self.topic = config["topic"]
    ...     def partitions(self):
    ...         return [{"counter": 0}]
    ...     def latest_offsets(self, current):
    ...         return {key: 3 for key in current}
    ...     def poll(self, partition, start, end):
    ...         first = 0 if start is None else start + 1
    ...         for n in range(first, end + 1):
    ...             yield SourceRecord(partition, {"n": n}, self.topic, value=str(n))
    >>> task = CountTask()
    >>> task.start({"topic": "numbers"})
    >>> [r.value for r in task.poll({"counter": 0}, None, 2)]
    ['0', '1', '2']
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
    batch id it committed can skip a replayed batch (``begin_batch``).

    Each micro-batch runs each task as one instance (``initialize``, ``start``,
    ``begin_batch``, ``put`` in chunks, ``flush``, ``stop``) on one executor, with the
    records of the topic-partitions it owns.

    >>> class ListSink(SinkTask):
    ...     def start(self, config):
    ...         self.pending, self.written = [], []
    ...     def put(self, records):
    ...         self.pending.extend(r.value for r in records)
    ...     def flush(self, batch_id):
    ...         self.written, self.pending = self.written + self.pending, []
    >>> sink = ListSink()
    >>> sink.start({})
    >>> sink.put([SinkRecord("t", 0, 0, value="a"), SinkRecord("t", 0, 1, value="b")])
    >>> sink.flush(batch_id=7)
    >>> sink.written
    ['a', 'b']
    """

    wants_raw_bytes: ClassVar[bool] = False
    """True: keys and values arrive as the bytes in Kafka, whatever converters the config names."""

    skips_by_position: ClassVar[bool] = False
    """True: a task that skips replayed batches (``begin_batch``) also skips, when its context says
    ``shared_query``, every record at a Kafka position it already made durable, so its connector may share a
    query with others (which never replay a batch with its id) and keep its guarantee."""

    def initialize(self, context: SinkTaskContext) -> None:
        """Receive what the task may know of its worker, before ``start`` (Connect's ``SinkTask.initialize``).

        >>> class Probe(SinkTask):
        ...     def start(self, config): ...
        ...     def put(self, records): ...
        >>> probe = Probe()
        >>> probe.initialize(SinkTaskContext("orders-sink", 2, "broker:9092"))
        >>> probe.context.task_id
        2
        """
        self.context = context

    def begin_batch(self, batch_id: int) -> bool:
        """Called once per micro-batch before any ``put``; False skips the batch (already written).

        ``batch_id`` grows with every batch and is the same on a replay, so a sink that
        stores the last id it made durable can return False for a replayed batch.

        >>> class Once(SinkTask):
        ...     last = -1
        ...     def start(self, config): ...
        ...     def put(self, records): ...
        ...     def begin_batch(self, batch_id):
        ...         fresh, self.last = batch_id > self.last, max(batch_id, self.last)
        ...         return fresh
        >>> task = Once()
        >>> task.begin_batch(1), task.begin_batch(1), task.begin_batch(2)
        (True, False, True)
        """
        return True

    @abstractmethod
    def put(self, records: list[SinkRecord]) -> None:
        """Write (or buffer) records."""

    def flush(self, batch_id: int) -> None:
        """Make every record put so far durable; called at the end of each micro-batch."""


class ConnectorContext:
    """What a running connector may ask of the runtime (Connect's ``ConnectorContext``); driver only.

    ``request_task_reconfiguration()``: the connector's inputs changed (a new table, a new topic),
    so the runtime asks ``task_configs`` again on its next pass and, when they differ, commits them
    and restarts the connector's query with them. ``raise_error(e)``: the connector failed in a
    thread of its own; it is marked FAILED with ``e``.
    """

    def __init__(self, on_reconfigure: Any = None, on_error: Any = None) -> None:
        self._on_reconfigure = on_reconfigure
        self._on_error = on_error

    def request_task_reconfiguration(self) -> None:
        if self._on_reconfigure is not None:
            self._on_reconfigure()

    def raise_error(self, error: BaseException) -> None:
        if self._on_error is not None:
            self._on_error(error)


class Connector(ABC):
    """Base of source and sink connectors; runs on the driver.

    ``path_keys`` names the config keys whose values are files or directories the
    connector's tasks open. The runtime checks them against the worker's
    ``file.allowed.dirs`` (symlinks and ``..`` resolved) when the config is
    validated and again where each task starts, so a connector need not.
    """

    path_keys: tuple[str, ...] = ()
    context: ConnectorContext | None = None

    def initialize(self, context: ConnectorContext) -> None:
        """Receive the runtime's context before ``start`` (kept as ``self.context``)."""
        self.context = context

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

    def exactly_once_support(self, config: Mapping[str, Any]) -> ExactlyOnceSupport | None:
        """Whether the connector can deliver exactly once with ``config`` (Connect's ``exactlyOnceSupport``).

        Asked, on a fresh instance and before ``start``, when a config sets
        ``exactly.once.support=required``. A source connector answers ``SUPPORTED`` when its
        ``poll`` gives the same records for the same range every time (the runtime then writes
        each batch and its offsets in one Kafka transaction); a sink when replayed batches do
        not duplicate what it wrote. The default, ``None``, means "not declared": ``required``
        is refused and ``requested`` runs as usual.

        >>> class Replayable(SourceConnector):
        ...     def start(self, config): ...
        ...     def task_class(self): return SourceTask
        ...     def task_configs(self, max_tasks): return [{}]
        ...     def exactly_once_support(self, config): return ExactlyOnceSupport.SUPPORTED
        >>> Replayable().exactly_once_support({}).value
        'supported'
        """
        return None

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
    """A connector that produces records (to Kafka by default, or to a sink named by ``sink.*``).

    A connector that spreads its counters over at most ``tasks.max`` tasks:

    >>> from sparkcat.api.config import Type
    >>> from sparkcat.api.util import group_partitions
    >>> class CountConnector(SourceConnector):
    ...     def config_def(self):
    ...         return ConfigDef().define("counters", Type.LIST, documentation="Counter names.")
    ...     def start(self, config):
    ...         self.counters = self.config_def().parse(config)["counters"]
    ...     def task_class(self):
    ...         return SourceTask  # a real connector names its own task class
    ...     def task_configs(self, max_tasks):
    ...         groups = group_partitions(self.counters, min(max_tasks, len(self.counters)))
    ...         return [{"counters": ",".join(g)} for g in groups]
    >>> connector = CountConnector()
    >>> connector.start({"counters": "a,b,c"})
    >>> connector.task_configs(2)
    [{'counters': 'a,b'}, {'counters': 'c'}]
    """

    connector_type = "source"


class SinkConnector(Connector):
    """A connector that consumes Kafka topics (``topics`` or ``topics.regex``) into an external system."""

    connector_type = "sink"

    def alter_offsets(self, config: Mapping[str, str], offsets: list[tuple[dict[str, Any], Any]] | None) -> bool:
        """Connect's ``SinkConnector.alterOffsets``: the connector's own positions follow an offsets request.

        Called on the driver while the connector is STOPPED, after the framework stored the
        request: ``offsets`` as ``({"kafka_topic", "kafka_partition"}, {"kafka_offset": n} or
        None)`` pairs, or None for a reset of every partition. A sink that keeps positions
        outside Kafka (the JDBC sink's table) moves them here, so a reset really re-delivers.
        Returns whether it did anything; the default keeps nothing and returns False.
        """
        return False

    def native_write(self, context: NativeWriteContext) -> NativeWrite | None:
        """How Spark writes this connector's records itself (``sparkcat.api.native``), or None (the default):
        its tasks' ``put`` gets them instead. Called on the driver, on the started connector, when its
        query starts."""
        return None

    @classmethod
    def writes_natively(cls) -> bool:
        """Whether the connector class overrides ``native_write`` (its records may never reach Python)."""
        return cls.native_write is not SinkConnector.native_write

    def batch_writer(self, context: BatchWriteContext) -> BatchWriter | None:
        """What writes each micro-batch whole with Spark (``sparkcat.api.batch_writer``), or None (the default):
        its tasks' ``put`` gets the records instead. Called on the driver when the query starts, on an instance
        that was not started: ``context.config`` holds the sink's config. ``native_write`` is asked first."""
        return None

    @classmethod
    def writes_batches(cls) -> bool:
        """Whether the connector class overrides ``batch_writer`` (its tasks' ``put`` is never called)."""
        return cls.batch_writer is not SinkConnector.batch_writer


def task_config_copies(config: Mapping[str, str], max_tasks: int, id_key: str | None = "task.id",
                       count_key: str | None = None) -> list[dict[str, str]]:
    """``max_tasks`` copies of ``config``, each with its task id under ``id_key`` (and the count under ``count_key``).

    The task configs of a connector whose tasks all do the same work (most sinks; the
    runtime shares the topic-partitions out among them).

    >>> task_config_copies({"file": "out.txt"}, 2, count_key="task.count")
    [{'file': 'out.txt', 'task.id': '0', 'task.count': '2'}, {'file': 'out.txt', 'task.id': '1', 'task.count': '2'}]
    """
    copies = []
    for i in range(max_tasks):
        copy = dict(config)
        if id_key:
            copy[id_key] = str(i)
        if count_key:
            copy[count_key] = str(max_tasks)
        copies.append(copy)
    return copies


class CopiesConfigToTasks:
    """Mixin for a ``Connector`` whose tasks each get a copy of its config (``task_config_copies``).

    ``start`` checks the config (``check_config``: by default it parses against
    ``config_def()``) and keeps it; ``task_configs`` hands out the copies. Set
    ``task_count_key`` to add the number of tasks to each copy.

    >>> from sparkcat.api.config import Type
    >>> class EchoSink(CopiesConfigToTasks, SinkConnector):
    ...     def config_def(self):
    ...         return ConfigDef().define("file", Type.STRING)
    ...     def task_class(self):
    ...         return SinkTask
    >>> sink = EchoSink()
    >>> sink.start({"file": "out.txt", "topics": "t"})
    >>> sink.task_configs(2)
    [{'file': 'out.txt', 'topics': 't', 'task.id': '0'}, {'file': 'out.txt', 'topics': 't', 'task.id': '1'}]
    """

    task_id_key: ClassVar[str | None] = "task.id"
    task_count_key: ClassVar[str | None] = None

    def __init__(self) -> None:
        self.props: dict[str, str] = {}

    def check_config(self, config: dict[str, str]) -> None:
        """Raise ``ConfigError`` when ``config`` cannot run; by default parse it against ``config_def()``."""
        self.config_def().parse(config)  # type: ignore[attr-defined]

    def start(self, config: dict[str, str]) -> None:
        """Check the config, then keep it for ``task_configs``."""
        self.check_config(config)
        self.props = dict(config)

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        """``max_tasks`` copies of the config, each with its ``task.id``."""
        return task_config_copies(self.props, max_tasks, self.task_id_key, self.task_count_key)
