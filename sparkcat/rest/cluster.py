"""``GET /``: Connect's ``ServerInfo`` (version, commit, Kafka cluster id)."""

from __future__ import annotations

import functools
import subprocess
import threading
from pathlib import Path

from sparkcat import __version__
from sparkcat.errors import StorageError
from sparkcat.kafka.client_settings import admin_settings
from sparkcat.config.worker import WorkerConfig


@functools.lru_cache(maxsize=1)
def commit_id() -> str:
    """The short git sha of the checkout sparkcat runs from, or ``unknown`` (installed package, no git)."""
    source = Path(__file__).resolve().parents[2]
    try:
        top = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=source, capture_output=True,
                             text=True, timeout=5)
        if top.returncode != 0 or Path(top.stdout.strip()).resolve() != source:
            return "unknown"
        sha = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=source, capture_output=True,
                             text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return sha.stdout.strip() if sha.returncode == 0 and sha.stdout.strip() else "unknown"


class ClusterInfo:
    """The ``GET /`` body; the Kafka cluster id is asked from the broker once, then cached."""

    def __init__(self, worker: WorkerConfig, timeout_s: float = 10.0):
        self.worker = worker
        self.timeout_s = timeout_s
        self._cluster_id: str | None = None
        self._lock = threading.Lock()

    def kafka_cluster_id(self) -> str:
        """The broker's cluster id with Kafka stores; the worker's group id with local stores."""
        if not self.worker.uses_kafka:
            return self.worker.group_id
        with self._lock:
            if self._cluster_id is None:
                self._cluster_id = self._fetch_cluster_id()
            return self._cluster_id

    def _fetch_cluster_id(self) -> str:
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AdminClient

        admin = AdminClient(admin_settings(self.worker.bootstrap_servers, self.worker.kafka))
        try:
            metadata = admin.list_topics(timeout=self.timeout_s)
        except KafkaException as e:
            raise StorageError(f"Could not read the Kafka cluster id from {self.worker.bootstrap_servers}: {e}") \
                from e
        if not metadata.cluster_id:
            raise StorageError(f"The broker at {self.worker.bootstrap_servers} did not report a cluster id")
        return metadata.cluster_id

    def server_info(self) -> dict[str, str]:
        return {"version": __version__, "commit": commit_id(), "kafka_cluster_id": self.kafka_cluster_id()}
