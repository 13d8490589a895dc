"""The herder loop survives store errors: memory stores whose status log fails a number of times (pure logic).

A fake store is fine here: what is tested is the loop's own logic (retry with backoff, one log line per
change of state, the outage ``/health`` reports); tests/integration/runtime/test_broker_outage.py stops
a real broker.
"""

from __future__ import annotations

import logging
import threading

from sparkcat.errors import StorageError
from sparkcat.runtime.control.herder import Herder
from sparkcat.runtime.execution.reconciler import Reconciler
from sparkcat.runtime.execution.status_reporter import StatusReporter
from sparkcat.runtime.supervision import Backoff, Outage
from sparkcat.config.worker import WorkerConfig
from sparkcat.storage.config_log import ConfigLog
from sparkcat.storage.log import MemoryLog
from sparkcat.storage.offsets import OffsetStore
from sparkcat.storage.status import StatusStore
from sparkcat.storage.factory import Stores
from tests.kafka_helpers import wait_until
from tests.unit.runtime.execution.reconciler_helpers import INC
from tests.unit.runtime.execution.test_reconciler import FakeRunner


class FlakyLog(MemoryLog):
    """A memory log whose appends fail with StorageError while ``failures`` is above zero."""

    def __init__(self) -> None:
        super().__init__()
        self.failures = 0
        self.calls = 0

    def append(self, records):
        self.calls += 1
        if self.failures > 0:
            self.failures -= 1
            raise StorageError("Kafka log 'status' at 127.0.0.1:9: writing failed: Local: All broker connections are down")
        super().append(records)


class Feeder:
    """Plays the config stream: hands new config log records to the herder, as foreachBatch does."""

    def __init__(self, herder: Herder, log: MemoryLog):
        self.herder, self.log, self.next = herder, log, 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        while not self.stop.wait(0.05):
            records = self.log.read(self.next)
            if records:
                self.herder.on_config_records(records)
                self.next = records[-1].offset + 1


def herder_with_flaky_status(tmp_path):
    status_log = FlakyLog()
    config_log = MemoryLog()
    stores = Stores(ConfigLog(config_log), OffsetStore(MemoryLog()), StatusStore(status_log))
    worker = WorkerConfig(state_dir=str(tmp_path), file_allowed_dirs=[str(tmp_path), "/tmp/never-written"])
    reconciler = Reconciler(stores, StatusReporter(stores.status, "driver:8083", 1), FakeRunner(), worker)
    herder = Herder(stores, reconciler, "driver:8083")
    herder.outage = Outage("The herder", Backoff(0.05, 0.2))
    return herder, status_log, config_log


def test_a_store_error_is_an_outage_retried_logged_once_then_the_herder_works_again(tmp_path, caplog):
    herder, status_log, config_log = herder_with_flaky_status(tmp_path)
    feeder = Feeder(herder, config_log)
    herder.start()
    feeder.thread.start()
    try:
        assert herder.wait_ready(10)
        status_log.failures = 12
        with caplog.at_level(logging.INFO, logger="sparkcat.runtime.supervision"):
            herder.put_connector_config("inc", INC)  # its statuses cannot be written for a while
            wait_until(lambda: not herder.outage.live, timeout_s=10, message="the herder's outage")
            assert "StorageError" in herder.outage.reason and "All broker connections are down" in herder.outage.reason
            wait_until(lambda: herder.outage.live, timeout_s=20, message="the herder to recover")
        down = [r for r in caplog.records if "is down" in r.getMessage()]
        assert len(down) == 1 and down[0].exc_info is not None, [r.getMessage()[:300] for r in down]  # once, not per retry
        assert len([r for r in caplog.records if "recovered after" in r.getMessage()]) == 1
        assert status_log.calls > 12  # it was retried until the store answered
        wait_until(lambda: herder.connector_status("inc")["connector"]["state"] == "RUNNING", timeout_s=10)
        herder.put_connector_config("inc2", INC)  # requests are handled again
        wait_until(lambda: herder.connector_status("inc2")["connector"]["state"] == "RUNNING", timeout_s=10)
        assert herder._thread.is_alive() and not herder.thread_ended
    finally:
        feeder.stop.set()
        herder.stop()


def test_outage_logs_once_per_cause_and_backs_off_to_its_cap(caplog):
    outage = Outage("The thing", Backoff(1.0, 4.0), confirm_s=0.05)
    with caplog.at_level(logging.INFO, logger="sparkcat.runtime.supervision"):
        delays = [outage.failed(StorageError("broker down")) for _ in range(4)]
        outage.failed(ValueError("something else"))
        outage.recovered()  # not yet: an outage ends after confirm_s of attempts that worked
        assert not outage.live
        wait_until(lambda: (outage.recovered(), outage.live)[1], timeout_s=5, interval_s=0.01,
                   message="the outage to end once attempts worked for confirm_s")
        outage.recovered()
    assert delays == [1.0, 2.0, 4.0, 4.0]
    messages = [r.getMessage() for r in caplog.records]
    assert [m.split(":")[0] for m in messages if "is down" in m] == ["The thing is down (retrying with backoff up "
                                                                       "to 4 s)"] * 2
    assert len([m for m in messages if "recovered after 5 failed attempt(s)" in m]) == 1
    assert outage.live and outage.reason is None


def test_a_restarted_config_stream_is_swapped_in_only_once_it_has_read_as_far(tmp_path):
    herder, _status_log, config_log = herder_with_flaky_status(tmp_path)
    stores_config = herder.stores.config
    stores_config.put_connector_config("a", INC)
    stores_config.put_connector_config("b", INC)
    records = config_log.read(0)
    herder.on_config_records(records)
    assert herder.snapshot().connectors() == ["a", "b"] and not herder.rebuilding
    herder.rebuild_config_state()  # the stream starts again from offset 0
    herder.on_config_records(records[:1])
    assert herder.snapshot().connectors() == ["a", "b"] and herder.rebuilding  # never half a log
    stores_config.put_connector_config("c", INC)
    herder.on_config_records(config_log.read(1))
    assert herder.snapshot().connectors() == ["a", "b", "c"] and not herder.rebuilding


def test_a_recreated_config_log_is_read_again_and_its_state_replaces_the_old_one(tmp_path, caplog):
    """A config topic deleted and created again ends before the position the follower read: the follower
    says so, starts over, and the new log's connectors replace the old ones once it has read all of it."""
    from sparkcat.runtime.control.config_follower import ConfigFollower
    herder, _status_log, config_log = herder_with_flaky_status(tmp_path)
    stream = ConfigFollower(WorkerConfig(state_dir=str(tmp_path)), herder, opener=lambda: config_log)
    stream.outage = Outage("The config log stream", Backoff(0.05, 0.2))
    writer = herder.stores.config
    for name in ("a", "b", "c"):
        writer.put_connector_config(name, INC)
    stream.start()
    try:
        wait_until(lambda: herder.snapshot().connectors() == ["a", "b", "c"], timeout_s=10, message="the first log")
        config_log.recreate()
        writer.put_connector_config("z", INC)  # offset 0 of the new log, below the 3 already read
        with caplog.at_level(logging.ERROR, logger="sparkcat.runtime"):
            wait_until(lambda: (stream.check(), herder.snapshot().connectors() == ["z"])[1], timeout_s=10,
                       interval_s=0.05, message=lambda: f"the new log's state: {herder.snapshot().connectors()}")
        assert not herder.rebuilding
        assert any("config log was recreated" in r.getMessage() for r in caplog.records)
        writer.put_connector_config("y", INC)  # and it follows the new log from there
        wait_until(lambda: herder.snapshot().connectors() == ["y", "z"], timeout_s=10, message="the next record")
    finally:
        stream.stop()
