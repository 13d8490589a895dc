"""Leadership in the herder and the state directory's lock (pure logic: memory stores, a stand-in for the group).

The group itself (Kafka's coordinator, fencing, forwarding, kill -9) is tested on a real broker in
tests/integration/runtime/test_leadership.py; here a ``Switch`` plays the group's decision.
"""

from __future__ import annotations

import threading

import pytest

from sparkcat.errors import ConfigError, FencedError, NotLeaderError
from sparkcat.model.config_state import TargetState
from sparkcat.runtime.control.membership import StateDirLock, transactional_id
from sparkcat.config.worker import WorkerConfig
from sparkcat.storage.log import MemoryLog
from tests.kafka_helpers import wait_until
from tests.unit.rest.conftest import SparklessDriver

PAUSED_INC = {"connector.class": "increment", "increments": "1", "tasks.max": "1"}


class Switch:
    """The group's decision, set by the test: leader or not, and the leader's URL."""

    def __init__(self, leader: bool, url: str | None):
        self.leader, self.url, self.steps_down = leader, url, []

    def is_leader(self) -> bool:
        return self.leader

    def leader_url(self) -> str | None:
        return self.url

    def own_url(self) -> str:
        return "http://test-driver:8083"

    def config_writer(self):
        return None

    def step_down(self, reason: str) -> None:
        self.steps_down.append(reason)
        self.leader = False


class FencingLog(MemoryLog):
    """A config log writer a newer leader has fenced."""

    def append(self, records):
        raise FencedError("Kafka log 'configs': append failed: fenced (a newer writer with the same transactional id)")


@pytest.fixture
def driver(tmp_path):
    d = SparklessDriver(tmp_path / "state")
    d.herder.leadership = Switch(False, "http://leader:8083")
    d.start()
    yield d
    d.stop()


def test_a_standby_refuses_writes_naming_the_leader_and_runs_them_once_promoted(driver):
    assert not driver.herder.is_leader
    with pytest.raises(NotLeaderError) as refused:
        driver.herder.put_connector_config("inc", PAUSED_INC, initial_state=TargetState.PAUSED)
    assert refused.value.leader_url == "http://leader:8083" and "http://leader:8083" in refused.value.message
    assert driver.herder.connectors() == []

    driver.herder.leadership.leader = True
    wait_until(lambda: driver.herder.is_leader, timeout_s=10, message="the promotion")
    assert driver.herder.put_connector_config("inc", PAUSED_INC, initial_state=TargetState.PAUSED) is True
    assert driver.herder.connectors() == ["inc"]


def test_a_fenced_write_steps_the_leader_down(driver):
    driver.herder.leadership.leader = True
    wait_until(lambda: driver.herder.is_leader, timeout_s=10, message="the promotion")
    driver.stores.config.use_writer(FencingLog())
    with pytest.raises(FencedError):
        driver.herder.put_connector_config("inc", PAUSED_INC, initial_state=TargetState.PAUSED)
    assert not driver.herder.is_leader and len(driver.herder.leadership.steps_down) == 1
    with pytest.raises(NotLeaderError):
        driver.herder.set_target_state("inc", TargetState.STARTED)


def test_a_second_driver_on_the_state_dir_waits_until_the_first_releases_it(tmp_path):
    first, second = StateDirLock(str(tmp_path)), StateDirLock(str(tmp_path))
    first.acquire()
    taken = threading.Event()
    waiter = threading.Thread(target=lambda: (second.acquire(poll_s=0.05), taken.set()), daemon=True)
    waiter.start()
    assert not taken.wait(0.5), "the second driver took a lock the first still holds"
    first.release()
    assert taken.wait(5), "the second driver did not take the lock once it was free"
    second.release()


def test_a_standby_waiting_for_the_lock_gives_up_when_stopped(tmp_path):
    first = StateDirLock(str(tmp_path))
    first.acquire()
    stop = threading.Event()
    stop.set()
    with pytest.raises(Exception, match="Stopped while waiting"):
        StateDirLock(str(tmp_path)).acquire(stop, poll_s=0.05)
    first.release()


def test_group_keys_are_checked_and_the_config_writer_id_is_connects():
    with pytest.raises(ConfigError, match="heartbeat.interval.ms"):
        WorkerConfig(session_timeout_ms=3000, heartbeat_interval_ms=3000)
    assert transactional_id("sparkcat-cluster") == "connect-cluster-sparkcat-cluster"


def test_a_standby_answers_409_to_a_write_already_forwarded_and_reads_itself(driver):
    from fastapi.testclient import TestClient

    from sparkcat.rest.app import create_app
    from sparkcat.rest.forward import CONFLICT

    client = TestClient(create_app(driver, write_wait_s=0.3), base_url="http://localhost")
    again = client.put("/connectors/inc/pause?forward=false")
    assert (again.status_code, again.json()["message"]) == (409, CONFLICT)
    driver.herder.leadership.url = None  # the group is electing: a write waits for a leader, here at most 0.3 s
    nobody = client.post("/connectors", json={"name": "inc", "config": PAUSED_INC})
    assert nobody.status_code == 409 and "no driver leads" in nobody.json()["message"]
    assert client.get("/connectors").json() == []  # a read: answered by the standby itself
    info = client.get("/").json()
    assert (info["sparkcat_role"], info["sparkcat_leader_url"], info["sparkcat_running_connectors"]) == (
        "standby", None, [])
