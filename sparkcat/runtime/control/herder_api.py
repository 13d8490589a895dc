"""What the REST API may ask of the driver and its herder: typed seams instead of ``Any`` and ``hasattr``.

``rest/`` depends on these protocols only; ``runtime.herder.Herder`` and ``bootstrap.Driver`` implement them
(checked by a unit test). A driver still starting has no herder yet (``herder`` is None): REST answers 503.
"""

from __future__ import annotations

from typing import Any, Callable, Protocol

from sparkcat.model.config_state import ClusterConfigState, TargetState
from sparkcat.policy.input_policy import InputPolicy
from sparkcat.runtime.execution.progress import Progress
from sparkcat.runtime.control.logger_levels import LoggerLevels
from sparkcat.config.worker import WorkerConfig
from sparkcat.runtime.leadership import WriteRoute

#: How long a write waits to be taken (while the group elects a leader, or this driver takes up the leadership) and
#: then to run; Connect's herder requests time out alike. REST forwards with a longer timeout.
REQUEST_TIMEOUT_S = 60.0


class HerderApi(Protocol):
    """Connect's ``Herder`` as REST uses it: reads of the config state and status, and writes through the leader."""

    @property
    def ready(self) -> bool: ...

    @property
    def is_leader(self) -> bool: ...

    @property
    def leader_url(self) -> str | None: ...

    @property
    def policy(self) -> InputPolicy: ...

    def wait_ready(self, timeout_s: float = 120.0) -> bool: ...

    def wait_role(self, timeout_s: float) -> bool: ...

    def write_route(self) -> WriteRoute: ...

    def wait_route(self, settled: Callable[[WriteRoute], bool], timeout_s: float) -> WriteRoute: ...

    def snapshot(self) -> ClusterConfigState: ...

    def connector_config(self, name: str) -> dict[str, str]: ...

    def connector_status(self, name: str, state: ClusterConfigState | None = None) -> dict[str, Any]: ...

    def task_status(self, name: str, task: int) -> dict[str, Any]: ...

    def active_topics(self, name: str) -> list[str]: ...

    def running_connectors(self) -> list[str]: ...

    def connector_progress(self) -> list[tuple[str, Progress]]: ...

    def put_connector_config(self, name: str, config: dict[str, str], *, allow_replace: bool = True,
                             initial_state: TargetState | None = None) -> bool: ...

    def delete_connector(self, name: str) -> None: ...

    def set_target_state(self, name: str, target: TargetState) -> None: ...

    def restart_connector(self, name: str, include_tasks: bool = False, only_failed: bool = False) -> None: ...

    def restart_task(self, name: str, task: int) -> None: ...

    def set_cluster_logger_level(self, namespace: str, level: str) -> None: ...

    def connector_offsets(self, name: str) -> list[tuple[dict[str, Any], Any]]: ...

    def alter_connector_offsets(self, name: str, offsets: list[tuple[Any, Any]]) -> None: ...

    def reset_connector_offsets(self, name: str) -> None: ...

    def reset_connector_active_topics(self, name: str) -> None: ...


class DriverApi(Protocol):
    """The driver as REST sees it: its worker config, its herder (None while starting), its loggers and health."""

    worker: WorkerConfig
    loggers: LoggerLevels

    @property
    def herder(self) -> HerderApi | None: ...

    def health_problem(self) -> str | None: ...
