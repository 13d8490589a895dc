"""``GET /metrics``: Prometheus text exposition of connector and task progress, by prometheus_client.

Counters come from the herder's connector progress (what this driver's queries
committed since it started); states come from the connector statuses. A custom
collector reads both at scrape time.

Each task's error handling metrics are Kafka Connect's (``ErrorHandlingMetrics``, the
task-error-metrics group) under Connect's names with ``-`` as ``_``, e.g.
``sparkcat_task_total_record_errors{connector,task}``. They are cumulative sums, exposed
untyped (as the Prometheus JMX exporter shows Connect's) so that they keep those names
rather than gaining a ``_total`` suffix.

Connect's own metric groups, under the names the Prometheus JMX exporter gives them, come from
``rest.connect_metrics``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric, UnknownMetricFamily

from sparkcat.rest import connect_metrics

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

_TASK_ERROR_METRICS = (
    ("sparkcat_task_total_record_failures",
     "Record processing failures of the task (Connect's total-record-failures).", "record_failures"),
    ("sparkcat_task_total_record_errors",
     "Records of the task that failed (Connect's total-record-errors).", "record_errors"),
    ("sparkcat_task_total_records_skipped",
     "Failed records the task skipped with errors.tolerance=all (Connect's total-records-skipped).",
     "records_skipped"),
    ("sparkcat_task_total_errors_logged",
     "Errors the task wrote to the error log, errors.log.enable (Connect's total-errors-logged).", "errors_logged"),
    ("sparkcat_task_deadletterqueue_produce_requests",
     "Records the task sent to its dead letter queue (Connect's deadletterqueue-produce-requests).",
     "dlq_produce_requests"),
    ("sparkcat_task_deadletterqueue_produce_failures",
     "Dead letters of the task that Kafka did not take (Connect's deadletterqueue-produce-failures).",
     "dlq_produce_failures"),
)

#: (name, progress) pairs (progress has ``records``, ``batches``, ``last_batch_s``),
#: ``GET /connectors/NAME/status`` bodies and, optionally, each connector's class and version, and the leader
#: group's ``RebalanceView`` (None without a group).
Snapshot = (tuple[Iterable[tuple[str, Any]], Iterable[dict[str, Any]]]
            | tuple[Iterable[tuple[str, Any]], Iterable[dict[str, Any]], dict[str, connect_metrics.ConnectorIdentity]]
            | tuple[Iterable[tuple[str, Any]], Iterable[dict[str, Any]], dict[str, connect_metrics.ConnectorIdentity],
                    Any])


class ConnectorCollector:
    """A prometheus_client collector over what ``read`` returns at each scrape."""

    def __init__(self, read: Callable[[], Snapshot], clock: Callable[[], float] = time.time):
        self.read, self.clock = read, clock  # clock: the wall time Connect's rate windows end at

    def collect(self) -> Iterator[Metric]:
        snapshot = self.read()
        progress, statuses = list(snapshot[0]), list(snapshot[1])
        classes = snapshot[2] if len(snapshot) > 2 else {}
        rebalance = snapshot[3] if len(snapshot) > 3 else None
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
        yield from _task_errors(progress)
        yield from connect_metrics.collect(progress, statuses, classes, self.clock(), rebalance)


def _task_errors(progress: list[tuple[str, Any]]) -> Iterator[Metric]:
    """Each task's error handling metrics (``Progress.task_errors``), one sample per connector and task."""
    tasks = [(connector, str(task), counts) for connector, p in progress
             for task, counts in sorted((getattr(p, "task_errors", None) or {}).items())]
    for name, help_text, attr in _TASK_ERROR_METRICS:
        metric = UnknownMetricFamily(name, help_text, labels=["connector", "task"])
        for connector, task, counts in tasks:
            metric.add_metric([connector, task], getattr(counts, attr))
        yield metric
    last = GaugeMetricFamily("sparkcat_task_last_error_timestamp_seconds",
                             "When a record of the task last failed (epoch seconds; 0: never), Connect's "
                             "last-error-timestamp.", labels=["connector", "task"])
    for connector, task, counts in tasks:
        last.add_metric([connector, task], counts.last_error_s)
    yield last


def registry(read: Callable[[], Snapshot], clock: Callable[[], float] = time.time) -> CollectorRegistry:
    """A registry holding only the connector collector (not the process-wide default one)."""
    out = CollectorRegistry(auto_describe=False)
    out.register(ConnectorCollector(read, clock))
    return out


def exposition(metrics: CollectorRegistry) -> str:
    return generate_latest(metrics).decode()


def render(progress: Iterable[tuple[str, Any]], statuses: Iterable[dict[str, Any]],
           classes: dict[str, connect_metrics.ConnectorIdentity] | None = None, now: float | None = None) -> str:
    """The exposition text for ``progress`` (name, progress), connector ``statuses`` and ``classes`` at ``now``."""
    return exposition(registry(lambda: (progress, statuses, classes or {}),
                               time.time if now is None else (lambda: now)))
