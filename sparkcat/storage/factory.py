"""Opens stores from plain data (a backend spec), so storage needs nothing from the runtime.

A spec is a flat ``dict[str, str]`` that can cross to another process (a Spark reader):
``{"backend": "kafka", "bootstrap.servers": ..., "topic": ..., "kafka.<client key>": ...}``
(with ``"partitions": N`` for a multi-partition log: the offsets and status topics, created with N)
or ``{"backend": "local", "dir": ..., "name": ...}``. ``sparkcat.config.stores`` builds
specs from a worker config.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

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


def open_log(spec: Mapping[str, str], replication_factor: int = -1) -> KeyedLog:
    """The keyed log a spec names; no network or file work happens until first use.

    ``replication_factor`` applies when a Kafka topic is created; -1 leaves it to the
    broker's ``default.replication.factor``.
    """
    if spec.get("backend") == "kafka":
        from sparkcat.storage.kafka.log import KafkaLog
        client = {k[len("kafka."):]: v for k, v in spec.items() if k.startswith("kafka.")}
        multi = "partitions" in spec
        return KafkaLog(spec["bootstrap.servers"], spec["topic"], replication_factor=replication_factor,
                        client_config=client, partitions=int(spec["partitions"]) if multi else 1,
                        multi_partition=multi)
    from sparkcat.storage.local.log import LocalLog
    return LocalLog(spec["dir"], spec["name"])


def memory_stores() -> Stores:
    """Throw-away stores for unit tests."""
    return Stores(ConfigLog(MemoryLog()), OffsetStore(MemoryLog()), StatusStore(MemoryLog()))


def open_offsets_store(spec: Mapping[str, str]) -> OffsetStore:
    """Open the offsets store a spec describes (read side; writes need the lock)."""
    return OffsetStore(open_log(spec))
