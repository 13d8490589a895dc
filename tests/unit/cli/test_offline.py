"""The CLI without a driver: where it connects, and its exit codes when nobody answers."""

from __future__ import annotations

import pytest

from sparkcat.cli import main
from sparkcat.client.rest import DEFAULT_URL, resolve_url
from tests.broker import free_port


def test_url_flag_wins_over_environment_and_worker_config(tmp_path):
    worker = tmp_path / "worker.yaml"
    worker.write_text("rest.host: 10.0.0.1\nrest.port: 9000\n")
    env = {"SPARKCAT_URL": "http://env:1"}
    assert resolve_url("http://flag:2", str(worker), env) == "http://flag:2"
    assert resolve_url(None, str(worker), env) == "http://env:1"
    assert resolve_url(None, str(worker), {}) == "http://10.0.0.1:9000"


def test_a_wildcard_rest_host_is_reached_on_loopback(tmp_path):
    worker = tmp_path / "worker.yaml"
    worker.write_text("rest.host: 0.0.0.0\nrest.port: 8099\n")
    assert resolve_url(None, str(worker), {}) == "http://127.0.0.1:8099"


def test_without_worker_config_the_default_is_connects_port(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no conf/worker.yaml here
    assert resolve_url(None, None, {}) == DEFAULT_URL == "http://127.0.0.1:8083"


@pytest.mark.parametrize("argv", [["get"], ["describe", "x"], ["pause", "x"], ["offsets", "get", "x"],
                                  ["status"], ["plugins"]])
def test_nobody_listening_exits_2_naming_the_url(argv, capsys):
    url = f"http://127.0.0.1:{free_port()}"
    assert main([*argv, "--url", url]) == 2
    assert f"cannot reach sparkcat REST API at {url}" in capsys.readouterr().err


def test_sparkcat_url_environment_variable_is_used(monkeypatch, capsys):
    url = f"http://127.0.0.1:{free_port()}"
    monkeypatch.setenv("SPARKCAT_URL", url)
    assert main(["get"]) == 2
    assert url in capsys.readouterr().err


@pytest.mark.parametrize("extra", [[], ["--partition", "{}"], ["f.json", "--partition", "{}", "--offset", "{}"]])
def test_offsets_set_needs_a_file_or_a_partition_and_offset_pair(extra, capsys):
    assert main(["offsets", "set", "x", *extra, "--url", "http://127.0.0.1:1"]) == 2
    assert "offsets" in capsys.readouterr().err


def test_offsets_set_rejects_bad_json_before_calling(capsys):
    argv = ["offsets", "set", "x", "--url", "http://127.0.0.1:1", "--partition", "{bad", "--offset", "null"]
    assert main(argv) == 1
    assert "--partition is not valid JSON" in capsys.readouterr().err


def test_apply_without_spec_files_changes_nothing(tmp_path, capsys):
    assert main(["apply", str(tmp_path), "--prune", "--url", "http://127.0.0.1:1"]) == 1
    assert "no spec files" in capsys.readouterr().err


def test_migrate_needs_one_side_and_an_http_url(capsys):
    with pytest.raises(SystemExit) as e:
        main(["migrate", "--url", "http://127.0.0.1:1"])
    assert e.value.code == 2 and "--from-connect" in capsys.readouterr().err
    assert main(["migrate", "--from-connect", "file:///etc/passwd", "--url", "http://127.0.0.1:1"]) == 2
    assert "'file:///etc/passwd' is not an http(s):// URL" in capsys.readouterr().err


def test_migrate_exits_2_when_connect_cannot_be_reached(capsys):
    down = f"http://127.0.0.1:{free_port()}"
    assert main(["migrate", "--from-connect", down, "--url", f"http://127.0.0.1:{free_port()}"]) == 2
    assert down.split("//")[1] in capsys.readouterr().err
