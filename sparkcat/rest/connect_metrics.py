"""Kafka Connect's metric groups in ``GET /metrics``, named as the Prometheus JMX exporter names Connect's MBeans.

An operator who scrapes Connect through the JMX exporter has dashboards over series such as
``kafka_connect_sink_task_sink_record_read_rate{connector,task}``. These are the same series, from
what sparkcat knows: each task's committed batches (``runtime.execution.progress``), the connector
statuses, and the connector configs.

Names follow the rules of the JMX exporter's example ``examples/kafka-connect.yml``
(prometheus/jmx_exporter): a task group ``kafka.connect:type=GROUP-metrics,connector=C,task=T``
attribute ``A`` becomes ``kafka_connect_GROUP_A{connector,task}``; ``connect-worker-metrics`` becomes
``kafka_connect_worker_A`` (``{connector}`` for its per-connector attributes) and a task's ``status``
``kafka_connect_connector_status{connector,task,status}`` (value 1); ``-`` is written ``_``. That
example keeps only some suffixes (``-total``, ``-avg``, ``-ms``...); the ``-rate`` and ``-max``
attributes here are named by the same rule. It has no rule for ``connector-metrics``: its string
attributes are exposed as ``kafka_connect_connector_metrics_A{connector,A}`` (value 1), the group
spelled whole so that the connector's status does not share the task status series.

Rates are over Connect's metrics window. Connect keeps ``metrics.num.samples`` (2) samples of
``metrics.sample.window.ms`` (30 s) and divides what they hold by the time they span, at least
30 s; sparkcat takes the records of the batches committed in the last 30 s divided by 30 s, so a
steady pace reads the same. Averages and maxima are over the same batches, NaN when there were
none (as Connect's ``Avg`` and ``Max`` answer).
A metric sparkcat cannot compute honestly is not exposed; ``LEFT_OUT`` lists them with the reason.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from prometheus_client.core import GaugeMetricFamily, Metric

from sparkcat import plugins

#: Connect's metrics window for rates, averages and maxima (see the module docstring).
WINDOW_S = 30.0

_TASK_STATES = ("running", "paused", "failed", "unassigned", "destroyed", "restarting")


def prometheus_name(group: str, attribute: str) -> str:
    """The name the JMX exporter's example Connect rules give ``attribute`` of ``group``.

    >>> prometheus_name("source-task-metrics", "source-record-write-rate")
    'kafka_connect_source_task_source_record_write_rate'
    >>> prometheus_name("connect-worker-metrics", "connector-count")
    'kafka_connect_worker_connector_count'
    >>> prometheus_name("connector-task-metrics", "status")
    'kafka_connect_connector_status'
    >>> prometheus_name("connect-worker-rebalance-metrics", "epoch")
    'kafka_connect_worker_rebalance_epoch'
    """
    if group == "connector-task-metrics" and attribute == "status":
        base = "connector_status"
    elif group == "connect-worker-metrics":
        base = f"worker_{attribute}"
    elif group == "connect-worker-rebalance-metrics":
        base = f"worker_rebalance_{attribute}"
    elif group == "connector-metrics":
        base = f"connector_metrics_{attribute}"
    else:
        base = f"{group.removesuffix('-metrics')}_{attribute}"
    return "kafka_connect_" + base.replace("-", "_")


@dataclass(frozen=True)
class ConnectorIdentity:
    """A connector's ``connector-class`` and ``connector-version`` as Connect reports them (its class's name and
    ``version()``), with the class named as ``GET /connector-plugins`` names it."""

    class_name: str
    version: str | None = None


def connector_identity(config_class: str, policy: Any = None) -> ConnectorIdentity:
    """The identity of the connector whose ``connector.class`` is ``config_class`` (an alias, Java name or path).

    A Java connector from plugin.path keeps the configured name and no version (its version lives in the
    driver's JVM); a Python connector is named as ``GET /connector-plugins`` lists it, with its ``version()``.
    """
    name = (config_class or "").strip()
    if policy is not None and policy.java_connector(name) is not None:
        return ConnectorIdentity(name)
    packages = tuple(policy.plugin_packages) if policy is not None else tuple(plugins.DEFAULT_PACKAGES)
    return _python_identity(name, packages)


@functools.lru_cache(maxsize=256)
def _python_identity(name: str, packages: Sequence[str]) -> ConnectorIdentity:
    path = plugins.class_path_of(name)
    listed = {f"{cls.__module__}:{cls.__qualname__}": shown for shown, cls in plugins.builtin_plugins()}
    try:
        cls = plugins.connector_class(name, packages)
        version = str(cls().version())
    except Exception:  # a class that no longer loads: its class name still shows, no version
        return ConnectorIdentity(listed.get(path, name))
    return ConnectorIdentity(listed.get(f"{cls.__module__}:{cls.__qualname__}", listed.get(path, name)), version)


@dataclass(frozen=True)
class TaskView:
    """One task at one scrape: its connector's type, its committed batches and error counts, its state."""

    connector: str
    task: int
    kind: str            # "source" or "sink"
    progress: Any        # progress.TaskProgress, or None before its first batch
    errors: Any          # model.error_metrics.ErrorCounts, or None
    now: float

    def window(self) -> list[int]:
        """Records of each of the task's batches committed in the last ``WINDOW_S``."""
        history = [] if self.progress is None else list(self.progress.history)
        return [records for at, records in history if at > self.now - WINDOW_S]


def records_total(t: TaskView) -> float:
    return 0 if t.progress is None else t.progress.records


def records_rate(t: TaskView) -> float:
    return sum(t.window()) / WINDOW_S


def batches_total(t: TaskView) -> float:
    return 0 if t.progress is None else t.progress.batches


def batches_rate(t: TaskView) -> float:
    return len(t.window()) / WINDOW_S


def batch_size_avg(t: TaskView) -> float:
    sizes = t.window()
    return sum(sizes) / len(sizes) if sizes else math.nan


def batch_size_max(t: TaskView) -> float:
    sizes = t.window()
    return max(sizes) if sizes else math.nan


def _error(attr: str, scale: float = 1) -> Callable[[TaskView], float]:
    return lambda t: 0 if t.errors is None else getattr(t.errors, attr) * scale


@dataclass(frozen=True)
class TaskMetric:
    """One of Connect's per-task metrics sparkcat exposes: where it is, which tasks have it, how it is computed."""

    group: str
    attribute: str
    kinds: tuple[str, ...]               # the connector types whose tasks have it
    value: Callable[[TaskView], float]
    how: str                             # how sparkcat computes it (docs/running.md)

    @property
    def name(self) -> str:
        return prometheus_name(self.group, self.attribute)


_BOTH, _SOURCE, _SINK = ("source", "sink"), ("source",), ("sink",)
_WINDOW = "over the batches committed in the last 30 s"
_ERR = "counted where a record is handled, summed per task over its committed batches and its failure"

TASK_METRICS = (
    TaskMetric("connector-task-metrics", "batch-size-avg", _BOTH, batch_size_avg,
               f"records per micro-batch of the task, average {_WINDOW}"),
    TaskMetric("connector-task-metrics", "batch-size-max", _BOTH, batch_size_max,
               f"records per micro-batch of the task, largest {_WINDOW}"),
    TaskMetric("source-task-metrics", "source-record-write-total", _SOURCE, records_total,
               "records the task's committed micro-batches wrote to Kafka since the driver started"),
    TaskMetric("source-task-metrics", "source-record-write-rate", _SOURCE, records_rate,
               f"those records {_WINDOW}, per second"),
    TaskMetric("sink-task-metrics", "sink-record-read-total", _SINK, records_total,
               "records the task's committed micro-batches read and converted since the driver started "
               "(records that failed conversion are in total-record-errors)"),
    TaskMetric("sink-task-metrics", "sink-record-read-rate", _SINK, records_rate,
               f"those records {_WINDOW}, per second"),
    TaskMetric("sink-task-metrics", "offset-commit-completion-total", _SINK, batches_total,
               "committed micro-batches of the task: each commits its offsets with the batch"),
    TaskMetric("sink-task-metrics", "offset-commit-completion-rate", _SINK, batches_rate,
               f"those commits {_WINDOW}, per second"),
    TaskMetric("task-error-metrics", "total-record-failures", _BOTH, _error("record_failures"), _ERR),
    TaskMetric("task-error-metrics", "total-record-errors", _BOTH, _error("record_errors"), _ERR),
    TaskMetric("task-error-metrics", "total-records-skipped", _BOTH, _error("records_skipped"),
               _ERR + " (errors.tolerance=all)"),
    TaskMetric("task-error-metrics", "total-errors-logged", _BOTH, _error("errors_logged"),
               _ERR + " (errors.log.enable)"),
    TaskMetric("task-error-metrics", "deadletterqueue-produce-requests", _BOTH, _error("dlq_produce_requests"),
               _ERR),
    TaskMetric("task-error-metrics", "deadletterqueue-produce-failures", _BOTH, _error("dlq_produce_failures"),
               _ERR),
    TaskMetric("task-error-metrics", "last-error-timestamp", _BOTH, _error("last_error_ms"),
               "epoch ms of the task's last failed record, 0 if none"),
)

#: (group, attribute, labels beyond connector and task, how) of the metrics computed from statuses and configs.
STATE_METRICS = (
    ("connector-task-metrics", "status", "task, status",
     "1 for the task's state in its status (lower case, as Connect's MBean attribute), on the driver that runs it"),
    ("connector-metrics", "status", "status",
     "1 for the connector's state in its status (lower case), on the driver that runs it"),
    ("connector-metrics", "connector-type", "connector_type", "1, labelled source or sink"),
    ("connector-metrics", "connector-class", "connector_class",
     "1, labelled with the connector's class as GET /connector-plugins names it"),
    ("connector-metrics", "connector-version", "connector_version",
     "1, labelled with the connector's version() (not for Java connectors from plugin.path)"),
    ("connect-worker-metrics", "connector-count", "(none)", "connectors whose queries this driver runs"),
    ("connect-worker-metrics", "task-count", "(none)", "tasks of those connectors"),
    ("connect-worker-metrics", "connector-total-task-count", "(connector only)",
     "tasks of a connector this driver runs, in its status"),
) + tuple(("connect-worker-metrics", f"connector-{s}-task-count", "(connector only)",
           f"tasks of the connector whose status is {s.upper()}") for s in _TASK_STATES)

#: (group, attribute or attributes, why sparkcat leaves them out).
LEFT_OUT = (
    ("connector-metrics", "connector-version of a Java connector from plugin.path",
     "its version() is not asked of the driver's JVM at each scrape"),
    ("connector-task-metrics", "running-ratio, pause-ratio", "time spent per state is not kept"),
    ("connector-task-metrics", "offset-commit-avg/max-time-ms, offset-commit-success/failure-percentage",
     "offsets commit with the micro-batch; a failed commit fails the query, not counted apart"),
    ("connector-task-metrics", "task-class, task-version, *-converter-class/version", "not kept per task"),
    ("source-task-metrics", "source-record-poll-rate/total", "records dropped by transforms are not counted apart "
     "from those written"),
    ("source-task-metrics", "poll-batch-avg/max-time-ms", "a micro-batch's duration covers more than poll()"),
    ("source-task-metrics", "source-record-active-count*, transaction-size-*", "not counted per task"),
    ("sink-task-metrics", "sink-record-send-rate/total", "records dropped by transforms are not counted apart "
     "from those read"),
    ("sink-task-metrics", "put-batch-avg/max-time-ms", "a micro-batch's duration covers more than put()"),
    ("sink-task-metrics", "sink-record-lag-max", "Spark reports lag per query, not per task: see "
     "sparkcat_connector_offsets_behind_latest"),
    ("sink-task-metrics", "partition-count, offset-commit-seq-no, offset-commit-skip-*, sink-record-active-count*",
     "not counted per task"),
    ("task-error-metrics", "total-retries", "sparkcat has no per-record retries"),
    ("connect-worker-metrics", "connector-startup-*, task-startup-*", "start attempts are not counted"),
    ("connect-worker-rebalance-metrics", "connect-protocol", "the drivers' group speaks Kafka's consumer "
     "protocol (eager, range assignor), not one of Connect's protocols (eager, compatible, sessioned)"),
    ("connect-worker-rebalance-metrics", "all, with local stores", "one driver on a state directory lock forms no "
     "group and never rebalances"),
)

_REBALANCE = "connect-worker-rebalance-metrics"
#: (attribute, how sparkcat derives it, the value from a ``RebalanceView``): the drivers' leader group's join
#: rounds (``runtime.control.rebalances``); only with Kafka stores.
REBALANCE_METRICS: tuple[tuple[str, str, Callable[[Any], float]], ...] = (
    ("epoch", "the leader group's generation this driver's last completed join round gave it",
     lambda v: math.nan if v.epoch is None else v.epoch),
    ("rebalancing", "1 from this driver revoking its assignment (or joining) until its new assignment arrives",
     lambda v: 1.0 if v.rebalancing else 0.0),
    ("completed-rebalances-total", "join rounds of the leader group this driver completed since it started",
     lambda v: v.completed_total),
    ("rebalance-avg-time-ms", "mean time from revoke (or join) to assignment of the rounds completed in the last "
     "30 s; NaN without one", lambda v: v.avg_time_ms),
    ("rebalance-max-time-ms", "the longest of those rounds; NaN without one", lambda v: v.max_time_ms),
    ("time-since-last-rebalance-ms", "since this driver's last completed round (+Inf before its first)",
     lambda v: v.time_since_last_ms),
)


def collect(progress: Iterable[tuple[str, Any]], statuses: Iterable[dict[str, Any]],
            classes: dict[str, ConnectorIdentity], now: float | None = None,
            rebalance: Any = None) -> Iterator[Metric]:
    """Connect's metric families for ``progress`` (name, Progress), ``statuses`` and connector ``classes``;
    ``rebalance``: the leader group's ``RebalanceView`` (None without a group: no rebalance metrics)."""
    now = time.time() if now is None else now
    progress = dict(progress)
    # as a Connect worker has the MBeans of the connectors it runs only: a standby driver shows none, and
    # a dashboard summing over every driver it scrapes counts each connector once
    statuses = [s for s in statuses if s["name"] in progress]
    yield from _task_metrics(_task_views(progress, statuses, now))
    yield from _status_metrics(statuses, classes)
    yield from _worker_metrics(progress, statuses)
    if rebalance is not None:
        yield from _rebalance_metrics(rebalance)


def _rebalance_metrics(view: Any) -> Iterator[Metric]:
    """connect-worker-rebalance-metrics of this driver (not per connector: one series each)."""
    for attr, how, value in REBALANCE_METRICS:
        family = GaugeMetricFamily(prometheus_name(_REBALANCE, attr), f"Kafka Connect {_REBALANCE} {attr}: {how}.")
        family.add_metric([], value(view))
        yield family
    leader = GaugeMetricFamily(prometheus_name(_REBALANCE, "leader-name"),
                               f"Kafka Connect {_REBALANCE} leader-name: 1, labelled with the leader's URL.",
                               labels=["leader_name"])
    if view.leader_name:
        leader.add_metric([view.leader_name], 1)
    yield leader


def _task_views(progress: dict[str, Any], statuses: list[dict[str, Any]], now: float) -> list[TaskView]:
    """A view of every task of a connector this driver runs (from its status, or its batches before one)."""
    kinds = {s["name"]: s.get("type", "") for s in statuses}
    views = []
    for connector, p in sorted(progress.items()):
        tasks = getattr(p, "tasks", None) or {}
        errors = getattr(p, "task_errors", None) or {}
        listed = {t["id"] for s in statuses if s["name"] == connector for t in s["tasks"]}
        for task in sorted(listed | set(tasks) | set(errors)):
            views.append(TaskView(connector, task, kinds.get(connector, ""), tasks.get(task), errors.get(task), now))
    return views


def _task_metrics(views: list[TaskView]) -> Iterator[Metric]:
    for m in TASK_METRICS:
        family = GaugeMetricFamily(m.name, f"Kafka Connect {m.group} {m.attribute}: {m.how}.",
                                   labels=["connector", "task"])
        for v in views:
            if v.kind in m.kinds or m.kinds == _BOTH:
                family.add_metric([v.connector, str(v.task)], m.value(v))
        yield family


def _status_metrics(statuses: list[dict[str, Any]], classes: dict[str, ConnectorIdentity]) -> Iterator[Metric]:
    task_status = GaugeMetricFamily(prometheus_name("connector-task-metrics", "status"),
                                    "Kafka Connect connector-task-metrics status: 1 for the task's state.",
                                    labels=["connector", "task", "status"])
    families = {attr: GaugeMetricFamily(prometheus_name("connector-metrics", attr),
                                        f"Kafka Connect connector-metrics {attr}: 1, labelled with its value.",
                                        labels=["connector", label])
                for attr, label in (("status", "status"), ("connector-type", "connector_type"),
                                    ("connector-class", "connector_class"),
                                    ("connector-version", "connector_version"))}
    for s in statuses:
        name = s["name"]
        families["status"].add_metric([name, s["connector"]["state"].lower()], 1)
        if s.get("type"):
            families["connector-type"].add_metric([name, s["type"]], 1)
        identity = classes.get(name)
        if identity is not None and identity.class_name:
            families["connector-class"].add_metric([name, identity.class_name], 1)
        if identity is not None and identity.version:
            families["connector-version"].add_metric([name, identity.version], 1)
        for t in s["tasks"]:
            task_status.add_metric([name, str(t["id"]), t["state"].lower()], 1)
    yield task_status
    yield from families.values()


def _worker_metrics(progress: dict[str, Any], statuses: list[dict[str, Any]]) -> Iterator[Metric]:
    """connect-worker-metrics: the connectors this driver runs, and each one's tasks by state."""
    count = GaugeMetricFamily(prometheus_name("connect-worker-metrics", "connector-count"),
                              "Kafka Connect connect-worker-metrics connector-count: connectors this driver runs.")
    count.add_metric([], len(progress))
    tasks = GaugeMetricFamily(prometheus_name("connect-worker-metrics", "task-count"),
                              "Kafka Connect connect-worker-metrics task-count: tasks of the connectors it runs.")
    tasks.add_metric([], sum(len(s["tasks"]) for s in statuses))
    yield from (count, tasks)
    total = GaugeMetricFamily(prometheus_name("connect-worker-metrics", "connector-total-task-count"),
                              "Kafka Connect connect-worker-metrics connector-total-task-count.", labels=["connector"])
    for s in statuses:
        total.add_metric([s["name"]], len(s["tasks"]))
    yield total
    for state in _TASK_STATES:
        attr = f"connector-{state}-task-count"
        family = GaugeMetricFamily(prometheus_name("connect-worker-metrics", attr),
                                   f"Kafka Connect connect-worker-metrics {attr}.", labels=["connector"])
        for s in statuses:
            family.add_metric([s["name"]], sum(1 for t in s["tasks"] if t["state"].lower() == state))
        yield family


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def reference_table() -> str:
    """The Markdown tables of docs/running.md (Connect's metrics in ``/metrics``), rendered from this module."""
    rows = ["| Connect group | Connect metric | Prometheus name (labels) | how sparkcat computes it |",
            "|---|---|---|---|"]
    for m in TASK_METRICS:
        rows.append(f"| {m.group} | `{m.attribute}` | `{m.name}` (connector, task) | {_cell(m.how)} |")
    for group, attr, labels, how in STATE_METRICS:
        shown = labels if labels.startswith("(") else f"(connector, {labels})"
        rows.append(f"| {group} | `{attr}` | `{prometheus_name(group, attr)}` {shown} | {_cell(how)} |")
    for attr, how, _ in REBALANCE_METRICS:
        rows.append(f"| {_REBALANCE} | `{attr}` | `{prometheus_name(_REBALANCE, attr)}` (none) | {_cell(how)} |")
    rows.append(f"| {_REBALANCE} | `leader-name` | `{prometheus_name(_REBALANCE, 'leader-name')}` (leader_name) | "
                "1, labelled with the URL of the driver that leads, as this driver knows it |")
    rows += ["", "Left out (sparkcat cannot compute them honestly):", "",
             "| Connect group | Connect metrics | why |", "|---|---|---|"]
    rows += [f"| {group} | `{attrs}` | {_cell(why)} |" for group, attrs, why in LEFT_OUT]
    return "\n".join(rows) + "\n"
