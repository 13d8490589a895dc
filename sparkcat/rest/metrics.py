"""``GET /metrics``: Prometheus text exposition of connector and task progress.

Counters come from the reconciler's connector runtimes (what this driver's queries
committed since it started); states come from the status store.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

_CONNECTOR_METRICS = (
    ("sparkcat_connector_records_total", "counter",
     "Records the connector's query committed since this driver started.", "records"),
    ("sparkcat_connector_batches_total", "counter",
     "Micro-batches the connector's query committed since this driver started.", "batches"),
    ("sparkcat_connector_last_batch_duration_seconds", "gauge",
     "Duration of the connector's last committed micro-batch.", "last_batch_s"),
)


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(**labels: object) -> str:
    return "{" + ",".join(f'{k}="{_escape(str(v))}"' for k, v in labels.items()) + "}"


def _number(value: float) -> str:
    return repr(float(value)) if isinstance(value, float) else str(value)


def render(runtimes: Iterable[tuple[str, Any]], statuses: Iterable[dict[str, Any]]) -> str:
    """The exposition text for ``runtimes`` (name, ConnectorRuntime) and connector ``statuses``.

    ``statuses`` are ``GET /connectors/NAME/status`` bodies.
    """
    runtimes = list(runtimes)
    statuses = list(statuses)
    lines: list[str] = []
    for metric, kind, help_text, attr in _CONNECTOR_METRICS:
        lines += [f"# HELP {metric} {help_text}", f"# TYPE {metric} {kind}"]
        lines += [f"{metric}{_labels(connector=name)} {_number(getattr(rt, attr))}" for name, rt in runtimes]
    lines += ["# HELP sparkcat_connector_state The connector's state (1 for its current state).",
              "# TYPE sparkcat_connector_state gauge"]
    for s in statuses:
        c = s["connector"]
        lines.append(f"sparkcat_connector_state{_labels(connector=s['name'], state=c['state'], worker_id=c['worker_id'])} 1")
    lines += ["# HELP sparkcat_task_state The task's state (1 for its current state).",
              "# TYPE sparkcat_task_state gauge"]
    for s in statuses:
        for t in s["tasks"]:
            labels = _labels(connector=s["name"], task=t["id"], state=t["state"], worker_id=t["worker_id"])
            lines.append(f"sparkcat_task_state{labels} 1")
    lines += ["# HELP sparkcat_task_failed Whether the task is FAILED (1) or not (0).",
              "# TYPE sparkcat_task_failed gauge"]
    for s in statuses:
        for t in s["tasks"]:
            lines.append(f"sparkcat_task_failed{_labels(connector=s['name'], task=t['id'])} "
                         f"{1 if t['state'] == 'FAILED' else 0}")
    return "\n".join(lines) + "\n"
