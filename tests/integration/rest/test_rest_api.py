"""The REST API of a real driver (real Spark, local stores), driven by the third-party client kafka-connect-py.

Every call is checked against what the driver then does: statuses change, and the
increment connector's file sink grows, stops growing, and continues where it should.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import requests
from kafka_connect import KafkaConnect

from sparkcat import __version__
from sparkcat.bootstrap import Driver
from sparkcat.config.worker import WorkerConfig
from tests.broker import free_port
from tests.kafka_helpers import wait_until

pytestmark = pytest.mark.integration


def start_driver(spark, worker: WorkerConfig) -> Driver:
    driver = Driver(spark, worker, rest=True, watch_pipelines=False)
    driver.start()
    return driver


def local_worker(tmp_path: Path) -> WorkerConfig:
    return WorkerConfig(state_dir=str(tmp_path / "state"), rest_host="127.0.0.1", rest_port=free_port(),
                        group_id="rest-it", file_allowed_dirs=[str(tmp_path)])


@pytest.fixture
def rest_driver(spark, tmp_path) -> Iterator[Driver]:
    driver = start_driver(spark, local_worker(tmp_path))
    try:
        yield driver
    finally:
        driver.stop()


def base_url(driver: Driver) -> str:
    return f"http://127.0.0.1:{driver.worker.rest_port}"


@pytest.fixture
def kc(rest_driver) -> KafkaConnect:
    return KafkaConnect(url=base_url(rest_driver))


@pytest.fixture
def http(rest_driver) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=base_url(rest_driver), timeout=60) as client:
        yield client


def increment_config(out: Path, **extra: str) -> dict[str, str]:
    return {"connector.class": "increment", "increments": "1", "records.per.poll": "5",
            "trigger.interval.ms": "200", "sink.connector.class": "file-sink", "sink.file": str(out), **extra}


def positions(path: Path) -> list[int]:
    lines = path.read_text().splitlines() if path.exists() else []
    return [json.loads(line)["position"] for line in lines]


def states(kc: KafkaConnect, name: str) -> tuple[str, list[str]]:
    status = kc.get_connector_status(name)
    return status["connector"]["state"], [t["state"] for t in status["tasks"]]


def wait_states(kc: KafkaConnect, name: str, connector: str, tasks: list[str]) -> None:
    wait_until(lambda: states(kc, name) == (connector, tasks), timeout_s=120,
               message=f"{name} to be {connector} with tasks {tasks}")


def wait_growth(out: Path, beyond: int, by: int = 5) -> None:
    wait_until(lambda: len(positions(out)) >= beyond + by, timeout_s=120,
               message=f"{out.name} to grow past {beyond + by} lines")


def assert_stays(kc: KafkaConnect, name: str, out: Path, marker: str) -> int:
    """Asserting absence: ``name`` (PAUSED or STOPPED) writes nothing more to ``out``, shown by a marker
    connector created after the count (same trigger interval, a file of its own): once the marker wrote
    3 batches, several trigger intervals of a running query went by on the driver, and ``name`` would
    have written too. The marker is deleted again."""
    count = len(positions(out))
    assert name not in kc.get_cluster_info()["sparkcat_running_connectors"], f"{name}'s query still runs"
    marker_out = out.with_name(f"{marker}.jsonl")
    kc.create_connector({"name": marker, "config": increment_config(marker_out)})
    wait_growth(marker_out, 0, by=15)
    assert len(positions(out)) == count, f"{out.name} grew while {name} was {states(kc, name)}"
    assert kc.delete_connector(marker) is None
    wait_until(lambda: marker not in kc.list_connectors(), timeout_s=120, message=f"{marker} to be deleted")
    return count


def test_kafka_connect_py_drives_the_whole_connector_lifecycle(rest_driver, kc, http, tmp_path):
    out = tmp_path / "seq.jsonl"
    config = increment_config(out)

    info = kc.get_cluster_info()
    assert info["version"] == __version__ and info["commit"]
    assert info["kafka_cluster_id"] == "rest-it"  # local stores: the group id stands for the cluster
    assert kc.list_connectors() == []
    plugins = {p["class"]: p["type"] for p in kc.list_connector_plugins()}
    assert plugins["org.apache.kafka.connect.file.FileStreamSinkConnector"] == "sink"
    assert "source" in plugins.values()

    valid = kc.validate_connector_config("increment", {**config, "name": "seq"})
    assert valid["error_count"] == 0 and valid["name"] == "IncrementSourceConnector"
    invalid = kc.validate_connector_config("increment", {**config, "increments": "0", "tasks.max": "0"})
    errors = {c["value"]["name"] for c in invalid["configs"] if c["value"] and c["value"]["errors"]}
    assert {"increments", "tasks.max"} <= errors and invalid["error_count"] >= 2

    created = kc.create_connector({"name": "seq", "config": config})
    assert created["name"] == "seq" and created["type"] == "source" and created["config"] == {**config, "name": "seq"}
    wait_growth(out, 0, by=10)
    wait_states(kc, "seq", "RUNNING", ["RUNNING"])
    task = kc.get_connector_task_status("seq", 0)
    assert task["id"] == 0 and task["state"] == "RUNNING" and task["worker_id"]

    assert kc.list_connectors() == ["seq"]
    assert kc.list_connectors(expand="status")["seq"]["status"]["connector"]["state"] == "RUNNING"
    assert kc.list_connectors(expand="info")["seq"]["info"]["tasks"] == [{"connector": "seq", "task": 0}]
    both = http.get("/connectors", params=[("expand", "status"), ("expand", "info")]).json()
    assert set(both["seq"]) == {"status", "info"}
    assert kc.get_connector("seq")["tasks"] == [{"connector": "seq", "task": 0}]
    assert kc.get_connector_config("seq") == {**config, "name": "seq"}
    [task_info] = kc.list_connector_tasks("seq")
    assert task_info["id"] == {"connector": "seq", "task": 0} and task_info["config"]["increments"] == "1"

    updated = kc.update_connector("seq", {**config, "records.per.poll": "3"})
    assert updated["config"]["records.per.poll"] == "3"
    assert kc.get_connector_config("seq")["records.per.poll"] == "3"
    wait_growth(out, len(positions(out)))

    assert kc.pause_connector("seq") is None
    wait_states(kc, "seq", "PAUSED", ["PAUSED"])
    paused = assert_stays(kc, "seq", out, "marker-paused")
    assert kc.resume_connector("seq") is None
    wait_states(kc, "seq", "RUNNING", ["RUNNING"])
    wait_growth(out, paused)

    assert kc.restart_connector("seq") is None  # 204: only the connector restarts
    plan = kc.restart_connector("seq", include_tasks=True)  # 202 with what restarts
    assert plan["connector"]["state"] == "RESTARTING" and [t["state"] for t in plan["tasks"]] == ["RESTARTING"]
    wait_states(kc, "seq", "RUNNING", ["RUNNING"])
    wait_growth(out, len(positions(out)))
    plan = kc.restart_connector("seq", include_tasks=True, only_failed=True)
    assert "RESTARTING" not in [plan["connector"]["state"]] + [t["state"] for t in plan["tasks"]]
    assert kc.restart_connector_task("seq", 0) is None
    wait_states(kc, "seq", "RUNNING", ["RUNNING"])
    wait_growth(out, len(positions(out)))

    topics = kc.list_connector_topics("seq")
    assert list(topics) == ["seq"] and isinstance(topics["seq"]["topics"], list)
    assert kc.reset_connector_topics("seq") is None
    assert kc.list_connector_topics("seq") == {"seq": {"topics": []}}

    assert kc.stop_connector("seq") is None
    wait_states(kc, "seq", "STOPPED", [])
    assert kc.list_connector_tasks("seq") == []
    assert_stays(kc, "seq", out, "marker-stopped")

    assert kc.delete_connector("seq") is None
    assert kc.list_connectors() == []
    with pytest.raises(requests.HTTPError) as missing:
        kc.get_connector("seq")
    assert missing.value.response.status_code == 404
    seen = positions(out)
    assert seen == list(range(1, len(seen) + 1)), "gap or duplicate across pause, restart and update"


def test_offsets_api_moves_where_a_stopped_connector_continues(rest_driver, kc, http, tmp_path):
    out = tmp_path / "offsets.jsonl"
    kc.create_connector({"name": "moved", "config": increment_config(out)})
    wait_growth(out, 0)
    body = {"offsets": [{"partition": {"increment": 1}, "offset": {"position": 1000}}]}
    r = http.patch("/connectors/moved/offsets", json=body)
    assert r.status_code == 400 and "must be in the STOPPED state" in r.json()["message"]

    kc.stop_connector("moved")
    wait_states(kc, "moved", "STOPPED", [])
    written = positions(out)
    assert http.get("/connectors/moved/offsets").json() == {
        "offsets": [{"partition": {"increment": 1}, "offset": {"position": written[-1]}}]}

    r = http.patch("/connectors/moved/offsets", json=body)
    assert r.status_code == 200, r.text
    assert r.json() == {"message": "The offsets for this connector have been altered successfully"}
    assert http.get("/connectors/moved/offsets").json() == body
    kc.resume_connector("moved")
    wait_growth(out, len(written))
    after = positions(out)[len(written):]
    assert after[0] == 1001 and after == list(range(1001, 1001 + len(after)))

    kc.stop_connector("moved")
    wait_states(kc, "moved", "STOPPED", [])
    r = http.delete("/connectors/moved/offsets")
    assert r.status_code == 200
    assert r.json() == {"message": "The offsets for this connector have been reset successfully"}
    assert http.get("/connectors/moved/offsets").json() == {"offsets": []}
    before_reset = len(positions(out))
    kc.resume_connector("moved")
    wait_growth(out, before_reset)
    again = positions(out)[before_reset:]
    assert again == list(range(1, len(again) + 1))


def test_bad_input_gets_a_4xx_with_a_message_and_writes_nothing(rest_driver, kc, http, tmp_path):
    kc.create_connector({"name": "existing", "config": increment_config(tmp_path / "e.jsonl")})
    wait_states(kc, "existing", "RUNNING", ["RUNNING"])  # its task configs are in the log by now
    config_log = rest_driver.stores.config.backend
    end = config_log.end_offset()

    def rejected(response: requests.Response | httpx.Response, code: int, *fragments: str) -> None:
        assert response.status_code == code, response.text
        body = response.json()
        assert body["error_code"] == code and body["message"]
        for fragment in fragments:
            assert fragment in body["message"], body["message"]

    def client_error(call, *args) -> requests.Response:
        with pytest.raises(requests.HTTPError) as e:
            call(*args)
        return e.value.response

    json_header = {"content-type": "application/json"}
    rejected(http.post("/connectors", content=b'{"name": "x", "config": {"connector.class": ', headers=json_header),
             400, "not valid JSON")
    rejected(http.put("/connectors/x/config", content=b"not json", headers=json_header), 400, "not valid JSON")
    rejected(http.post("/connectors", json={"name": "x", "config": {"tasks.max": {"nested": 1}}}), 400, "tasks.max")
    rejected(client_error(kc.create_connector, {"name": "x", "config": {"connector.class": "NoSuchConnector"}}),
             400, "NoSuchConnector")
    rejected(client_error(kc.create_connector, {"name": "x", "config": increment_config(
        tmp_path / "x", increments="one,two", **{"tasks.max": "-3"})}), 400, "increments", "tasks.max")
    rejected(client_error(kc.create_connector, {"name": "existing", "config": increment_config(tmp_path / "e")}),
             409, "already exists")
    rejected(client_error(kc.update_connector, "x", {"connector.class": "increment", "bogus.key": "1"}), 400,
             "bogus.key")
    rejected(client_error(kc.validate_connector_config, "file-sink", {"connector.class": "increment"}), 400,
             "does not match")
    rejected(client_error(kc.get_connector, "nope"), 404, "nope")
    rejected(client_error(kc.get_connector_status, "nope"), 404, "nope")
    rejected(client_error(kc.pause_connector, "nope"), 404, "nope")
    rejected(client_error(kc.delete_connector, "nope"), 404, "nope")
    rejected(client_error(kc.get_connector_task_status, "existing", 9), 404, "existing-9")
    with pytest.raises(requests.HTTPError):  # the client raises its own HTTPError from the 404 body
        kc.restart_connector("nope")
    rejected(http.get("/no/such/thing"), 404, "HTTP 404 Not Found")
    rejected(http.patch("/connectors/existing/offsets", json={"offsets": "x"}), 400)
    assert config_log.end_offset() == end


def test_no_generated_request_gets_a_server_error(spark, tmp_path):
    """Schemathesis against /openapi.json with authentication on: every operation, positive and negative,
    bounded by examples (8 each, derandomized) rather than time, loopback only, never a 5xx (and never a
    401 for the authenticated session: the guard must not reject good credentials)."""
    import schemathesis
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis.errors import Unsatisfiable

    levels = {name: lg.level for name, lg in logging.root.manager.loggerDict.items()
              if isinstance(lg, logging.Logger)}
    root_level = logging.getLogger().level
    credentials = tmp_path / "rest.password"
    credentials.write_text("fuzzer: fuzz-pass\n")
    credentials.chmod(0o600)
    worker = local_worker(tmp_path)
    worker = dataclasses.replace(worker, rest_security=dataclasses.replace(
        worker.rest_security, basic_credentials_file=str(credentials)))
    driver = start_driver(spark, worker)
    url = base_url(driver)
    failures: list[str] = []
    calls: list[str] = []
    try:
        assert requests.get(f"{url}/openapi.json", timeout=30).status_code == 401
        schema = schemathesis.openapi.from_url(f"{url}/openapi.json", timeout=30, auth=("fuzzer", "fuzz-pass"))
        with requests.Session() as session:
            session.auth = ("fuzzer", "fuzz-pass")
            for result in schema.get_all_operations():
                operation = result.ok()
                for mode in (schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE):
                    @given(case=operation.as_strategy(generation_mode=mode))
                    @settings(max_examples=8, deadline=None, database=None, phases=[Phase.generate],
                              suppress_health_check=list(HealthCheck), derandomize=True)
                    def call(case) -> None:
                        response = case.call(base_url=url, session=session, timeout=60)
                        calls.append(operation.label)
                        if response.status_code >= 500 or response.status_code == 401:
                            failures.append(f"{operation.label} {mode.value}: {response.status_code} "
                                            f"{response.text[:300]}")

                    try:
                        call()
                    except Unsatisfiable:
                        assert mode is schemathesis.GenerationMode.NEGATIVE  # nothing to break in a plain string
    finally:
        driver.stop()
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)
        logging.getLogger().setLevel(root_level)
    assert len(set(calls)) >= 20 and len(calls) >= 150, f"too few generated requests: {len(calls)}"
    assert not failures, "\n".join(failures)


def test_server_info_names_the_brokers_cluster_id(spark, broker, tmp_path, unique_name):
    worker = WorkerConfig(state_dir=str(tmp_path / "state"), bootstrap_servers=broker.bootstrap,
                          config_topic=f"{unique_name}-configs", offset_topic=f"{unique_name}-offsets",
                          status_topic=f"{unique_name}-status", rest_host="127.0.0.1", rest_port=free_port(),
                          file_allowed_dirs=[str(tmp_path)])
    driver = start_driver(spark, worker)
    try:
        info = KafkaConnect(url=base_url(driver)).get_cluster_info()
    finally:
        driver.stop()
    assert info["kafka_cluster_id"] == broker.cluster_id
