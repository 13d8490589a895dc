"""The REST API against the real herder and reconciler on memory stores (no Spark, no broker)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkcat import __version__
from tests.kafka_helpers import wait_until

ERROR_KEYS = {"error_code", "message"}


def increment(out: Path, **extra: str) -> dict[str, str]:
    return {"connector.class": "increment", "increments": "1,2", "tasks.max": "2",
            "sink.connector.class": "file-sink", "sink.file": str(out), **extra}


def create(client, name: str, config: dict, state: str = "PAUSED"):
    return client.post("/connectors", json={"name": name, "config": config, "initial_state": state})


def status(client, name: str) -> dict:
    return client.get(f"/connectors/{name}/status").json()


def states(client, name: str) -> tuple[str, list[str]]:
    s = status(client, name)
    return s["connector"]["state"], [t["state"] for t in s["tasks"]]


def assert_error(response, code: int, *fragments: str) -> dict:
    assert response.status_code == code, response.text
    body = response.json()
    assert set(body) == ERROR_KEYS and body["error_code"] == code
    for fragment in fragments:
        assert fragment in body["message"], body["message"]
    return body


def test_server_info_names_version_commit_and_cluster(client):
    info = client.get("/").json()
    assert info["version"] == __version__
    assert info["commit"]
    assert info["kafka_cluster_id"] == "rest-unit"  # local stores: the group id


def test_create_get_list_and_expand(client, tmp_path):
    r = create(client, "seq", increment(tmp_path / "out.jsonl"))
    assert r.status_code == 201, r.text
    assert r.headers["location"] == "/connectors/seq"
    body = r.json()
    assert body["name"] == "seq" and body["type"] == "source"
    assert body["config"]["name"] == "seq" and body["config"]["increments"] == "1,2"

    assert_error(create(client, "seq", increment(tmp_path / "out.jsonl")), 409, "already exists")
    assert client.get("/connectors").json() == ["seq"]
    wait_until(lambda: states(client, "seq") == ("PAUSED", ["PAUSED", "PAUSED"]), timeout_s=30,
               message="PAUSED with two tasks")

    info = client.get("/connectors/seq").json()
    assert info["tasks"] == [{"connector": "seq", "task": 0}, {"connector": "seq", "task": 1}]
    assert client.get("/connectors/seq/config").json() == info["config"]
    expanded = client.get("/connectors?expand=status&expand=info").json()
    assert set(expanded["seq"]) == {"status", "info"}
    assert expanded["seq"]["info"] == info
    assert expanded["seq"]["status"]["connector"]["state"] == "PAUSED"
    assert set(client.get("/connectors", params={"expand": "status"}).json()["seq"]) == {"status"}
    tasks = client.get("/connectors/seq/tasks").json()
    assert [t["id"] for t in tasks] == info["tasks"]
    assert tasks[0]["config"]["increments"] == "1" and tasks[1]["config"]["increments"] == "2"
    task = client.get("/connectors/seq/tasks/1/status").json()
    assert task["id"] == 1 and task["state"] == "PAUSED" and task["worker_id"]


def test_put_creates_then_updates_and_patch_merges(client, driver, tmp_path):
    config = increment(tmp_path / "out.jsonl")
    r = client.put("/connectors/p/config", json=config)
    assert r.status_code == 201 and r.json()["name"] == "p"
    client.put("/connectors/p/pause")
    r = client.put("/connectors/p/config", json={**config, "records.per.poll": 7, "tasks.max": 1})
    assert r.status_code == 200
    assert r.json()["config"]["records.per.poll"] == "7"  # JSON numbers are stored as text, as Connect does

    r = client.patch("/connectors/p/config", json={"records.per.poll": "9", "trigger.interval.ms": None,
                                                   "batch.max.records": True and "50"})
    assert r.status_code == 200, r.text
    patched = client.get("/connectors/p/config").json()
    assert patched["records.per.poll"] == "9" and patched["batch.max.records"] == "50"
    client.patch("/connectors/p/config", json={"batch.max.records": None})
    assert "batch.max.records" not in client.get("/connectors/p/config").json()

    assert_error(client.patch("/connectors/missing/config", json={"a": "b"}), 404, "missing")
    assert_error(client.put("/connectors/p/config", json={**config, "name": "other"}), 400,
                 "Connector name configuration (other) doesn't match connector name in the URL (p)")
    before = driver.config_log_end()
    assert_error(client.patch("/connectors/p/config", json={"tasks.max": "zero"}), 400, "tasks.max")
    assert driver.config_log_end() == before


def test_invalid_input_is_a_4xx_with_a_message_and_writes_nothing(client, driver, tmp_path):
    create(client, "ok", increment(tmp_path / "o"))
    # the herder writes the new connector's task configs after the POST returns: let it finish first
    wait_until(lambda: len(driver.herder.task_configs("ok")) == 2, timeout_s=30, message="ok's task configs")
    before = driver.config_log_end()
    cases = [
        (create(client, "bad", increment(tmp_path / "x", **{"tasks.max": "-1"})), 400, ["tasks.max"]),
        (create(client, "bad", {"connector.class": "NoSuchConnector"}), 400, ["connector.class", "NoSuchConnector"]),
        (create(client, "bad", increment(tmp_path / "x", typo_key="1")), 400, ["typo_key"]),
        (create(client, "bad", {**increment(tmp_path / "x"), "records.per.poll": None}), 400, ["records.per.poll"]),
        (create(client, "bad", {**increment(tmp_path / "x"), "name": "other"}), 400, ["doesn't match"]),
        (create(client, "bad", increment(tmp_path / "x"), state="RUNNING_FAST"), 400, ["initial_state"]),
        (client.post("/connectors", json={"name": "bad"}), 400, ["config"]),
        (client.post("/connectors", content=b'{"name": "bad", "config": {', headers={"content-type": "application/json"}),
         400, ["not valid JSON"]),
        (client.post("/connectors", content=b"", headers={"content-type": "application/json"}), 400, ["body"]),
        (client.post("/connectors", json=["a", "list"]), 400, []),
        (client.post("/connectors", json={"name": "bad", "config": {"nested": {"a": 1}}}), 400, ["nested"]),
        (client.put("/connectors/bad/config", json={"connector.class": "increment", "increments": "0"}), 400,
         ["increments"]),
        (client.put("/connectors/bad/config", json="text"), 400, []),
        (client.put("/connectors/ok/pause"), 202, None),
    ]
    for response, code, fragments in cases:
        if fragments is None:
            continue
        assert_error(response, code, *fragments)
    assert driver.config_log_end() == before + 1  # only the pause


def test_unknown_names_paths_and_methods_answer_in_connects_shape(client):
    for method, path in [("get", "/connectors/nope"), ("get", "/connectors/nope/config"),
                         ("get", "/connectors/nope/status"), ("get", "/connectors/nope/tasks"),
                         ("get", "/connectors/nope/tasks/0/status"), ("post", "/connectors/nope/restart"),
                         ("post", "/connectors/nope/tasks/0/restart"), ("put", "/connectors/nope/pause"),
                         ("put", "/connectors/nope/resume"), ("put", "/connectors/nope/stop"),
                         ("delete", "/connectors/nope"), ("get", "/connectors/nope/offsets"),
                         ("delete", "/connectors/nope/offsets"), ("get", "/connectors/nope/topics"),
                         ("put", "/connectors/nope/topics/reset"), ("get", "/connector-plugins/nope/config")]:
        assert_error(getattr(client, method)(path), 404, "nope")
    assert_error(client.get("/no/such/path"), 404, "HTTP 404 Not Found")
    assert_error(client.get("/connectors/nope/tasks/abc/status"), 404)
    assert_error(client.delete("/connector-plugins"), 405, "Method Not Allowed")


def test_restart_answers_204_or_202_with_the_restart_plan(client, tmp_path):
    create(client, "r", increment(tmp_path / "o"))
    wait_until(lambda: states(client, "r") == ("PAUSED", ["PAUSED", "PAUSED"]), timeout_s=30, message="paused")
    r = client.post("/connectors/r/restart")
    assert r.status_code == 204 and r.content == b""
    r = client.post("/connectors/r/restart", params={"includeTasks": "True", "onlyFailed": "False"})
    assert r.status_code == 202
    plan = r.json()
    assert plan["name"] == "r" and plan["connector"]["state"] == "RESTARTING"
    assert [t["state"] for t in plan["tasks"]] == ["RESTARTING", "RESTARTING"]
    # the restart above is done first: until then its RESTARTING is the connector's current state (as in Connect)
    wait_until(lambda: states(client, "r") == ("PAUSED", ["PAUSED", "PAUSED"]), timeout_s=30,
               message="paused again after the full restart")
    r = client.post("/connectors/r/restart?includeTasks=true&onlyFailed=true")
    assert r.status_code == 202
    assert r.json()["connector"]["state"] != "RESTARTING"  # nothing FAILED: nothing restarts
    wait_until(lambda: states(client, "r") == ("PAUSED", ["PAUSED", "PAUSED"]), timeout_s=30,
               message="paused again after the restart")
    assert client.post("/connectors/r/tasks/1/restart").status_code == 204
    assert_error(client.post("/connectors/r/tasks/7/restart"), 404, "r-7")


def test_source_offsets_need_stopped_then_alter_and_reset(client, driver, tmp_path):
    create(client, "o", increment(tmp_path / "o"))
    body = {"offsets": [{"partition": {"increment": 1}, "offset": {"position": 1000}}]}
    assert_error(client.patch("/connectors/o/offsets", json=body), 400,
                 "Connectors must be in the STOPPED state before their offsets can be modified",
                 "'/connectors/o/stop'")
    assert_error(client.delete("/connectors/o/offsets"), 400, "STOPPED")

    assert client.put("/connectors/o/stop").status_code == 204
    wait_until(lambda: states(client, "o") == ("STOPPED", []), timeout_s=30, message="STOPPED")
    checkpoint = str(Path(driver.worker.state_dir).resolve() / "checkpoints" / "o")
    r = client.patch("/connectors/o/offsets", json=body)
    assert r.status_code == 200, r.text
    assert r.json() == {"message": "The offsets for this connector have been altered successfully"}
    assert client.get("/connectors/o/offsets").json() == {
        "offsets": [{"partition": {"increment": 1}, "offset": {"position": 1000}}]}
    # the next query takes its start from the offsets store
    assert driver.reconciler.runner.deleted_checkpoints == [checkpoint]

    for bad, message in [({"offsets": []}, "Partitions / offsets need to be provided"),
                         ({}, "Partitions / offsets need to be provided"),
                         ({"offsets": [{"offset": {"position": 1}}]}, "cannot be null"),
                         ({"offsets": [{"partition": {"increment": 1}, "offset": {"p": [1]}}]}, "primitive types"),
                         ({"offsets": "x"}, "offsets")]:
        assert_error(client.patch("/connectors/o/offsets", json=bad), 400, message)

    r = client.delete("/connectors/o/offsets")
    assert r.status_code == 200
    assert r.json() == {"message": "The offsets for this connector have been reset successfully"}
    assert client.get("/connectors/o/offsets").json() == {"offsets": []}


def test_sink_offsets_use_connects_kafka_partition_shape(client, tmp_path):
    config = {"connector.class": "file-sink", "file": str(tmp_path / "sink.txt"), "topics": "t"}
    assert create(client, "s", config, state="STOPPED").status_code == 201
    assert client.get("/connectors/s").json()["type"] == "sink"
    wait_until(lambda: states(client, "s")[0] == "STOPPED", timeout_s=30, message="STOPPED")
    r = client.patch("/connectors/s/offsets", json={"offsets": [
        {"partition": {"kafka_topic": "t", "kafka_partition": "1"}, "offset": {"kafka_offset": 42}},
        {"partition": {"kafka_topic": "t", "kafka_partition": 0}, "offset": {"kafka_offset": "7"}}]})
    assert r.status_code == 200, r.text
    assert client.get("/connectors/s/offsets").json()["offsets"] == [
        {"partition": {"kafka_topic": "t", "kafka_partition": 0}, "offset": {"kafka_offset": 7}},
        {"partition": {"kafka_topic": "t", "kafka_partition": 1}, "offset": {"kafka_offset": 42}}]
    for partition, offset, message in [
        ({"kafka_topic": "t"}, {"kafka_offset": 1}, "must contain the keys 'kafka_topic' and 'kafka_partition'"),
        ({"kafka_topic": None, "kafka_partition": 0}, {"kafka_offset": 1}, "Kafka topic names must be valid"),
        ({"kafka_topic": "t", "kafka_partition": "x"}, {"kafka_offset": 1}, "Failed to parse the following Kafka partition"),
        ({"kafka_topic": "t", "kafka_partition": 0}, {"position": 1}, "should either be null or contain the key"),
        ({"kafka_topic": "t", "kafka_partition": 0}, {"kafka_offset": 1.5}, "Failed to parse the following Kafka offset"),
    ]:
        assert_error(client.patch("/connectors/s/offsets", json={"offsets": [
            {"partition": partition, "offset": offset}]}), 400, message)
    client.patch("/connectors/s/offsets", json={"offsets": [
        {"partition": {"kafka_topic": "t", "kafka_partition": 1}, "offset": None}]})
    assert [o["partition"]["kafka_partition"] for o in client.get("/connectors/s/offsets").json()["offsets"]] == [0]


def test_pause_resume_stop_delete_status_codes(client, driver, tmp_path):
    create(client, "d", increment(tmp_path / "o"), state="STOPPED")
    wait_until(lambda: states(client, "d") == ("STOPPED", []), timeout_s=30, message="STOPPED")
    assert client.get("/connectors/d/tasks").json() == []
    assert client.put("/connectors/d/pause").status_code == 202
    wait_until(lambda: states(client, "d")[0] == "PAUSED", timeout_s=30, message="PAUSED")
    assert client.put("/connectors/d/stop").status_code == 204
    assert client.delete("/connectors/d").status_code == 204
    assert client.get("/connectors").json() == []
    assert_error(client.get("/connectors/d"), 404)


def test_topics_and_reset(client, driver, tmp_path):
    from sparkcat.model.status import TopicStatus

    create(client, "tp", increment(tmp_path / "o"))
    driver.stores.status.put_topic(TopicStatus("seq_1", "tp", 0, 1))
    assert client.get("/connectors/tp/topics").json() == {"tp": {"topics": ["seq_1"]}}
    assert client.put("/connectors/tp/topics/reset").status_code == 202
    assert client.get("/connectors/tp/topics").json() == {"tp": {"topics": []}}


def test_plugins_config_definitions_and_validate(client):
    plugins = client.get("/connector-plugins").json()
    by_class = {p["class"]: p for p in plugins}
    assert by_class["org.apache.kafka.connect.file.FileStreamSinkConnector"]["type"] == "sink"
    assert by_class["org.apache.kafka.connect.file.FileStreamSourceConnector"]["type"] == "source"
    assert all(set(p) == {"class", "type", "version"} for p in plugins)
    assert client.get("/connector-plugins?connectorsOnly=false").status_code == 200

    keys = client.get("/connector-plugins/increment/config").json()
    names = [k["name"] for k in keys]
    assert names[0] == "increments" and "tasks.max" in names and "topics" not in names
    assert set(keys[0]) == {"name", "type", "required", "default_value", "importance", "documentation", "group",
                            "width", "display_name", "dependents", "order"}
    assert "topics" in [k["name"] for k in client.get("/connector-plugins/FileStreamSink/config").json()]

    ok = client.put("/connector-plugins/increment/config/validate",
                    json={"connector.class": "increment", "increments": "1", "name": "v"}).json()
    assert ok["name"] == "IncrementSourceConnector" and ok["error_count"] == 0 and ok["groups"]
    bad = client.put("/connector-plugins/FileStreamSinkConnector/config/validate",
                     json={"connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
                           "tasks.max": "0", "topics": "a", "topics.regex": "b"}).json()
    errors = {c["value"]["name"]: c["value"]["errors"] for c in bad["configs"] if c["value"] and c["value"]["errors"]}
    assert {"tasks.max", "topics", "topics.regex", "file", "name"} <= set(errors)
    assert bad["error_count"] == sum(len(v) for v in errors.values())
    assert_error(client.put("/connector-plugins/file-sink/config/validate", json={"connector.class": "increment"}),
                 400, "Included connector type increment does not match request type file-sink")
    assert_error(client.put("/connector-plugins/Nope/config/validate", json={"connector.class": "Nope"}), 400,
                 "Failed to find any class")
    assert_error(client.put("/connector-plugins/increment/config/validate", json={"increments": "1"}), 400,
                 "no connector type")


def test_password_values_are_hidden_in_validate_and_in_every_config_response(client, driver, tmp_path):
    secret = "tests.unit.rest.secret_connector:SecretSourceConnector"
    config = {"connector.class": secret, "db.password": "s3cr3t", "db.port": "x", "name": "sec"}
    result = client.put(f"/connector-plugins/{secret}/config/validate", json=config).json()
    values = {c["value"]["name"]: c["value"] for c in result["configs"] if c["value"]}
    assert values["db.password"]["value"] == "[hidden]"
    assert "s3cr3t" not in str(result)
    assert values["db.port"]["errors"]
    # Unlike Connect, whose GET /connectors/NAME/config returns stored secrets as they are.
    create(client, "sec", {**config, "db.port": "1", "sink.connector.class": "file-sink",
                           "sink.file": str(tmp_path / "x")})
    assert client.get("/connectors/sec/config").json()["db.password"] == "[hidden]"
    assert client.get("/connectors/sec").json()["config"]["db.password"] == "[hidden]"
    # A config read back and sent again keeps its secret instead of storing "[hidden]".
    again = client.get("/connectors/sec/config").json()
    assert client.put("/connectors/sec/config", json={**again, "db.port": "2"}).status_code == 200
    assert driver.herder.connector_config("sec")["db.password"] == "s3cr3t"


def test_classes_outside_plugin_packages_are_refused_without_import(client):
    for path in ["os:system", "tests.unit:Nothing"]:
        assert_error(client.get(f"/connector-plugins/{path}/config"), 404, "Unknown plugin")
        assert_error(client.put(f"/connector-plugins/{path}/config/validate", json={"connector.class": path}),
                     400, "plugin.packages")


def test_loggers_list_get_and_set(client):
    import logging

    listed = client.get("/admin/loggers").json()
    assert "root" in listed and set(listed["root"]) == {"level", "last_modified"}
    logging.getLogger("sparkcat.rest.unit.child")
    r = client.put("/admin/loggers/sparkcat.rest.unit", json={"level": "trace"})
    assert r.status_code == 200
    assert r.json() == ["sparkcat.rest.unit", "sparkcat.rest.unit.child"]
    assert logging.getLogger("sparkcat.rest.unit.child").level == 5
    got = client.get("/admin/loggers/sparkcat.rest.unit.child").json()
    assert got["level"] == "TRACE" and isinstance(got["last_modified"], int)
    assert client.get("/admin/loggers").json()["sparkcat.rest.unit"]["level"] == "TRACE"
    # scope=cluster (KIP-976): a logger-cluster- record in the config log, applied as the herder reads it back
    assert client.put("/admin/loggers/sparkcat.rest.unit?scope=cluster", json={"level": "warn"}).status_code == 204
    wait_until(lambda: logging.getLogger("sparkcat.rest.unit").getEffectiveLevel() == logging.WARNING,
               timeout_s=30, message="the cluster level applied")
    assert logging.getLogger("sparkcat.rest.unit.child").level == logging.WARNING
    assert_error(client.get("/admin/loggers/no.such.logger.anywhere"), 404, "Logger no.such.logger.anywhere not found.")
    assert_error(client.put("/admin/loggers/x", json={"level": "LOUD"}), 404, "invalid log level 'LOUD'.")
    assert_error(client.put("/admin/loggers/x", json={}), 400, "Desired 'level' parameter was not specified")


def test_health_metrics_and_openapi(client, tmp_path):
    assert client.get("/health").json() == {
        "status": "healthy", "message": "Worker has completed startup and is ready to handle requests."}
    create(client, "m", increment(tmp_path / "o"))
    wait_until(lambda: states(client, "m") == ("PAUSED", ["PAUSED", "PAUSED"]), timeout_s=30, message="paused")
    r = client.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    text = r.text
    for line in ['sparkcat_connector_records_total{connector="m"} 0',
                 'sparkcat_connector_batches_total{connector="m"} 0',
                 'sparkcat_connector_last_batch_duration_seconds{connector="m"} 0.0',
                 'sparkcat_task_failed{connector="m",task="1"} 0',
                 'sparkcat_connector_auto_restarts{connector="m"} 0.0']:
        assert line in text
    assert 'sparkcat_connector_state{connector="m",state="PAUSED"' in text
    spec = client.get("/openapi.json").json()
    assert "/connectors/{name}/offsets" in spec["paths"]


def test_health_is_503_until_the_herder_has_read_the_config_log(tmp_path):
    from fastapi.testclient import TestClient

    from sparkcat.rest.app import create_app
    from tests.unit.rest.conftest import SparklessDriver

    driver = SparklessDriver(tmp_path / "state")  # not started
    with TestClient(create_app(driver), base_url="http://localhost") as c:
        r = c.get("/health")
        assert r.status_code == 503
        assert r.json() == {"status": "starting", "message": "Worker is still starting up."}


def test_health_is_503_with_the_reason_while_the_herder_is_down_then_200(client, driver):
    from sparkcat.errors import StorageError

    driver.herder.outage.failed(StorageError("Kafka log 'connect-status' at b:9092: writing failed: down"))
    r = client.get("/health")
    assert r.status_code == 503
    assert r.json() == {"status": "unhealthy", "message": "Worker was unable to handle this request and may be "
                        "unable to handle other requests. The herder is not running: StorageError: Kafka log "
                        "'connect-status' at b:9092: writing failed: down"}
    wait_until(lambda: client.get("/health").status_code == 200, timeout_s=10, message="healthy after 2 s of passes")
    assert client.get("/health").json()["status"] == "healthy"


@pytest.mark.parametrize("text,expected", [("True", True), ("true", True), ("false", False), ("yes", False)])
def test_restart_flags_read_like_java_booleans(text, expected):
    from sparkcat.rest.bodies import java_boolean

    assert java_boolean(text, not expected) is expected
