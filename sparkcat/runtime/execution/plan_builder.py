"""The query plan of a running connector: what its streaming query reads, runs and writes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from sparkcat import plugins
from sparkcat.api.connector import Connector
from sparkcat.config.connector import ConnectorSettings
from sparkcat.model.config_state import ClusterConfigState
from sparkcat.policy.input_policy import InputPolicy, attach
from sparkcat.config.names import dir_name
from sparkcat.config.stores import offsets_store_spec
from sparkcat.config.worker import WorkerConfig
from sparkcat.policy import paths
from sparkcat.spark.query_plan import QueryPlan


#: Connect's worker default of offset.flush.interval.ms, which transaction.boundary.interval.ms falls back to.
OFFSET_FLUSH_INTERVAL_MS = 60_000


@dataclass(frozen=True)
class EmbeddedSink:
    """The sink a source with ``sink.*`` keys writes to instead of Kafka: its class, task class, task configs."""

    connector_class: str
    task_class: str
    task_configs: list[dict[str, str]]


class PlannedConnector(Protocol):
    """What a plan is made from (``ConnectorLifecycle``): a started connector and its own settings."""

    name: str
    config: dict[str, str]
    instance: Connector | None
    sink: EmbeddedSink | None
    failed_tasks: dict

    @property
    def settings(self) -> ConnectorSettings: ...


def class_path(cls: type) -> str:
    """``module:QualName``, how plans name classes for executors to load."""
    return f"{cls.__module__}:{cls.__qualname__}"


def checkpoint_dir(worker: WorkerConfig, name: str) -> str:
    """The connector's query checkpoint under ``worker.checkpoint_root`` (any Hadoop URI); never the raw name."""
    return paths.child_path(worker.checkpoint_root, dir_name(name))


def query_plan(state: ClusterConfigState, rt: PlannedConnector, worker: WorkerConfig,
               policy: InputPolicy) -> QueryPlan:
    """The plan of ``rt``'s query, with the committed task configs of ``state``."""
    cls = type(rt.instance)
    sink = rt.sink
    sink_class, sink_task_class, sink_task_configs = \
        (sink.connector_class, sink.task_class, sink.task_configs) if sink else (None, None, [])
    sink_paths = getattr(plugins.load_class(sink_class), "path_keys", ()) if sink_class else ()
    exactly_once = writes_exactly_once(plugins.connector_type(cls), sink_class, worker)
    # Configs go to executors with the worker's policy attached (policy/input_policy.py): tasks
    # resolve their placeholders and check their paths where they start.
    return QueryPlan(
        connector=rt.name,
        connector_type=plugins.connector_type(cls),
        connector_class=class_path(cls),
        task_class=class_path(rt.instance.task_class()),
        connector_config=attach(rt.config, policy),
        task_configs=[attach(c, policy, cls.path_keys) for c in state.all_task_configs(rt.name)],
        checkpoint_dir=checkpoint_dir(worker, rt.name),
        bootstrap_servers=worker.bootstrap_servers,
        kafka_config=dict(worker.kafka),
        offsets_store=offsets_store_spec(worker),
        sink_class=sink_class,
        sink_task_class=sink_task_class,
        sink_task_configs=[attach(c, policy, sink_paths) for c in sink_task_configs],
        excluded_tasks=sorted(rt.failed_tasks),
        trigger_interval_ms=trigger_interval_ms(rt.settings, exactly_once),
        batch_max_records=rt.settings.batch_max_records,
        exactly_once=exactly_once,
        group_id=worker.group_id,
        java_host=dict(rt.instance.host_spec) if isinstance(rt.instance, plugins.HostedJavaConnector) else {},
        topic_creation=worker.topic_creation_enable,
    )


def writes_exactly_once(connector_type: str, sink_class: str | None, worker: WorkerConfig) -> bool:
    """Connect's rule: with exactly.once.source.support=enabled every source task writing to Kafka is transactional."""
    return connector_type == "source" and sink_class is None and worker.exactly_once_source and worker.uses_kafka


def trigger_interval_ms(settings: ConnectorSettings, exactly_once: bool) -> int:
    """``trigger.interval.ms``; with ``transaction.boundary=interval`` at least its interval (Connect's default 60 s).

    A transaction never spans micro-batches (Spark commits a batch when its writer returns), so
    Connect's interval boundary becomes the interval between micro-batches.
    """
    if not exactly_once or settings.transaction_boundary != "interval":
        return settings.trigger_interval_ms
    interval = settings.transaction_boundary_interval_ms
    return max(settings.trigger_interval_ms, OFFSET_FLUSH_INTERVAL_MS if interval is None else interval)
