"""Several drivers on one real Kafka: one leader through the group coordinator, standbys that forward writes,
a fenced leader that steps down, and a standby that takes over after the leader's kill -9 with every
record exactly once. How fast it takes over is a figure of bench/failover.py (bench/RESULTS.md, "Failover"),
not an assertion here: timings are measured in benchmarks, where runs are repeated side by side."""

from __future__ import annotations

import collections
import json
import socket

import httpx
import pytest

from sparkcat.bootstrap import Driver
from sparkcat.config.worker import WorkerConfig
from tests.driver_process import kill_session, start_driver_process
from tests.integration.runtime.test_driver import JSON_NO_SCHEMA, kafka_worker_fields
from tests.kafka_helpers import end_offsets, read_json_values, read_topic, wait_until

pytestmark = pytest.mark.integration

#: Exactly-once increment source: every position of the sequence once in the topic (read_committed).
CONFIG = {"connector.class": "increment", "increments": "1", "tasks.max": "1", "records.per.poll": "100",
          "batch.max.records": "100", "trigger.interval.ms": "200", "exactly.once.support": "required",
          **JSON_NO_SCHEMA}
#: A session of 3 s: failover = session timeout + the new leader's start of the connector (docs/running.md "Several drivers").
FAST_GROUP = {"session_timeout_ms": 3000, "heartbeat_interval_ms": 500}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cluster_fields(bootstrap: str, tmp_path, name: str, driver: str) -> dict:
    """One driver of the cluster ``name``: the cluster's topics and group, a state dir and REST port of its own."""
    return {**kafka_worker_fields(bootstrap, tmp_path, name), "group_id": name,
            "state_dir": str(tmp_path / driver), "rest_port": free_port()}


def positions(bootstrap: str, topic: str) -> list[int]:
    return [v["position"] for v in read_json_values(bootstrap, topic)]


def assert_each_once(got: list[int]) -> None:
    duplicated = sorted(p for p, n in collections.Counter(got).items() if n > 1)
    assert sorted(got) == list(range(1, len(got) + 1)), (
        f"{len(got)} records, duplicated {duplicated[:20]}, missing {sorted(set(range(1, max(got) + 1)) - set(got))[:20]}")


def assert_continues(bootstrap: str, topic: str, ends: dict[int, int]) -> None:
    """The new leader's records (from the end offsets ``ends`` taken at the kill) continue the sequence where the
    old leader's committed ones end. Read now: a commit the old leader sent just before the kill may have
    completed after the end offsets were taken."""
    records = read_topic(bootstrap, topic)
    old_last = max(json.loads(v)["position"] for p, o, _, v in records if o < ends[p])
    assert min(json.loads(v)["position"] for p, o, _, v in records if o >= ends[p]) == old_last + 1


def test_three_drivers_one_leader_standbys_forward_writes_and_a_fenced_leader_steps_down(spark, broker, tmp_path,
                                                                                        unique_name):
    topic = f"{unique_name}-seq_1"
    a, b, c = (Driver(session, WorkerConfig(**cluster_fields(broker.bootstrap, tmp_path, unique_name, name)),
                      watch_pipelines=False)
               for session, name in ((spark, "a"), (spark.newSession(), "b"), (spark.newSession(), "c")))
    drivers = (a, b, c)
    started = []
    try:
        for d in drivers:
            d.start()
            started.append(d)
        assert [d.herder.is_leader for d in drivers] == [True, False, False]
        for standby in (b, c):
            info = httpx.get(standby.url + "/").json()
            assert (info["sparkcat_role"], info["sparkcat_leader_url"]) == ("standby", a.url)
        assert httpx.get(a.url + "/").json()["sparkcat_role"] == "leader"

        # a write sent to a standby is forwarded: the leader runs the connector, the standbys nothing
        created = httpx.post(b.url + "/connectors", json={"name": "inc", "config": {**CONFIG,
                             "topic.prefix": f"{unique_name}-seq_"}}, timeout=90)
        assert created.status_code == 201, created.text
        wait_until(lambda: len(positions(broker.bootstrap, topic)) >= 300, message="records from the leader")
        assert list(a.reconciler.lifecycles) == ["inc"] and not b.reconciler.lifecycles and not c.reconciler.lifecycles
        status = httpx.get(c.url + "/connectors/inc/status").json()  # a read the standby answers itself
        assert status["connector"]["state"] == "RUNNING" and status["connector"]["worker_id"] == a.driver_id
        assert_each_once(positions(broker.bootstrap, topic))

        # a newer writer with the cluster's transactional id (what a new leader opens) fences the leader
        usurper = a.membership.config_writer()
        usurper.close()
        refused = httpx.put(a.url + "/connectors/inc/pause", timeout=90)
        assert refused.status_code == 500 and "transactional id" in refused.json()["message"], refused.text
        # the deposed driver stepped down; the group elects one leader again, and writes work through a standby
        wait_until(lambda: sum(d.herder.is_leader for d in drivers) == 1, timeout_s=60, message="one leader again")
        wait_until(lambda: all(d.herder.is_leader or not d.reconciler.lifecycles for d in drivers), timeout_s=60,
                   message="the standbys to run nothing")
        standby = next(d for d in drivers if not d.herder.is_leader)
        wait_until(lambda: httpx.put(standby.url + "/connectors/inc/pause", timeout=90).status_code == 202,
                   timeout_s=60, message="a pause through a standby")
        wait_until(lambda: httpx.get(standby.url + "/connectors/inc/status").json()["connector"]["state"]
                   == "PAUSED", message="the connector to pause")
        assert_each_once(positions(broker.bootstrap, topic))
    finally:
        for d in reversed(started):
            d.stop()


def _leader_of(url: str) -> tuple[str, str | None] | None:
    try:
        info = httpx.get(url + "/", timeout=5).json()
    except httpx.HTTPError:
        return None
    return info.get("sparkcat_role"), info.get("sparkcat_leader_url")


def test_standby_takes_over_after_the_leaders_kill_9_exactly_once(broker, tmp_path, unique_name):
    prefix = f"{unique_name}-seq_"
    # the broker allows sessions from 2 s (tests/broker.py); Kafka's default minimum is 6 s (docs/running.md)
    one, two = ({**cluster_fields(broker.bootstrap, tmp_path, unique_name, d), **FAST_GROUP} for d in ("one", "two"))
    leader = start_driver_process(one, {}, tmp_path / "one.log", {}, module="tests.ha_driver")
    standby = None
    try:
        url = f"http://127.0.0.1:{one['rest_port']}"
        wait_until(lambda: (_leader_of(url) or ("",))[0] == "leader", timeout_s=180,
                   message=lambda: "the first driver to lead: " + (tmp_path / "one.log").read_text()[-2000:])
        created = httpx.post(url + "/connectors", json={"name": "inc", "config": {**CONFIG, "topic.prefix": prefix}},
                             timeout=90)
        assert created.status_code == 201, created.text
        standby = start_driver_process(two, {}, tmp_path / "two.log", {}, module="tests.ha_driver")
        url_two = f"http://127.0.0.1:{two['rest_port']}"
        wait_until(lambda: (tmp_path / "two.started").exists() and _leader_of(url_two) == ("standby", url),
                   timeout_s=180,
                   message=lambda: "the second driver to stand by: " + (tmp_path / "two.log").read_text()[-2000:])
        topic = prefix + "1"
        wait_until(lambda: len(positions(broker.bootstrap, topic)) >= 500, message="records from the leader")

        kill_session(leader)  # returns once no process of the old leader's session is left
        # Everything the old leader committed is in the log now (a transaction commits only once its records
        # are acknowledged), so committed records at or past these end offsets were written by another driver.
        ends = end_offsets(broker.bootstrap, topic)

        def newer() -> list[tuple]:
            return [r for r in read_topic(broker.bootstrap, topic) if r[1] >= ends[r[0]]]

        wait_until(newer, timeout_s=120, message=lambda: f"records past the end offsets {ends} at the kill: "
                   + (tmp_path / "two.log").read_text()[-3000:])
        assert _leader_of(url_two) == ("leader", url_two)
        driver_two = f"{socket.gethostname()}:{two['rest_port']}"  # a driver's id: host and REST port
        wait_until(lambda: [httpx.get(url_two + "/connectors/inc/status", timeout=30).json()["connector"].get(k)
                            for k in ("state", "worker_id")] == ["RUNNING", driver_two], timeout_s=60,
                   message=lambda: f"the connector RUNNING on {driver_two}: "
                   + httpx.get(url_two + "/connectors/inc/status", timeout=30).text)
        wait_until(lambda: len(newer()) >= 200, message="the new leader to go on")
        assert_each_once(positions(broker.bootstrap, topic))
        assert_continues(broker.bootstrap, topic, ends)
    finally:
        if leader.poll() is None:
            kill_session(leader)
        if standby is not None:
            kill_session(standby)
