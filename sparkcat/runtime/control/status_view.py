"""Connector status in Kafka Connect's JSON shape, built from the stores (the herder's reads, and the CLI's)."""

from __future__ import annotations

from typing import Any

from sparkcat import plugins
from sparkcat.errors import NotFoundError, SparkcatError
from sparkcat.model.config_state import ClusterConfigState
from sparkcat.model.status import Status
from sparkcat.policy.input_policy import InputPolicy
from sparkcat.storage.offsets import OffsetStore
from sparkcat.storage.status import StatusStore


def connector_type(config: dict[str, str], policy: InputPolicy | None = None) -> str:
    """``source``/``sink`` of a config's connector class, ``unknown`` if it cannot be loaded.

    A class on the worker's plugin.path (``policy``) is that Java connector, as the runtime runs it, whether or
    not sparkcat has a Python connector of the same name (MirrorSourceConnector has none).
    """
    try:
        java = policy.java_connector(config.get("connector.class")) if policy is not None else None
        return java or plugins.connector_type(plugins.connector_class(config.get("connector.class")))
    except SparkcatError:
        return "unknown"


def _state_json(status: Status | None) -> dict[str, Any]:
    if status is None:
        return {"state": "UNASSIGNED", "worker_id": ""}
    out: dict[str, Any] = {"state": status.state.value, "worker_id": status.worker_id}
    if status.trace:
        out["trace"] = status.trace
    return out


def task_status(name: str, task: int, store: StatusStore) -> dict[str, Any]:
    return {"id": task, **_state_json(store.get_task(name, task))}


def connector_status(name: str, state: ClusterConfigState, store: StatusStore,
                     policy: InputPolicy | None = None) -> dict[str, Any]:
    """``GET /connectors/NAME/status``: connector state plus one entry per committed task (``policy``: the worker's,
    for the type of a Java connector on its plugin.path)."""
    config = state.connector_config(name)
    if config is None:
        raise NotFoundError(f"Connector {name} not found")
    tasks = [task_status(name, t, store) for t in state.task_ids(name)]
    return {"name": name, "connector": _state_json(store.get(name)), "tasks": tasks,
            "type": connector_type(config, policy)}


def connector_offsets(name: str, offsets: OffsetStore) -> list[dict[str, Any]]:
    """``{"partition", "offset"}`` pairs as Connect's offsets API lists them."""
    return [{"partition": p, "offset": o} for p, o in offsets.partitions(name)]
