"""Readiness that means it (issue 42): a real driver process on the test broker takes the first write sent to it,
whether sent as soon as its REST port answers or as soon as ``/health`` says 200, and a survivor takes the first
write sent to it right after the leader's kill -9.

No sleep decides a result: each write is sent at the moment the test looks for (the first answer of the port,
the first 200 of ``/health``, right after the kill) and must succeed, waiting inside the request if the driver is
still taking up the leadership.
"""

from __future__ import annotations

import httpx
import pytest

from tests.driver_process import end_sessions, kill_session, start_driver_process
from tests.integration.runtime.test_leadership import FAST_GROUP, cluster_fields
from tests.kafka_helpers import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

#: A connector that runs no query (created PAUSED): the writes are what is tested, not the data.
PAUSED = {"connector.class": "increment", "increments": "1", "tasks.max": "1"}
REQUEST_TIMEOUT_S = 120  # above the driver's own bound on a request (a write that waits answers within it)


def health(url: str) -> int | None:
    """``GET /health``'s status code, or None while the port takes no connection."""
    try:
        return httpx.get(url + "/health", timeout=5).status_code
    except httpx.TransportError:
        return None


def create(url: str, name: str) -> httpx.Response:
    return httpx.post(url + "/connectors", json={"name": name, "config": PAUSED, "initial_state": "PAUSED"},
                      timeout=REQUEST_TIMEOUT_S)


def role(url: str) -> tuple[str, str | None] | None:
    try:
        info = httpx.get(url + "/", timeout=5).json()
    except httpx.HTTPError:
        return None
    return info.get("sparkcat_role"), info.get("sparkcat_leader_url")


@pytest.mark.parametrize("moment", ["port", "health"])
def test_the_first_write_after_a_start_succeeds(broker, tmp_path, unique_name, moment):
    """``port``: sent at the first answer of the REST port (``/health`` still 503); ``health``: at the first 200."""
    fields = {**cluster_fields(broker.bootstrap, tmp_path, unique_name, "one"), **FAST_GROUP}
    log = tmp_path / "one.log"
    child = start_driver_process(fields, {}, log, {}, module="tests.ha_driver")
    url = f"http://127.0.0.1:{fields['rest_port']}"
    try:
        answered = (lambda: health(url) is not None) if moment == "port" else (lambda: health(url) == 200)
        wait_until(answered, timeout_s=240, interval_s=0.02,
                   message=lambda: f"the driver's REST port to answer ({moment}): " + log.read_text()[-3000:])
        created = create(url, "inc")
        assert created.status_code == 201, f"{created.status_code} {created.text}\n" + log.read_text()[-3000:]
        assert health(url) == 200 and role(url) == ("leader", url)
        assert httpx.get(url + "/connectors").json() == ["inc"]
        assert "Forwarded" not in log.read_text(), "the driver forwarded a write (to itself: it is the only one)"
    finally:
        end_sessions([child])


def test_the_first_write_to_the_survivor_after_the_leaders_kill_succeeds(broker, tmp_path, unique_name):
    one, two = ({**cluster_fields(broker.bootstrap, tmp_path, unique_name, d), **FAST_GROUP} for d in ("one", "two"))
    url_one, url_two = (f"http://127.0.0.1:{d['rest_port']}" for d in (one, two))
    logs = {d: tmp_path / f"{d}.log" for d in ("one", "two")}
    children = [start_driver_process(one, {}, logs["one"], {}, module="tests.ha_driver")]
    try:
        wait_until(lambda: health(url_one) == 200, timeout_s=240,
                   message=lambda: "the first driver to be ready: " + logs["one"].read_text()[-3000:])
        assert create(url_one, "before").status_code == 201
        children.append(start_driver_process(two, {}, logs["two"], {}, module="tests.ha_driver"))
        wait_until(lambda: (tmp_path / "two.started").exists() and role(url_two) == ("standby", url_one),
                   timeout_s=240, message=lambda: "the second driver to stand by: " + logs["two"].read_text()[-3000:])
        assert health(url_two) == 200  # a standby that knows the leader takes writes (it forwards them)

        kill_session(children[0])  # the survivor still names the dead driver as the leader until its session ends
        created = create(url_two, "after")
        assert created.status_code == 201, f"{created.status_code} {created.text}\n" + logs["two"].read_text()[-3000:]
        assert role(url_two) == ("leader", url_two) and health(url_two) == 200
        assert sorted(httpx.get(url_two + "/connectors").json()) == ["after", "before"]
    finally:
        end_sessions(children)
