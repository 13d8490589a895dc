"""A driver without Spark for REST tests: the real herder, reconciler and stores (in memory).

The config log reaches the herder through a thread standing in for the driver's Spark
stream; no query can start, so tests keep connectors PAUSED or STOPPED.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from sparkcat.rest.app import create_app
from sparkcat.runtime.control.herder import Herder
from sparkcat.runtime.execution.batch_accounting import BatchAccounting
from sparkcat.runtime.execution.status_reporter import new_status_reporter
from sparkcat.runtime.control.logger_levels import LoggerLevels
from sparkcat.runtime.execution.query_runner import QueryRunner
from sparkcat.runtime.execution.reconciler import Reconciler
from sparkcat.config.worker import WorkerConfig
from sparkcat.storage.factory import memory_stores


class SparklessRunner(QueryRunner):
    """A QueryRunner without Spark: no query ever runs, so checkpoint deletions are only recorded.

    The deletion itself goes through Hadoop's FileSystem (tests/integration/spark/test_hadoop_fs.py).
    """

    def __init__(self, batches):
        super().__init__(None, batches)
        self.deleted_checkpoints: list[str] = []

    def delete_checkpoint(self, path: str) -> None:
        self.deleted_checkpoints.append(path)


class SparklessDriver:
    """What ``create_app`` needs from a driver (``runtime.herder_api.DriverApi``), and the stores and reconciler."""

    def __init__(self, state_dir: Path):
        self.worker = WorkerConfig(state_dir=str(state_dir), group_id="rest-unit",
                                   file_allowed_dirs=[str(state_dir.parent)],  # tests write beside state
                                   plugin_packages=["sparkcat.connectors", "tests.unit.rest"])
        self.driver_id = "test-driver:8083"
        self.stores = memory_stores()
        reporter = new_status_reporter(self.stores, self.driver_id)
        accounting = BatchAccounting(self.stores, reporter)
        self.reconciler = Reconciler(self.stores, reporter, SparklessRunner(accounting), self.worker, accounting)
        self.loggers = LoggerLevels()
        self.herder = Herder(self.stores, self.reconciler, self.driver_id, loggers=self.loggers)
        self._stop = threading.Event()
        self._feeder = threading.Thread(target=self._feed, daemon=True)

    def _feed(self) -> None:
        next_offset = 0
        while not self._stop.wait(0.02):
            records = self.stores.config.backend.read(next_offset)
            if records:
                self.herder.on_config_records(records)
                next_offset = records[-1].offset + 1

    def start(self) -> None:
        self.herder.start()
        self._feeder.start()
        assert self.herder.wait_ready(30)

    def stop(self) -> None:
        self.herder.stop()
        self._stop.set()
        self._feeder.join(5)

    def health_problem(self) -> str | None:
        """As ``Driver.health_problem``, without a config stream."""
        from sparkcat.runtime.supervision import unhealthy_reason
        return unhealthy_reason(self.herder)

    def config_log_end(self) -> int:
        return self.stores.config.backend.end_offset()


@pytest.fixture
def driver(tmp_path: Path) -> Iterator[SparklessDriver]:
    d = SparklessDriver(tmp_path / "state")
    d.start()
    yield d
    d.stop()


@pytest.fixture
def client(driver: SparklessDriver) -> Iterator[TestClient]:
    # localhost, not TestClient's "testserver": the Host allow-list admits loopback names only.
    with TestClient(create_app(driver), base_url="http://localhost", raise_server_exceptions=False) as c:
        yield c
