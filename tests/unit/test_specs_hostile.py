"""Hostile YAML specs: ``sparkcat validate`` refuses each, naming file, connector and key, and imports nothing."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from sparkcat.cli import main


def _spec(tmp_path: Path, name: str, config: dict[str, str]) -> Path:
    path = tmp_path / "hostile.yaml"
    path.write_text(json.dumps({"name": name, "config": config}, ensure_ascii=False))  # JSON is YAML
    return path


def _validate(tmp_path: Path, path: Path, capsys) -> tuple[int, str]:
    worker = tmp_path / "worker.yaml"
    worker.write_text(f"state.dir: {tmp_path / 'state'}\npipelines.dir: {tmp_path / 'pipelines'}\n")
    code = main(["validate", "--worker-config", str(worker), str(path)])
    return code, capsys.readouterr().err


INCREMENT = {"connector.class": "increment", "increments": "1"}


@pytest.mark.parametrize("name, rule", [
    ("a\u0007b", "ISO control characters"), (" lead", "whitespace"), ("sparkcat-config-log", "reserved"),
    ("x" * 1001, "at most 1000"),
])
def test_names_that_cannot_be_represented(tmp_path, capsys, name, rule):
    code, err = _validate(tmp_path, _spec(tmp_path, name, INCREMENT), capsys)
    assert code == 1 and rule in err


def test_a_lone_surrogate_is_refused_and_reported_without_crashing(tmp_path, capsys):
    path = tmp_path / "surrogate.yaml"
    path.write_text('{"name": "a\\ud800b", "config": {"connector.class": "increment", "increments": "1"}}')
    code, err = _validate(tmp_path, path, capsys)
    assert code == 1 and "surrogate" in err and "\\ud800" in err


def test_path_like_names_are_valid_names(tmp_path, capsys):
    for name in ["..", "a/../../x", "_sparkcat-config-log", "\u65e5\u672c-\U0001F680"]:
        code, err = _validate(tmp_path, _spec(tmp_path, name, INCREMENT), capsys)
        assert code == 0, err


def test_a_module_outside_plugin_packages_is_not_imported(tmp_path, capsys, monkeypatch):
    marker = tmp_path / "imported"
    (tmp_path / "spec_side_effect.py").write_text(f"open({str(marker)!r}, 'w').close()\nclass C: pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for config in [{"connector.class": "spec_side_effect:C"},
                   {**INCREMENT, "sink.connector.class": "spec_side_effect:C"},
                   {**INCREMENT, "key.converter": "spec_side_effect.C"}]:
        code, err = _validate(tmp_path, _spec(tmp_path, "evil", config), capsys)
        assert code == 1 and "plugin.packages" in err
    assert not marker.exists() and "spec_side_effect" not in sys.modules


@pytest.mark.parametrize("file", ["/etc/passwd", "{tmp}/state/../outside.txt", "{tmp}/elsewhere/out.txt"])
def test_files_outside_the_allowed_dirs(tmp_path, capsys, file):
    path = _spec(tmp_path, "f", {**INCREMENT, "sink.connector.class": "file-sink",
                                 "sink.file": file.format(tmp=tmp_path)})
    code, err = _validate(tmp_path, path, capsys)
    assert code == 1 and "sink.file" in err and "file.allowed.dirs" in err


def test_a_file_under_state_dir_is_allowed_by_default(tmp_path, capsys):
    path = _spec(tmp_path, "f", {**INCREMENT, "sink.connector.class": "file-sink",
                                 "sink.file": str(tmp_path / "state" / "out" / "f.jsonl")})
    code, err = _validate(tmp_path, path, capsys)
    assert code == 0, err


@pytest.mark.parametrize("inside", ["stores/connect-configs.log", "checkpoints/victim/offsets/0", "spark/x"])
def test_sparkcats_own_state_is_never_a_connector_file(tmp_path, capsys, inside):
    path = _spec(tmp_path, "f", {**INCREMENT, "sink.connector.class": "file-sink",
                                 "sink.file": str(tmp_path / "state" / inside)})
    code, err = _validate(tmp_path, path, capsys)
    assert code == 1 and "never open to connectors" in err
