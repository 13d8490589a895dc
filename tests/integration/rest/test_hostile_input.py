"""Hostile input through the REST API of a real driver (real Spark, local stores): it changes nothing.

Names that look like paths, names outside Latin-1, modules with import side effects,
files outside the allowed directories and secrets: each is refused with a 4xx before
anything is written (the config log's end offset stays where it was), or, for names
Connect accepts, kept strictly inside the connector's own directory; secrets appear
in no response, log record or status trace.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from sparkcat.bootstrap import Driver
from sparkcat.config.worker import WorkerConfig
from tests.broker import free_port
from tests.kafka_helpers import wait_until
from tests.plugins import secret_probe

pytestmark = pytest.mark.integration

ENV_SECRET = "env-s3cret-4f1d"
PLAIN_SECRET = "plain-s3cret-9c2a"


@pytest.fixture
def driver(spark, tmp_path, monkeypatch) -> Iterator[Driver]:
    monkeypatch.setenv("SPARKCAT_HOSTILE_SECRET", ENV_SECRET)
    worker = WorkerConfig(state_dir=str(tmp_path / "state"), pipelines_dir=str(tmp_path / "pipelines"),
                          rest_host="127.0.0.1", rest_port=free_port(), group_id="hostile-it",
                          plugin_packages=["sparkcat.connectors", "tests.plugins"],
                          config_providers={"config.providers": "env,file",
                                            "config.providers.env.class":
                                                "org.apache.kafka.common.config.provider.EnvVarConfigProvider",
                                            "config.providers.file.class":
                                                "org.apache.kafka.common.config.provider.FileConfigProvider",
                                            "config.providers.file.param.allowed.paths": str(tmp_path / "secrets")})
    with Driver(spark, worker, rest=True, watch_pipelines=False) as running:
        yield running


@pytest.fixture
def http(driver) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=f"http://127.0.0.1:{driver.worker.rest_port}", timeout=60) as client:
        yield client


def state_dir(driver: Driver) -> Path:
    return Path(driver.worker.state_dir).resolve()


def increment(driver: Driver, out: str = "out.jsonl", **extra: str) -> dict[str, str]:
    return {"connector.class": "increment", "increments": "1", "records.per.poll": "5",
            "trigger.interval.ms": "200", "sink.connector.class": "file-sink",
            "sink.file": str(state_dir(driver) / out), **extra}


def log_end(driver: Driver) -> int:
    return driver.stores.config.backend.end_offset()


def refused(http: httpx.Client, driver: Driver, method: str, url: str, body=None, status: int = 400) -> str:
    """Send the request; it must answer ``status`` and leave the config log as it was. Returns the message."""
    before = log_end(driver)
    response = http.request(method, url, json=body)
    assert response.status_code == status, response.text
    assert log_end(driver) == before, "a refused request wrote to the config log"
    return response.json()["message"]


def running_victim(http: httpx.Client, driver: Driver) -> Path:
    """A connector whose query runs and has a checkpoint: what a hostile name must not destroy."""
    assert http.post("/connectors", json={"name": "victim", "config": increment(driver, "victim.jsonl")}
                     ).status_code == 201
    checkpoint = state_dir(driver) / "checkpoints" / "victim"
    wait_until(lambda: (checkpoint / "commits" / "0").exists(), timeout_s=120, message="victim's first commit")
    return checkpoint


def test_names_that_look_like_paths_stay_inside_their_own_checkpoint_directory(driver, http):
    checkpoint = running_victim(http, driver)
    stores = state_dir(driver) / "stores"
    for name, url_name in [("..", "%2E%2E"), (".", "%2E"), ("a/../../x", None), ("_sparkcat-config-log", None),
                           ("_sparkcat-config-log-vm%3A8083", None), ("caf\u00e9 \U0001F680 \u65e5\u672c", None)]:
        created = http.post("/connectors", json={"name": name, "config": increment(driver, "hostile.jsonl"),
                                                 "initial_state": "STOPPED"})
        assert created.status_code == 201, created.text
        assert created.json()["name"] == name
        if url_name is not None:
            assert created.headers["location"] == f"/connectors/{url_name}"
            assert http.delete(f"/connectors/{url_name}/offsets").status_code == 200
            assert http.delete(f"/connectors/{url_name}").status_code == 204
        else:
            driver.herder.reset_connector_offsets(name)
            driver.herder.delete_connector(name)
        wait_until(lambda: name not in driver.reconciler.lifecycles, timeout_s=60, message=f"{name!r} forgotten")
        assert checkpoint.is_dir() and stores.is_dir(), f"{name!r} removed state"
    assert not (state_dir(driver).parent / "x").exists()
    assert http.get("/connectors/victim/status").json()["connector"]["state"] == "RUNNING"


def test_a_name_outside_latin_1_is_created_whole_and_readable(driver, http):
    name = "\u65e5\u672c-\U0001F680"
    created = http.put(f"/connectors/{name}/config", json=increment(driver))
    assert created.status_code == 201, created.text
    assert created.headers["location"] == "/connectors/%E6%97%A5%E6%9C%AC-%F0%9F%9A%80"
    assert http.get(f"/connectors/{name}").json()["name"] == name
    wait_until(lambda: (state_dir(driver) / "checkpoints" / "%E6%97%A5%E6%9C%AC-%F0%9F%9A%80").is_dir(),
               timeout_s=120, message="the encoded checkpoint directory")


@pytest.mark.parametrize("name, rule", [
    ("", "may not be empty"), ("   ", "may not be empty"), ("be\u0007ll", "ISO control characters"),
    ("line\nbreak", "U+000A"), ("c1\u0085", "U+0085"), ("\u0085c1", "U+0085"), ("x" * 1001, "at most 1000"),
    ("sparkcat-config-log", "reserved"),
])
def test_names_that_cannot_be_represented_are_refused_before_anything_is_written(driver, http, name, rule):
    message = refused(http, driver, "POST", "/connectors", {"name": name, "config": increment(driver)})
    assert rule in message
    if name.strip():
        assert rule in refused(http, driver, "PUT", f"/connectors/{quote(name, safe='')}/config", increment(driver))


def test_names_with_surrounding_whitespace_are_trimmed_on_create_and_refused_elsewhere(driver, http):
    created = http.post("/connectors", json={"name": " padded\t", "config": increment(driver),
                                             "initial_state": "STOPPED"})
    assert created.status_code == 201 and created.json()["name"] == "padded"  # Connect trims, too
    assert "whitespace" in refused(http, driver, "PUT", "/connectors/%20padded/config", increment(driver))


def test_modules_outside_plugin_packages_are_never_imported(driver, http, tmp_path, monkeypatch):
    marker = tmp_path / "imported"
    (tmp_path / "mods").mkdir()
    (tmp_path / "mods" / "hostile_side_effect.py").write_text(
        f"open({str(marker)!r}, 'w').write('imported')\nclass Evil: pass\n")
    monkeypatch.syspath_prepend(str(tmp_path / "mods"))
    evil = "hostile_side_effect:Evil"
    assert "plugin.packages" in refused(http, driver, "POST", "/connectors",
                                       {"name": "evil", "config": {"connector.class": evil}})
    refused(http, driver, "GET", f"/connector-plugins/{evil}/config", status=404)
    refused(http, driver, "PUT", f"/connector-plugins/{evil}/config/validate", {"connector.class": evil})
    refused(http, driver, "POST", "/connectors", {"name": "evil", "config": {
        **increment(driver), "value.converter": "hostile_side_effect.Evil"}})
    refused(http, driver, "POST", "/connectors", {"name": "evil", "config": {
        **increment(driver), "sink.connector.class": evil}})
    assert not marker.exists(), "a module outside plugin.packages was imported"


def test_files_outside_the_allowed_directories_are_refused(driver, http, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    link = state_dir(driver) / "link"
    state_dir(driver).mkdir(parents=True, exist_ok=True)
    link.symlink_to(outside, target_is_directory=True)
    for path in [str(outside / "out.txt"), str(state_dir(driver) / ".." / "outside" / "out.txt"),
                 str(link / "out.txt"), "/etc/passwd"]:
        message = refused(http, driver, "POST", "/connectors", {"name": "f", "config": {
            **increment(driver), "sink.file": path}})
        assert "sink.file" in message and "file.allowed.dirs" in message and str(state_dir(driver)) in message
        message = refused(http, driver, "POST", "/connectors", {"name": "f", "config": {
            "connector.class": "file-source", "file": path, "topic": "t"}})
        assert "file" in message and "outside the allowed directories" in message
        validated = http.put("/connector-plugins/file-sink/config/validate", json={
            "connector.class": "file-sink", "name": "f", "topics": "t", "file": path}).json()
        assert validated["error_count"] >= 1
    assert list(outside.iterdir()) == []
    own = state_dir(driver) / "stores" / "connect-configs.log"  # appended lines would be config records
    assert "never open to connectors" in refused(http, driver, "POST", "/connectors", {"name": "f", "config": {
        **increment(driver), "sink.file": str(own)}})


def test_secrets_appear_in_no_response_log_record_or_status_trace(driver, http, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    name = "probe"
    config = {"connector.class": "tests.plugins.secret_probe:SecretProbeConnector",
              "probe.password": PLAIN_SECRET, "probe.user": "${env:SPARKCAT_HOSTILE_SECRET}",
              "producer.override.sasl.jaas.config": f"org.apache.kafka.common.security.plain.PlainLoginModule "
                                                    f"required password=\"{PLAIN_SECRET}\";",
              "sink.connector.class": "file-sink", "sink.file": str(state_dir(driver) / "probe.jsonl")}
    secret_probe.STARTED.clear()
    responses = [http.post("/connectors", json={"name": name, "config": config, "initial_state": "PAUSED"})]
    wait_until(lambda: secret_probe.STARTED, timeout_s=60, message="the probe connector to start")
    started = secret_probe.STARTED[-1]
    assert started["probe.user"] == ENV_SECRET and started["probe.password"] == PLAIN_SECRET
    wait_until(lambda: http.get(f"/connectors/{name}/tasks").json(), timeout_s=60, message="task configs")
    for url in [f"/connectors/{name}", f"/connectors/{name}/config", f"/connectors/{name}/tasks",
                "/connectors?expand=info&expand=status", f"/connectors/{name}/status"]:
        responses.append(http.get(url))
    responses.append(http.put("/connector-plugins/SecretProbeConnector/config/validate",
                              json={**config, "name": name}))
    tasks = http.get(f"/connectors/{name}/tasks").json()
    assert tasks[0]["config"]["probe.user"] == "${env:SPARKCAT_HOSTILE_SECRET}"  # stored as the placeholder
    assert http.get(f"/connectors/{name}/config").json()["probe.password"] == "[hidden]"

    assert http.put(f"/connectors/{name}/config", json={**config, "probe.fail": "true"}).status_code == 200
    wait_until(lambda: http.get(f"/connectors/{name}/status").json()["connector"]["state"] == "FAILED",
               timeout_s=60, message="the probe to fail")
    status = http.get(f"/connectors/{name}/status")
    responses.append(status)
    assert "[hidden]" in status.json()["connector"]["trace"]
    for response in responses:
        assert response.status_code < 300, response.text
        assert PLAIN_SECRET not in response.text and ENV_SECRET not in response.text, response.request.url
    logged = [r.getMessage() for r in caplog.records]
    assert not [m for m in logged if PLAIN_SECRET in m or ENV_SECRET in m]
    for record in driver.stores.config.backend.read(0):  # the config log holds the placeholder only
        assert ENV_SECRET.encode() not in (record.value or b"")
    status_log = (state_dir(driver) / "stores").glob("*status*")
    for path in status_log:
        assert PLAIN_SECRET not in path.read_text(errors="replace") and ENV_SECRET not in path.read_text(
            errors="replace")
    config_log = [p for p in (state_dir(driver) / "stores").iterdir() if "config" in p.name]
    assert config_log and not [p for p in config_log if ENV_SECRET in p.read_text(errors="replace")]


def test_a_file_provider_outside_its_allowed_paths_is_refused(driver, http, tmp_path):
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    (secrets / "db.properties").write_text("password=from-file\n")
    (tmp_path / "elsewhere.properties").write_text("password=elsewhere\n")
    base = {"connector.class": "tests.plugins.secret_probe:SecretProbeConnector",
            "sink.connector.class": "file-sink", "sink.file": str(state_dir(driver) / "p.jsonl")}
    ok = http.put("/connector-plugins/SecretProbeConnector/config/validate", json={
        **base, "name": "p", "probe.user": f"${{file:{secrets / 'db.properties'}:password}}"}).json()
    assert ok["error_count"] == 0, json.dumps(ok)
    message = refused(http, driver, "POST", "/connectors", {"name": "p", "config": {
        **base, "probe.user": f"${{file:{tmp_path / 'elsewhere.properties'}:password}}"}})
    assert "probe.user" in message and "allowed.paths" in message
    message = refused(http, driver, "POST", "/connectors", {"name": "p", "config": {
        **base, "probe.user": "${vault:secret/db:password}"}})
    assert "vault" in message and "config.providers" in message
