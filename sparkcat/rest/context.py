"""What the REST handlers reach on the driver: the herder (writes, config reads) and the read-only views."""

from __future__ import annotations

from dataclasses import dataclass, field

from sparkcat.policy.input_policy import InputPolicy
from sparkcat.rest.cluster import ClusterInfo
from sparkcat.rest.errors import ServiceUnavailableError
from sparkcat.runtime.control.herder_api import DriverApi, HerderApi
from sparkcat.runtime.control.logger_levels import LoggerLevels

#: How long a request waits for the herder to finish reading the config log at start-up.
READY_TIMEOUT_S = 30.0


@dataclass
class RestContext:
    """The driver as the API sees it (``runtime.herder_api.DriverApi``). Reads go through the herder."""

    driver: DriverApi
    cluster: ClusterInfo = field(init=False)

    def __post_init__(self) -> None:
        self.cluster = ClusterInfo(self.driver.worker)

    @property
    def loggers(self) -> LoggerLevels:
        """This driver's logger levels (``/admin/loggers``; the herder applies cluster-scoped ones to them)."""
        return self.driver.loggers

    @property
    def herder(self) -> HerderApi:
        """The herder once it has read the config log up to where it stood at start (503 otherwise)."""
        herder = self.driver.herder
        if herder is None or not herder.wait_ready(READY_TIMEOUT_S):
            raise ServiceUnavailableError("Worker is still starting up.")
        return herder

    @property
    def policy(self) -> InputPolicy:
        """The worker's limits on connector configs (plugin packages, allowed dirs, config providers)."""
        herder = self.driver.herder
        return herder.policy if herder is not None else InputPolicy.of(self.driver.worker)

    @property
    def health_problem(self) -> str | None:
        """Why the driver is not live (the herder or the config stream is down), or None."""
        return self.driver.health_problem()

    @property
    def ready(self) -> bool:
        herder = self.driver.herder
        return herder is not None and herder.ready
