"""The ``sparkcat`` CLI against a real driver (real Spark, local stores, REST API).

Every command is checked against what the REST API then reports (GET with httpx), not
against the CLI's own output alone.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from sparkcat.bootstrap import Driver
from sparkcat.cli import main
from sparkcat.config.worker import WorkerConfig
from tests.broker import free_port
from tests.kafka_helpers import wait_until

pytestmark = pytest.mark.integration


@pytest.fixture
def driver(spark, tmp_path) -> Iterator[Driver]:
    worker = WorkerConfig(state_dir=str(tmp_path / "state"), rest_host="127.0.0.1", rest_port=free_port(),
                          group_id="cli-it", file_allowed_dirs=[str(tmp_path)],
                          plugin_packages=["sparkcat.connectors", "tests.unit.rest"])
    with Driver(spark, worker, rest=True, watch_pipelines=False) as running:
        yield running


@pytest.fixture
def url(driver) -> str:
    return f"http://127.0.0.1:{driver.worker.rest_port}"


@pytest.fixture
def http(url) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=url, timeout=60) as client:
        yield client


@pytest.fixture
def specs(tmp_path) -> Path:
    directory = tmp_path / "specs"
    directory.mkdir()
    return directory


@pytest.fixture
def cli(capsys, url, driver):
    """Runs ``sparkcat ARGV --url URL [--state-dir]`` in-process: (exit code, stdout, stderr)."""
    def run(*argv: str) -> tuple[int, str, str]:
        capsys.readouterr()
        extra = ["--state-dir", driver.worker.state_dir] if argv[0] in ("apply", "validate") else []
        code = main([*argv, "--url", url, *extra])
        out, err = capsys.readouterr()
        return code, out, err

    return run


def increment(**extra: Any) -> dict[str, Any]:
    """An increment source writing to a file sink under ``${state.dir}`` (no broker needed)."""
    return {"connector.class": "increment", "increments": 1, "records.per.poll": 5, "trigger.interval.ms": 200,
            "sink": {"connector.class": "file-sink", "file": "${state.dir}/out/seq.jsonl"}, **extra}


def write_spec(directory: Path, name: str, config: dict[str, Any], initial_state: str | None = None) -> Path:
    doc: dict[str, Any] = {"name": name, "config": config}
    if initial_state:
        doc["initial_state"] = initial_state
    path = directory / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def states(http: httpx.Client, name: str) -> tuple[str, list[str]]:
    status = http.get(f"/connectors/{name}/status").json()
    return status["connector"]["state"], [t["state"] for t in status["tasks"]]


def wait_states(http: httpx.Client, name: str, connector: str, tasks: list[str]) -> None:
    wait_until(lambda: states(http, name) == (connector, tasks), timeout_s=120,
               message=f"{name} to be {connector} with tasks {tasks}")


def names(http: httpx.Client) -> list[str]:
    return sorted(http.get("/connectors").json())


def test_apply_creates_connectors_honouring_initial_state_and_get_lists_them(cli, http, specs, driver):
    write_spec(specs, "seq", increment())
    write_spec(specs, "held", increment(increments=2), initial_state="PAUSED")

    code, out, err = cli("apply", str(specs))
    assert code == 0, err
    assert "seq: created" in out and "held: created, initial state PAUSED" in out
    assert names(http) == ["held", "seq"]
    sink_file = str(Path(driver.worker.state_dir).resolve() / "out" / "seq.jsonl")
    assert http.get("/connectors/seq/config").json() == {
        "connector.class": "increment", "increments": "1", "records.per.poll": "5", "trigger.interval.ms": "200",
        "sink.connector.class": "file-sink", "sink.file": sink_file, "name": "seq"}
    wait_states(http, "seq", "RUNNING", ["RUNNING"])
    wait_states(http, "held", "PAUSED", ["PAUSED"])

    code, out, _ = cli("get", "-o", "json")
    rows = {r["name"]: r for r in json.loads(out)}
    assert rows["seq"] == {"name": "seq", "type": "source", "state": "RUNNING", "tasks": 1,
                           "task_states": ["RUNNING"]}
    assert rows["held"]["state"] == "PAUSED"
    code, out, _ = cli("get", "held", "-o", "yaml")
    assert code == 0 and yaml.safe_load(out)["state"] == "PAUSED"
    code, out, _ = cli("get")
    assert out.split()[:5] == ["NAME", "TYPE", "STATE", "TASKS", "TASK"]
    assert any(line.split()[:4] == ["seq", "source", "RUNNING", "1"] for line in out.splitlines())

    code, out, _ = cli("apply", str(specs))
    assert code == 0 and "seq: unchanged" in out and "held: unchanged" in out


def test_apply_dry_run_prints_the_diff_and_leaves_the_running_config_alone(cli, http, specs):
    write_spec(specs, "seq", increment())
    assert cli("apply", str(specs))[0] == 0
    before = http.get("/connectors/seq/config").json()

    edited = increment(**{"records.per.poll": 3, "tasks.max": 1})
    del edited["trigger.interval.ms"]
    write_spec(specs, "seq", edited)
    write_spec(specs, "extra", increment(increments=7))
    code, out, err = cli("apply", str(specs), "--dry-run")
    assert code == 0, err
    lines = out.splitlines()
    assert "seq: changed (dry run)" in lines
    assert {"  ~ records.per.poll: 5 -> 3", "  + tasks.max: 1", "  - trigger.interval.ms: 200"} <= set(lines)
    assert "extra: created (dry run)" in lines and "  + increments: 7" in lines
    assert http.get("/connectors/seq/config").json() == before
    assert names(http) == ["seq"]

    code, out, err = cli("apply", str(specs))
    assert code == 0, err
    assert "seq: changed" in out and "extra: created" in out
    after = http.get("/connectors/seq/config").json()
    assert after["records.per.poll"] == "3" and after["tasks.max"] == "1" and "trigger.interval.ms" not in after
    assert names(http) == ["extra", "seq"]


def test_apply_diffs_show_password_values_as_hidden(cli, http, specs, tmp_path, driver):
    def vault(password: str, **extra: Any) -> dict[str, Any]:
        return {"connector.class": "tests.unit.rest.secret_connector:SecretSourceConnector",
                "db.password": password, **extra,
                "sink": {"connector.class": "file-sink", "file": str(tmp_path / "vault.jsonl")}}

    write_spec(specs, "vault", vault("s3cret"), initial_state="STOPPED")
    code, out, err = cli("apply", str(specs))
    assert code == 0 and out == "vault: created, initial state STOPPED\n", err
    write_spec(specs, "vault", vault("n3w", **{"db.port": 6543}))
    for argv in (("apply", str(specs), "--dry-run"), ("apply", str(specs))):
        code, out, _ = cli(*argv)
        assert {"  ~ db.password: [hidden] -> [hidden]", "  + db.port: 6543"} <= set(out.splitlines())
        assert "s3cret" not in out and "n3w" not in out
    assert http.get("/connectors/vault/config").json()["db.password"] == "[hidden]"
    assert driver.herder.connector_config("vault")["db.password"] == "n3w"
    for argv in (("describe", "vault"), ("describe", "vault", "-o", "json"), ("get", "vault", "-o", "json")):
        code, out, err = cli(*argv)
        assert code == 0 and "n3w" not in out, (argv, out, err)
        assert "[hidden]" in out or argv[0] == "get"  # get shows states, no config


def test_apply_prune_deletes_exactly_the_connectors_absent_from_the_files(cli, http, specs, tmp_path):
    for name in ("keep", "old-a", "old-b"):
        config = {"connector.class": "increment", "increments": "1", "sink.connector.class": "file-sink",
                  "sink.file": str(tmp_path / f"{name}.jsonl")}
        assert http.put(f"/connectors/{name}/config", json=config).status_code == 201
    write_spec(specs, "keep", {"connector.class": "increment", "increments": 1,
                               "sink": {"connector.class": "file-sink", "file": str(tmp_path / "keep.jsonl")}})
    write_spec(specs, "new", increment())

    code, out, err = cli("apply", str(specs), "--prune", "--dry-run")
    assert code == 0, err
    assert "old-a: would be deleted (not in the files)" in out and "old-b: would be deleted (not in the files)" in out
    assert "keep: unchanged (dry run)" in out and "keep: would" not in out
    assert names(http) == ["keep", "old-a", "old-b"]

    code, out, err = cli("apply", str(specs), "--prune")
    assert code == 0, err
    assert "old-a: deleted" in out and "old-b: deleted" in out and "new: created" in out
    assert names(http) == ["keep", "new"]


def test_lifecycle_commands_change_the_status_the_api_reports(cli, http, specs):
    write_spec(specs, "seq", increment())
    assert cli("apply", str(specs))[0] == 0
    wait_states(http, "seq", "RUNNING", ["RUNNING"])

    code, out, _ = cli("describe", "seq")
    assert code == 0 and "Spark query:  seq" in out and "  connector.class: increment" in out
    assert any(line.split()[:2] == ["0", "RUNNING"] for line in out.splitlines())
    described = json.loads(cli("describe", "seq", "-o", "json")[1])
    assert described["query_name"] == "seq" and described["tasks"][0]["worker_id"]

    assert cli("pause", "seq")[0] == 0
    wait_states(http, "seq", "PAUSED", ["PAUSED"])
    assert cli("resume", "seq")[0] == 0
    wait_states(http, "seq", "RUNNING", ["RUNNING"])
    code, out, _ = cli("restart", "seq", "--include-tasks")
    assert code == 0 and "seq (source): RESTARTING" in out and "task 0: RESTARTING" in out
    wait_states(http, "seq", "RUNNING", ["RUNNING"])
    code, out, _ = cli("restart", "seq", "--include-tasks", "--only-failed")
    assert code == 0 and "RESTARTING" not in out
    assert cli("restart", "seq")[1] == "connector seq: restart requested\n"
    wait_states(http, "seq", "RUNNING", ["RUNNING"])

    wait_until(lambda: http.get("/connectors/seq/offsets").json()["offsets"], timeout_s=120,
               message="seq to commit an offset")
    code, out, _ = cli("status", "seq", "-o", "json")
    report = json.loads(out)
    assert report["connector"]["state"] == "RUNNING" and report["offsets"]
    assert [r["name"] for r in yaml.safe_load(cli("status", "-o", "yaml")[1])] == ["seq"]

    assert cli("stop", "seq")[0] == 0
    wait_states(http, "seq", "STOPPED", [])
    assert cli("delete", "seq") == (0, "connector seq: deleted\n", "")
    assert names(http) == []
    assert http.get("/connectors/seq/status").status_code == 404


def test_offsets_get_set_reset_round_trip_on_a_stopped_connector(cli, http, specs, tmp_path):
    write_spec(specs, "seq", increment())
    assert cli("apply", str(specs))[0] == 0
    wait_until(lambda: http.get("/connectors/seq/offsets").json()["offsets"], timeout_s=120,
               message="seq to commit an offset")
    code, _, err = cli("offsets", "set", "seq", "--partition", '{"increment": 1}', "--offset", '{"position": 5}')
    assert code == 1 and "must be in the STOPPED state" in err

    assert cli("stop", "seq")[0] == 0
    wait_states(http, "seq", "STOPPED", [])
    got = json.loads(cli("offsets", "get", "seq", "-o", "json")[1])
    assert got == http.get("/connectors/seq/offsets").json()
    [entry] = got["offsets"]
    assert entry["partition"] == {"increment": 1} and entry["offset"]["position"] > 0

    code, out, err = cli("offsets", "set", "seq", "--partition", '{"increment": 1}', "--offset", '{"position": 1000}')
    assert code == 0, err
    assert out == "The offsets for this connector have been altered successfully\n"
    assert http.get("/connectors/seq/offsets").json() == {
        "offsets": [{"partition": {"increment": 1}, "offset": {"position": 1000}}]}
    code, out, _ = cli("offsets", "get", "seq")
    assert out.split() == ["PARTITION", "OFFSET", '{"increment":1}', '{"position":1000}']

    moved = tmp_path / "offsets.yaml"
    moved.write_text("offsets:\n  - partition: {increment: 1}\n    offset: {position: 2000}\n")
    assert cli("offsets", "set", "seq", str(moved))[0] == 0
    assert yaml.safe_load(cli("offsets", "get", "seq", "-o", "yaml")[1])["offsets"][0]["offset"] == {"position": 2000}

    code, out, _ = cli("offsets", "reset", "seq")
    assert code == 0 and out == "The offsets for this connector have been reset successfully\n"
    assert http.get("/connectors/seq/offsets").json() == {"offsets": []}
    assert cli("offsets", "get", "seq")[1] == "no offsets\n"


def test_unknown_connector_prints_the_servers_message_and_exits_1(cli):
    for argv in (("get", "nope"), ("describe", "nope"), ("pause", "nope"), ("delete", "nope"), ("restart", "nope"),
                 ("status", "nope"), ("offsets", "get", "nope"), ("offsets", "reset", "nope")):
        assert cli(*argv) == (1, "", "error: Connector nope not found\n"), argv


def test_apply_reports_a_rejected_spec_and_still_applies_the_others(cli, http, specs):
    write_spec(specs, "good", increment())
    write_spec(specs, "bad", increment(**{"tasks.max": -3}))
    code, out, err = cli("apply", str(specs))
    assert code == 1
    assert "good: created" in out
    assert err.startswith("error: bad: ") and "tasks.max" in err
    assert names(http) == ["good"]


def test_plugins_and_remote_validate(cli, specs):
    code, out, _ = cli("plugins", "-o", "json")
    plugins = {p["class"]: p["type"] for p in json.loads(out)}
    assert plugins["org.apache.kafka.connect.file.FileStreamSinkConnector"] == "sink"
    assert "CLASS" in cli("plugins")[1]

    good = write_spec(specs, "good", increment())
    code, out, err = cli("validate", "--remote", str(good))
    assert code == 0, err
    assert f"{good}: connector good: valid (IncrementSourceConnector)" in out
    bad = write_spec(specs, "bad", increment(increments=0, incremnts=5))
    code, _, err = cli("validate", "--remote", str(bad))
    assert code == 1
    flagged = {line.split(": ")[2] for line in err.splitlines() if line.startswith(f"{bad}: connector bad: ")}
    assert {"increments", "incremnts"} <= flagged
    unknown = write_spec(specs, "unknown", {"connector.class": "com.example.Nope"})
    code, _, err = cli("validate", "--remote", str(unknown))
    assert code == 1 and f"{unknown}: connector unknown: connector.class: " in err


def test_console_script_get_prints_parseable_json(url, http, tmp_path):
    config = {"connector.class": "increment", "increments": "1", "sink.connector.class": "file-sink",
              "sink.file": str(tmp_path / "s.jsonl")}
    assert http.put("/connectors/seq/config", json=config).status_code == 201
    script = Path(sys.executable).parent / "sparkcat"
    done = subprocess.run([str(script), "get", "--url", url, "-o", "json"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    [row] = json.loads(done.stdout)
    assert row["name"] == "seq" and row["type"] == "source"
