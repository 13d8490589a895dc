"""``GET /metrics``: Prometheus text exposition of connector and task progress, by prometheus_client.

Counters come from the herder's connector progress (what this driver's queries
committed since it started); states come from the connector statuses. A custom
collector reads both at scrape time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

#: The text format generate_latest writes (0.0.4), as this endpoint has always declared it.
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

_CONNECTOR_METRICS = (
    ("sparkcat_connector_records_total", CounterMetricFamily,
     "Records the connector's query committed since this driver started.", "records"),
    ("sparkcat_connector_batches_total", CounterMetricFamily,
     "Micro-batches the connector's query committed since this driver started.", "batches"),
    ("sparkcat_connector_last_batch_duration_seconds", GaugeMetricFamily,
     "Duration of the connector's last committed micro-batch.", "last_batch_s"),
    ("sparkcat_connector_last_batch_timestamp_seconds", GaugeMetricFamily,
     "When the connector's last micro-batch was committed (epoch seconds; 0 before its first).", "last_batch_at"),
    ("sparkcat_connector_batches_last_minute", GaugeMetricFamily,
     "Micro-batches the connector committed in the last 60 seconds: its cadence.", "batches_last_minute"),
    ("sparkcat_connector_transaction_batches_total", CounterMetricFamily,
     "Exactly-once micro-batches (one Kafka transaction per task) the connector's query committed.",
     "transaction_batches"),
    ("sparkcat_connector_transaction_seconds_total", CounterMetricFamily,
     "Cost of exactly-once summed over those batches: each one's slowest task's transactional producer set-up "
     "and commit.", "transaction_s"),
)

#: (name, progress) pairs (progress has ``records``, ``batches``, ``last_batch_s``) and
#: ``GET /connectors/NAME/status`` bodies.
Snapshot = tuple[Iterable[tuple[str, Any]], Iterable[dict[str, Any]]]


class ConnectorCollector:
    """A prometheus_client collector over what ``read`` returns at each scrape."""

    def __init__(self, read: Callable[[], Snapshot]):
        self.read = read

    def collect(self) -> Iterator[Metric]:
        progress, statuses = self.read()
        progress, statuses = list(progress), list(statuses)
        for name, family, help_text, attr in _CONNECTOR_METRICS:
            metric = family(name, help_text, labels=["connector"])
            for connector, p in progress:
                metric.add_metric([connector], getattr(p, attr, 0))
            yield metric
        behind = GaugeMetricFamily("sparkcat_connector_offsets_behind_latest",
                                   "How many offsets the connector's query is behind the end of the Kafka partition "
                                   "it is furthest behind on (Spark's maxOffsetsBehindLatest, last batch).",
                                   labels=["connector"])
        for connector, p in progress:
            if getattr(p, "offsets_behind_latest", None) is not None:
                behind.add_metric([connector], p.offsets_behind_latest)
        yield behind
        connector_state = GaugeMetricFamily("sparkcat_connector_state", "The connector's state (1 for its current state).",
                                            labels=["connector", "state", "worker_id"])
        task_state = GaugeMetricFamily("sparkcat_task_state", "The task's state (1 for its current state).",
                                       labels=["connector", "task", "state", "worker_id"])
        task_failed = GaugeMetricFamily("sparkcat_task_failed", "Whether the task is FAILED (1) or not (0).",
                                        labels=["connector", "task"])
        restarts = GaugeMetricFamily("sparkcat_connector_auto_restarts",
                                     "Automatic restarts of the connector since its count was last reset (auto.restart.*).",
                                     labels=["connector"])
        for s in statuses:
            restarts.add_metric([s["name"]], (s.get("autoRestart") or {}).get("count", 0))
            c = s["connector"]
            connector_state.add_metric([s["name"], c["state"], c["worker_id"]], 1)
            for t in s["tasks"]:
                task_state.add_metric([s["name"], str(t["id"]), t["state"], t["worker_id"]], 1)
                task_failed.add_metric([s["name"], str(t["id"])], 1 if t["state"] == "FAILED" else 0)
        yield from (connector_state, task_state, task_failed, restarts)


def registry(read: Callable[[], Snapshot]) -> CollectorRegistry:
    """A registry holding only the connector collector (not the process-wide default one)."""
    out = CollectorRegistry(auto_describe=False)
    out.register(ConnectorCollector(read))
    return out


def exposition(metrics: CollectorRegistry) -> str:
    return generate_latest(metrics).decode()


def render(progress: Iterable[tuple[str, Any]], statuses: Iterable[dict[str, Any]]) -> str:
    """The exposition text for ``progress`` (name, progress) and connector ``statuses``."""
    return exposition(registry(lambda: (progress, statuses)))
