"""Leadership that moves away and back between two drivers with state directories of their own (issue 24).

Two driver processes on one real Kafka, each with its own ``state.dir`` (two machines, no shared file
system), run an exactly-once ``increment`` source into a topic and an exactly-once ``kafka`` copy of that
topic. The leader's whole process tree is frozen with SIGSTOP (a long GC pause, a stalled VM) past its
session; the standby takes over; the frozen driver is resumed with SIGCONT and must come back as a
standby that runs nothing, leaving the healthy leader alone. Then the second leader is killed, so
leadership moves back: the first driver resumes from what the second one committed, not from its own
checkpoint written before the freeze. Both topics, read ``read_committed``, hold every position once.
"""

from __future__ import annotations

import signal

import httpx
import pytest

from tests.driver_process import end_sessions, kill_session, signal_session, start_driver_process
from tests.integration.runtime.test_leadership import (CONFIG, FAST_GROUP, assert_each_once, cluster_fields,
                                                       positions)
from tests.kafka_helpers import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

STEP = 300  # records each phase must add before the test moves on: proof that the pipeline went on
COPY_BATCH = 200  # the copy's batch.max.records


def server_info(url: str) -> dict | None:
    try:
        return httpx.get(url + "/", timeout=5).json()
    except httpx.HTTPError:
        return None


def role(url: str) -> tuple[str, str | None] | None:
    info = server_info(url)
    return None if info is None else (info.get("sparkcat_role"), info.get("sparkcat_leader_url"))


def post(url: str, name: str, config: dict) -> None:
    created = httpx.post(url + "/connectors", json={"name": name, "config": config}, timeout=90)
    assert created.status_code == 201, created.text


def counts(bootstrap: str, topics: tuple[str, str]) -> tuple[int, int]:
    return tuple(len(positions(bootstrap, t)) for t in topics)  # type: ignore[return-value]


def grown(bootstrap: str, topics: tuple[str, str], since: tuple[int, int]) -> bool:
    """Both topics hold ``STEP`` more records than ``since``."""
    now = counts(bootstrap, topics)
    return all(n >= s + STEP for n, s in zip(now, since))


def start_leader_and_standby(specs: tuple[dict, dict], logs: dict, tmp_path, bootstrap: str, prefix: str,
                             children: list, exactly_once: bool = True) -> None:
    """Driver one leads and runs an exactly-once increment source into ``prefix``1 and an exactly-once copy
    of it (at-least-once both, when not ``exactly_once``: give the specs ``exactly_once_source_support``
    ``disabled`` too); driver two then stands by. Each started process is appended to ``children`` (the
    caller kills them)."""
    one, two = specs
    eos = {"exactly.once.support": "required"} if exactly_once else {}
    source = {k: v for k, v in CONFIG.items() if k != "exactly.once.support"}
    url_one, url_two = (f"http://127.0.0.1:{d['rest_port']}" for d in specs)
    topic = prefix + "1"
    children.append(start_driver_process(one, {}, logs["one"], {}, module="tests.ha_driver"))
    wait_until(lambda: (role(url_one) or ("",))[0] == "leader", timeout_s=180,
               message=lambda: "the first driver to lead: " + logs["one"].read_text()[-4000:])
    post(url_one, "inc", {**source, **eos, "topic.prefix": prefix})
    wait_until(lambda: positions(bootstrap, topic), message="the source's topic and first records")
    post(url_one, "copy", {"connector.class": "kafka", "topics": topic, "tasks.max": "1",
                           "batch.max.records": str(COPY_BATCH), "trigger.interval.ms": "200", **eos})
    children.append(start_driver_process(two, {}, logs["two"], {}, module="tests.ha_driver"))
    wait_until(lambda: (tmp_path / "two.started").exists() and role(url_two) == ("standby", url_one),
               timeout_s=180, message=lambda: "the second driver to stand by: " + logs["two"].read_text()[-4000:])


def test_a_frozen_leader_resumes_as_a_standby_and_leads_again_from_the_committed_positions(broker, tmp_path,
                                                                                          unique_name):
    bootstrap, prefix = broker.bootstrap, f"{unique_name}-seq_"
    topics = (prefix + "1", prefix + "1.copy")
    one, two = ({**cluster_fields(bootstrap, tmp_path, unique_name, d), **FAST_GROUP} for d in ("one", "two"))
    url_one, url_two = (f"http://127.0.0.1:{d['rest_port']}" for d in (one, two))
    logs = {name: tmp_path / f"{name}.log" for name in ("one", "two")}

    def tail(name: str) -> str:
        return logs[name].read_text()[-4000:]

    children: list = []
    try:
        start_leader_and_standby((one, two), logs, tmp_path, bootstrap, prefix, children)
        first, second = children
        wait_until(lambda: grown(bootstrap, topics, (0, 0)), message="records from the first leader")

        # Freeze the leader past its session: the standby takes over and goes on.
        signal_session(first, signal.SIGSTOP)
        frozen = counts(bootstrap, topics)
        wait_until(lambda: role(url_two) == ("leader", url_two) and grown(bootstrap, topics, frozen), timeout_s=120,
                   message=lambda: "the second driver to lead and go on: " + tail("two"))

        # Resumed, the first driver finds its session gone: a standby, and the second driver keeps leading.
        signal_session(first, signal.SIGCONT)
        wait_until(lambda: role(url_one) == ("standby", url_two), timeout_s=60,
                   message=lambda: "the resumed driver to stand by: " + tail("one"))
        resumed = counts(bootstrap, topics)
        wait_until(lambda: grown(bootstrap, topics, resumed), message="the second leader to go on")
        info = server_info(url_one)
        assert (info["sparkcat_role"], info["sparkcat_running_connectors"]) == ("standby", []), tail("one")
        assert server_info(url_two)["sparkcat_running_connectors"] == ["copy", "inc"]
        for topic in topics:
            assert_each_once(positions(bootstrap, topic))

        # Leadership moves back: the first driver resumes from what the second committed.
        kill_session(second)
        handed = counts(bootstrap, topics)
        wait_until(lambda: role(url_one) == ("leader", url_one) and grown(bootstrap, topics, handed), timeout_s=120,
                   message=lambda: "the first driver to lead again and go on: " + tail("one"))
        assert "dropping checkpoint" in logs["one"].read_text(), "the stale checkpoints were not noticed"
        for topic in topics:
            assert_each_once(positions(bootstrap, topic))
    finally:
        end_sessions(children)
