"""What every connector's lifecycle works with, built once by the ``Reconciler`` and shared by all of them."""

from __future__ import annotations

from dataclasses import dataclass

from sparkcat import redact
from sparkcat.config.validation import secret_keys
from sparkcat.config.worker import WorkerConfig
from sparkcat.policy.input_policy import InputPolicy
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

    def resolved_config(self, config: dict[str, str], where: str) -> dict[str, str]:
        """``config`` with its provider placeholders resolved, every secret in it remembered for scrubbing."""
        resolved = self.policy.config_providers.resolved(config, where)
        redact.remember_config_secrets(resolved, secret_keys(config, self.policy))
        return resolved
