"""Where a write goes while leadership moves (issue 42): it waits for a driver that takes it instead of failing, a
driver never forwards to itself, and ``/health`` is 200 only when writes are taken here or by a known leader.

Pure logic: memory stores, the real herder and REST application, and a ``Group`` standing in for the consumer group
(tests/integration/runtime/test_readiness.py runs real driver processes on a real broker). Every wait is on a
condition with a deadline.
"""

from __future__ import annotations

import logging
import socket
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from fastapi.testclient import TestClient

from sparkcat.errors import NotLeaderError
from sparkcat.model.config_state import TargetState
from sparkcat.rest.app import create_app
from sparkcat.runtime.control.leader_role import CATCHING_UP, ELECTING, STOPPED_LEADING, TAKING_UP, LeaderRole
from sparkcat.runtime.leadership import Route, WriteRoute
from tests.kafka_helpers import wait_until
from tests.unit.rest.conftest import SparklessDriver

PAUSED_INC = {"connector.class": "increment", "increments": "1", "tasks.max": "1"}
OWN_URL = "http://test-driver:8083"


class Group:
    """The group's decision, set by the test; a promotion's fencing (``config_writer``) waits for ``fence``."""

    def __init__(self, leader: bool = False, url: str | None = None):
        self.leader, self.url = leader, url
        self.fence = threading.Event()
        self.fence.set()
        self.fencing = threading.Event()

    def is_leader(self) -> bool:
        return self.leader

    def leader_url(self) -> str | None:
        return OWN_URL if self.leader else self.url

    def own_url(self) -> str:
        return OWN_URL

    def config_writer(self):
        self.fencing.set()
        assert self.fence.wait(30), "the test never let the promotion finish"
        return None

    def step_down(self, reason: str) -> None:
        self.leader = False

    def elect_this_driver(self) -> None:
        self.leader = True


@pytest.fixture
def driver(tmp_path):
    d = SparklessDriver(tmp_path / "state")
    d.herder.leadership = Group()
    d.start()
    yield d
    d.stop()


@pytest.fixture
def client(driver):
    with TestClient(create_app(driver, write_wait_s=20), base_url="http://localhost") as c:
        yield c


def closed_port_url() -> str:
    """A URL nothing listens on (a leader killed a moment ago)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


def test_a_write_made_while_the_group_elects_waits_and_runs_once_this_driver_leads(driver):
    group = driver.herder.leadership
    assert driver.herder.write_route() == WriteRoute.waiting(ELECTING)
    with ThreadPoolExecutor(1) as pool:
        write = pool.submit(driver.herder.put_connector_config, "inc", PAUSED_INC, initial_state=TargetState.PAUSED)
        group.elect_this_driver()
        assert write.result(timeout=30) is True
    assert driver.herder.connectors() == ["inc"] and driver.herder.write_route() == WriteRoute.here()


def test_a_write_no_driver_takes_in_time_is_refused_with_the_reason_and_never_runs_later(driver):
    ran = []
    with pytest.raises(NotLeaderError, match="within 0.2 s: no driver leads the cluster right now"):
        driver.herder.run_as_leader(lambda: ran.append("late"), timeout_s=0.2)
    driver.herder.leadership.elect_this_driver()
    driver.herder.run_as_leader(lambda: ran.append("next"), timeout_s=30)  # requests run in order: "late" first
    assert ran == ["next"]


def test_an_elected_driver_taking_up_the_leadership_takes_the_write_itself_and_health_waits(driver, client):
    group = driver.herder.leadership
    group.fence.clear()
    group.elect_this_driver()
    assert group.fencing.wait(10), "the herder did not start the promotion"
    assert driver.herder.write_route() == WriteRoute.waiting(TAKING_UP)
    health = client.get("/health")
    assert health.status_code == 503 and TAKING_UP in health.json()["message"]
    with ThreadPoolExecutor(2) as pool:  # the first write, and a write already forwarded here by a standby
        created = pool.submit(client.post, "/connectors", json={"name": "inc", "config": PAUSED_INC,
                                                                "initial_state": "PAUSED"})
        paused = pool.submit(client.put, "/connectors/inc/pause?forward=false")
        group.fence.set()
        assert created.result(timeout=30).status_code == 201, created.result().text  # not forwarded to itself
        assert paused.result(timeout=30).status_code in (202, 404)  # runs here, before or after the create
    assert client.get("/health").json()["status"] == "healthy"


def test_a_driver_the_group_still_names_after_stepping_down_never_forwards_to_itself(driver):
    driver.herder.leadership.url = OWN_URL  # as the group described it while this driver led
    assert driver.herder.write_route() == WriteRoute.waiting(STOPPED_LEADING)
    with TestClient(create_app(driver, write_wait_s=0.3), base_url="http://localhost") as quick:
        refused = quick.put("/connectors/inc/pause")
    assert refused.status_code == 409 and STOPPED_LEADING in refused.json()["message"], refused.text  # not sent


def test_health_is_503_while_the_group_elects_and_200_once_a_leader_is_known(driver, client):
    group = driver.herder.leadership
    starting = client.get("/health")
    assert (starting.status_code, starting.json()["status"]) == (503, "starting") and ELECTING in starting.text
    group.url = "http://leader:8083"
    assert driver.herder.wait_role(10), "the herder did not see the leader"
    assert client.get("/health").json()["status"] == "healthy"  # a standby that forwards to a known leader
    group.url = None  # the leader is gone and the group elects again
    electing = client.get("/health")
    assert (electing.status_code, electing.json()["status"]) == (503, "unhealthy") and ELECTING in electing.text
    group.elect_this_driver()
    wait_until(lambda: client.get("/health").status_code == 200, timeout_s=10, message="healthy as the leader")


def test_a_write_to_an_unreachable_leader_waits_for_the_next_one(driver, client, caplog):
    group = driver.herder.leadership
    caplog.set_level(logging.INFO, logger="sparkcat.rest")
    group.url = closed_port_url()  # the group still names a leader that was killed
    assert driver.herder.write_route().route is Route.FORWARD
    with ThreadPoolExecutor(1) as pool:
        created = pool.submit(client.post, "/connectors", json={"name": "inc", "config": PAUSED_INC,
                                                                "initial_state": "PAUSED"})
        wait_until(lambda: "Could not reach the leader" in caplog.text, timeout_s=10, interval_s=0.02,
                   message="the forward to the dead leader")
        assert not created.done(), created.result().text  # it waits for the group instead of failing
        group.elect_this_driver()
        assert created.result(timeout=30).status_code == 201, created.result().text
    assert driver.herder.connectors() == ["inc"]


def test_a_write_waits_at_most_the_request_timeout(driver):
    with TestClient(create_app(driver, write_wait_s=0.3), base_url="http://localhost") as quick:
        refused = quick.post("/connectors", json={"name": "inc", "config": PAUSED_INC})
        assert refused.status_code == 409 and ELECTING in refused.json()["message"], refused.text
        driver.herder.leadership.url = closed_port_url()
        unreachable = quick.post("/connectors", json={"name": "inc", "config": PAUSED_INC})
        assert unreachable.status_code == 409 and "could not be reached" in unreachable.json()["message"]
    assert driver.herder.connectors() == []


def test_a_leader_takes_writes_only_once_it_read_the_config_log_to_its_end(tmp_path):
    parts = SparklessDriver(tmp_path / "state")  # its stores and reconciler; no herder
    parts.stores.config.put_connector_config("inc", {"name": "inc", **PAUSED_INC}, TargetState.PAUSED)
    role = LeaderRole(Group(leader=True), parts.stores, parts.reconciler, parts.driver_id)
    assert role.route(0) == WriteRoute.waiting(TAKING_UP)
    role.follow_group(start_offset=0)
    assert role.leading and role.lead_from > 0
    assert role.route(0) == WriteRoute.waiting(CATCHING_UP) and role.route(role.lead_from) == WriteRoute.here()
