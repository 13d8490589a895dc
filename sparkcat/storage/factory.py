"""Opens the three stores on the backend a worker config asks for (Kafka topics or a local directory)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sparkcat.runtime.worker_config import WorkerConfig
from sparkcat.storage.config_log import ConfigLog
from sparkcat.storage.log import KeyedLog, MemoryLog
from sparkcat.storage.offsets import OffsetStore
from sparkcat.storage.status import StatusStore


@dataclass
class Stores:
    """The config log, offsets store and status store of one cluster."""

    config: ConfigLog
    offsets: OffsetStore
    status: StatusStore

    def close(self) -> None:
        for store in (self.config, self.offsets, self.status):
            store.close()


def _logs(worker: WorkerConfig) -> tuple[KeyedLog, KeyedLog, KeyedLog]:
    names = (worker.config_topic, worker.offset_topic, worker.status_topic)
    if worker.uses_kafka:
        from sparkcat.storage.kafka.log import KafkaLog
        # Connect's *.storage.replication.factor keys; -1 leaves it to the broker's default.replication.factor.
        factors = (worker.config_replication_factor, worker.offset_replication_factor,
                   worker.status_replication_factor)
        return tuple(KafkaLog(worker.bootstrap_servers, topic, replication_factor=factor,
                              client_config=dict(worker.kafka)) for topic, factor in zip(names, factors))
    from sparkcat.storage.local.log import LocalLog
    directory = Path(worker.state_dir) / "stores"
    return tuple(LocalLog(directory, name) for name in names)


def open_stores(worker: WorkerConfig) -> Stores:
    """Stores for a worker; no network or file work happens until first use."""
    config, offsets, status = _logs(worker)
    return Stores(ConfigLog(config), OffsetStore(offsets), StatusStore(status))


def memory_stores() -> Stores:
    """Throw-away stores for unit tests."""
    return Stores(ConfigLog(MemoryLog()), OffsetStore(MemoryLog()), StatusStore(MemoryLog()))


def offsets_store_spec(worker: WorkerConfig) -> dict[str, str]:
    """Plain data telling another process (a Spark reader) how to open this cluster's offsets store."""
    if worker.uses_kafka:
        spec = {"backend": "kafka", "bootstrap.servers": worker.bootstrap_servers, "topic": worker.offset_topic}
        spec.update({f"kafka.{k}": v for k, v in worker.kafka.items()})
        return spec
    return {"backend": "local", "dir": str(Path(worker.state_dir).resolve() / "stores"),
            "name": worker.offset_topic}


def config_log_spec(worker: WorkerConfig) -> dict[str, str]:
    """Like ``offsets_store_spec``, for the config log (read by the herder's config stream)."""
    spec = offsets_store_spec(worker)
    if worker.uses_kafka:
        spec["topic"] = worker.config_topic
    else:
        spec["name"] = worker.config_topic
    return spec


def open_offsets_store(spec: dict[str, str]) -> OffsetStore:
    """Open the offsets store described by ``offsets_store_spec`` (read side; writes need the lock)."""
    if spec.get("backend") == "kafka":
        from sparkcat.storage.kafka.log import KafkaLog
        client = {k[len("kafka."):]: v for k, v in spec.items() if k.startswith("kafka.")}
        return OffsetStore(KafkaLog(spec["bootstrap.servers"], spec["topic"], client_config=client))
    from sparkcat.storage.local.log import LocalLog
    return OffsetStore(LocalLog(spec["dir"], spec["name"]))
