"""What every connector's lifecycle works with, built once by the ``Reconciler`` and shared by all of them."""

from __future__ import annotations

from dataclasses import dataclass, field

from sparkcat import redact
from sparkcat.config.validation import secret_keys
from sparkcat.config.worker import WorkerConfig
from sparkcat.policy.input_policy import InputPolicy
from sparkcat.runtime.execution.config_reloads import ConfigReloads
from sparkcat.runtime.execution.query_runner import QueryRunner
from sparkcat.runtime.execution.query_threads import QueryThreads
from sparkcat.runtime.execution.reconfiguration import Reconfigurations
from sparkcat.runtime.execution.status_reporter import StatusReporter
from sparkcat.runtime.execution.task_configs import TaskConfigWrites
from sparkcat.storage.factory import Stores


@dataclass
class ExecutionServices:
    """The stores, the status reporter, the query runner and threads, and the worker's settings and policy."""

    stores: Stores
    reporter: StatusReporter
    runner: QueryRunner
    threads: QueryThreads
    worker: WorkerConfig
    policy: InputPolicy
    reconfigurations: Reconfigurations
    task_configs: TaskConfigWrites
    reloads: ConfigReloads = field(default_factory=ConfigReloads)

    def resolved_config(self, config: dict[str, str], where: str, connector: str | None = None,
                        connector_config: dict[str, str] | None = None) -> dict[str, str]:
        """``config`` with its provider placeholders resolved, every secret in it remembered for scrubbing.

        With ``connector``: the ttls the providers gave schedule its reload (``config_reloads``), as Connect's
        ``WorkerConfigTransformer.transform(connectorName, configs)`` does, by the ``config.action.reload`` of
        ``connector_config`` (default ``config``: an embedded sink's config is part of its connector's).
        """
        resolved, ttls = self.policy.config_providers.resolved_with_ttls(config, where)
        redact.remember_config_secrets(resolved, secret_keys(config, self.policy))
        if connector is not None:
            self.reloads.schedule(connector, config if connector_config is None else connector_config, ttls)
        return resolved
