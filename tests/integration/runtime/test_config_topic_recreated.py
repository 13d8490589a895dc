"""A config topic deleted and created again while the driver follows it (issue 42): the herder's view becomes the
new topic's, with a log line naming the connectors that are gone, even when the new topic already holds more
records than the driver had read (so its end offset alone does not give it away).

The config log is a real topic on the suite's broker, followed by the driver's own follower into a herder; the
connectors' queries are the reconciler tests' fake runner (what is tested is which connectors the driver runs,
not their data). The follower is held between two reads while the topic is replaced, the window a follower
polling every 0.1 s always has: a read that came in between would see the new topic still short of the old
position, which issue 28's check already catches.
"""

from __future__ import annotations

import logging
import threading
import time

import pytest
from confluent_kafka.admin import AdminClient

from sparkcat.config.worker import WorkerConfig
from sparkcat.errors import StorageError
from sparkcat.model.config_state import TargetState
from sparkcat.runtime.control.config_follower import ConfigFollower
from sparkcat.runtime.control.herder import Herder
from sparkcat.runtime.execution.reconciler import Reconciler
from sparkcat.runtime.execution.status_reporter import StatusReporter
from sparkcat.runtime.supervision import Backoff, Outage
from sparkcat.storage.config_log import ConfigLog
from sparkcat.storage.factory import Stores
from sparkcat.storage.kafka.log import KafkaLog
from sparkcat.storage.log import MemoryLog
from sparkcat.storage.offsets import OffsetStore
from sparkcat.storage.status import StatusStore
from tests.kafka_helpers import wait_until
from tests.unit.runtime.execution.test_reconciler import FakeRunner

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

PAUSED = {"connector.class": "increment", "increments": "1", "tasks.max": "1"}


class HeldLog(KafkaLog):
    """The follower's reader of the config topic; ``hold`` parks the follower before its next read."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.open_gate = threading.Event()
        self.open_gate.set()
        self.parked = threading.Event()

    def read_since(self, cursor):
        if not self.open_gate.is_set():
            self.parked.set()
            assert self.open_gate.wait(60), "the test never let the follower read again"
            self.parked.clear()
        return super().read_since(cursor)


def write_connectors(config: ConfigLog, names: list[str]) -> None:
    for name in names:
        config.put_connector_config(name, PAUSED)
        config.put_target_state(name, TargetState.PAUSED)


def recreate(bootstrap: str, topic: str) -> KafkaLog:
    """Delete the topic and create it again (empty); the new topic's writer."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.delete_topics([topic])[topic].result(timeout=10)
    writer = KafkaLog(bootstrap, topic, timeout_s=10)
    deadline = time.monotonic() + 30
    while True:  # the deletion completes in the background; creating the topic again waits for it
        try:
            writer.open()
            writer.end_offset()
            return writer
        except StorageError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def test_a_config_topic_created_again_with_more_records_replaces_the_state_and_names_what_is_gone(
        broker, tmp_path, unique_name, caplog):
    topic = f"{unique_name}-configs"
    first = KafkaLog(broker.bootstrap, topic, timeout_s=10)
    stores = Stores(ConfigLog(first), OffsetStore(MemoryLog()), StatusStore(MemoryLog()))
    worker = WorkerConfig(state_dir=str(tmp_path))
    runner = FakeRunner()
    herder = Herder(stores, Reconciler(stores, StatusReporter(stores.status, "driver:8083", 1), runner, worker),
                    "driver:8083")
    reader = HeldLog(broker.bootstrap, topic, timeout_s=10)
    follower = ConfigFollower(worker, herder, opener=lambda: reader)
    follower.outage = Outage("The config log stream", Backoff(0.05, 0.2))
    herder.watches.append(follower.check)
    write_connectors(stores.config, ["a", "b"])
    old_end = first.end_offset()
    follower.start()
    herder.start()
    again = None
    try:
        wait_until(lambda: herder.connectors() == ["a", "b"], timeout_s=30, interval_s=0.05,
                   message=lambda: f"the first topic's connectors: {herder.connectors()}")
        reader.open_gate.clear()
        assert reader.parked.wait(30), "the follower never came back for its next read"
        again = recreate(broker.bootstrap, topic)
        write_connectors(ConfigLog(again), ["y", "z"])  # as many records as the old topic: its end is no lower
        assert again.end_offset() >= old_end
        with caplog.at_level(logging.INFO, logger="sparkcat.runtime.control"):
            reader.open_gate.set()
            wait_until(lambda: herder.connectors() == ["y", "z"], timeout_s=60, interval_s=0.05,
                       message=lambda: f"the new topic's connectors, got {herder.connectors()}")
        messages = [r.getMessage() for r in caplog.records]
        assert any("config log was recreated" in m and "is a new topic" in m and topic in m for m in messages), messages
        assert any("Connectors not in the config log read again, stopped: a, b" in m for m in messages), messages
        assert herder.target_state("z") == TargetState.PAUSED
        wait_until(lambda: herder.wait_ready(0) and follower.outage.live, timeout_s=30, interval_s=0.05,
                   message="the follower to be live again")
        herder.put_connector_config("x", PAUSED)  # the herder writes to the new topic and follows it from there
        wait_until(lambda: herder.connectors() == ["x", "y", "z"], timeout_s=30, interval_s=0.05,
                   message=lambda: f"the next record of the new topic, got {herder.connectors()}")
    finally:
        reader.open_gate.set()
        follower.stop()
        herder.stop()
        stores.config.close()
        if again is not None:
            again.close()
