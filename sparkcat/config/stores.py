"""Wires a worker config to its three stores: the backend specs and ``open_stores``.

Storage takes plain specs (``sparkcat.storage.factory``); this module is where the
worker's keys (topics, replication factors, Kafka client settings, state dir) become them.
"""

from __future__ import annotations

from pathlib import Path

from sparkcat.config.worker import WorkerConfig
from sparkcat.storage.config_log import ConfigLog
from sparkcat.storage.factory import Stores, open_log
from sparkcat.storage.offsets import OffsetStore
from sparkcat.storage.status import StatusStore


def store_spec(worker: WorkerConfig, topic: str) -> dict[str, str]:
    """Plain data telling another process how to open the store on ``topic`` (a Kafka topic or a local log name)."""
    if worker.uses_kafka:
        spec = {"backend": "kafka", "bootstrap.servers": worker.bootstrap_servers, "topic": topic}
        spec.update({f"kafka.{k}": v for k, v in worker.kafka.items()})
        return spec
    return {"backend": "local", "dir": str(Path(worker.state_dir).resolve() / "stores"), "name": topic}


def offsets_store_spec(worker: WorkerConfig) -> dict[str, str]:
    """How a Spark reader opens this cluster's offsets store (any partition count, as Connect's)."""
    return {**store_spec(worker, worker.offset_topic), "partitions": str(worker.offset_partitions)}


def status_store_spec(worker: WorkerConfig) -> dict[str, str]:
    """The status store's spec (any partition count, as Connect's)."""
    return {**store_spec(worker, worker.status_topic), "partitions": str(worker.status_partitions)}


def config_log_spec(worker: WorkerConfig) -> dict[str, str]:
    """How the herder's config stream opens this cluster's config log."""
    return store_spec(worker, worker.config_topic)


def open_stores(worker: WorkerConfig) -> Stores:
    """Stores for a worker; no network or file work happens until first use."""
    # Connect's *.storage.replication.factor keys; -1 leaves it to the broker's default.replication.factor.
    config = open_log(config_log_spec(worker), worker.config_replication_factor)
    offsets = open_log(offsets_store_spec(worker), worker.offset_replication_factor)
    status = open_log(status_store_spec(worker), worker.status_replication_factor)
    return Stores(ConfigLog(config), OffsetStore(offsets), StatusStore(status))
