"""Kafka Connect's config providers: resolved on demand, limited to allowed paths, reversed before storing."""

from __future__ import annotations

import pytest

from sparkcat import redact
from sparkcat.errors import ConfigError
from sparkcat.policy.config_providers import ConfigProviders, reverse_transform
from sparkcat.policy.input_policy import POLICY_KEY, InputPolicy, attach, prepare

JAVA = "org.apache.kafka.common.config.provider."


def providers(tmp_path, **params) -> ConfigProviders:
    settings = {"config.providers": "file,env,directory",
                "config.providers.file.class": JAVA + "FileConfigProvider",
                "config.providers.env.class": JAVA + "EnvVarConfigProvider",
                "config.providers.directory.class": JAVA + "DirectoryConfigProvider",
                **{f"config.providers.{k.replace('_', '.')}": v for k, v in params.items()}}
    return ConfigProviders(settings, (str(tmp_path / "allowed"),))


def test_env_file_and_directory_placeholders_resolve(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARKCAT_UNIT_PW", "from-env-123")
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    (allowed / "db.properties").write_text("# comment\ndb.password = from-file-456\nuser: app\n")
    (allowed / "token").write_text("from-dir-789")
    resolved = providers(tmp_path).resolved({
        "a": "${env:SPARKCAT_UNIT_PW}", "b": f"${{file:{allowed}/db.properties:db.password}}",
        "c": f"${{directory:{allowed}:token}}", "d": "user=${file:" + str(allowed) + "/db.properties:user}",
        "e": "${state.dir}/out"})
    assert resolved == {"a": "from-env-123", "b": "from-file-456", "c": "from-dir-789", "d": "user=app",
                        "e": "${state.dir}/out"}
    assert redact.scrub("x from-file-456 y") == "x [hidden] y"


def test_unresolvable_placeholders_are_errors_that_name_the_key_and_never_the_secret(tmp_path, monkeypatch):
    (tmp_path / "elsewhere.properties").write_text("pw=nope-secret\n")
    monkeypatch.setenv("OTHER_VAR", "x")
    _, errors = providers(tmp_path, env_param_allowlist_pattern="DB_.*").resolve({
        "outside": f"${{file:{tmp_path}/elsewhere.properties:pw}}", "unknown": "${vault:path:key}",
        "denied": "${env:OTHER_VAR}", "missing": "${env:DB_NOT_SET}",
        "escape": f"${{directory:{tmp_path}/allowed:../elsewhere.properties}}"})
    assert set(errors) == {"outside", "unknown", "denied", "missing", "escape"}
    assert "allowed.paths" in errors["outside"][0] and "not configured" in errors["unknown"][0]
    assert "nope-secret" not in str(errors)


def test_task_configs_get_their_placeholders_back():
    raw = {"pw": "${env:X}", "user": "app"}
    resolved = {"pw": "s3cret", "user": "app"}
    assert reverse_transform([{"pw": "s3cret", "user": "app", "task": "0"}], raw, resolved) == [
        {"pw": "${env:X}", "user": "app", "task": "0"}]


def test_tasks_resolve_and_check_paths_where_they_start(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARKCAT_UNIT_TASK", "task-secret-1")
    policy = InputPolicy(allowed_dirs=(str(tmp_path),), providers=dict(providers(tmp_path).settings))
    started = prepare(attach({"file": str(tmp_path / "f"), "pw": "${env:SPARKCAT_UNIT_TASK}"}, policy, ["file"]))
    assert started == {"file": str(tmp_path / "f"), "pw": "task-secret-1"} and POLICY_KEY not in started
    with pytest.raises(ConfigError, match="outside the allowed directories"):
        prepare(attach({"file": "/etc/passwd"}, policy, ["file"]))
