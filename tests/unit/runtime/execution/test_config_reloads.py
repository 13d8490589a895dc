"""Connect's KIP-297 reloads: a config provider value's ttl ends and the connector restarts with the new value.

The schedule on a fake clock, then a reconciler over memory stores and a fake runner, with a provider
(``tests.plugins.rotating_provider``) that reads a file on every call and gives its values a ttl.
"""

from __future__ import annotations

import logging

from sparkcat.model.config_state import TargetState
from sparkcat.policy.config_providers import ConfigProviders
from sparkcat.runtime.execution.config_reloads import ConfigReloads
from tests.plugins import secret_probe
from tests.unit.runtime.execution.reconciler_helpers import reconciler_on_memory, settle, status
from tests.unit.runtime.execution.test_reconciler import FakeRunner

ROTATING = "tests.plugins.rotating_provider:RotatingProvider"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_ttl_schedules_a_reload_due_when_it_ends_and_a_new_resolution_replaces_it(caplog):
    caplog.set_level(logging.INFO)
    clock = Clock()
    reloads = ConfigReloads(clock)
    reloads.schedule("c", {}, {"secret/db": 2000, "secret/mq": 5000})
    assert reloads.due() == {}
    clock.now += 1.5
    reloads.schedule("c", {}, {"secret/db": 2000})  # resolved again: the earlier reload of the path is stale
    clock.now += 1.0
    assert reloads.due() == {}, "the replaced reload still fired"
    clock.now += 1.0
    assert reloads.due() == {"c": ["secret/db"]}
    reloads.fired("c", ["secret/db"])
    assert reloads.due() == {} and list(reloads.scheduled("c")) == ["secret/mq"]
    clock.now += 2.0
    assert reloads.due() == {"c": ["secret/mq"]}
    logged = [r.getMessage() for r in caplog.records]
    assert "Scheduling a restart of connector c in 2000 ms" in logged[0]
    assert any(m.startswith("Restarting connector c and its tasks") and "'secret/db'" in m for m in logged)


def test_action_none_schedules_nothing_and_cancel_forgets_the_connector():
    clock = Clock()
    reloads = ConfigReloads(clock)
    reloads.schedule("quiet", {"config.action.reload": "none"}, {"p": 0})
    reloads.schedule("loud", {"config.action.reload": "RESTART"}, {"p": 0})  # Connect ignores the case
    reloads.schedule("other", {}, {"p": 0})
    assert sorted(reloads.due()) == ["loud", "other"]
    reloads.cancel("loud")
    reloads.clear()
    assert reloads.due() == {}


def test_resolution_reports_the_ttl_of_each_path_and_none_for_kafkas_providers(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARKCAT_RELOAD_TEST", "x")
    a, b = tmp_path / "a.properties", tmp_path / "b.properties"
    a.write_text("user=app\npassword=one\n")
    b.write_text("token=t\n")

    def providers(ttl: str) -> ConfigProviders:
        return ConfigProviders({"config.providers": "rot,env", "config.providers.rot.class": ROTATING,
                                "config.providers.rot.param.ttl.ms": ttl,
                                "config.providers.env.class": "EnvVarConfigProvider"}, (), ("tests.plugins",))

    values, ttls = providers("2000").resolved_with_ttls(
        {"u": f"${{rot:{a}:user}}", "p": f"${{rot:{a}:password}}", "t": f"${{rot:{b}:token}}",
         "e": "${env:SPARKCAT_RELOAD_TEST}", "plain": "v"})
    assert values == {"u": "app", "p": "one", "t": "t", "e": "x", "plain": "v"}
    assert ttls == {str(a): 2000, str(b): 2000}
    assert providers("-1").resolved_with_ttls({"p": f"${{rot:{a}:password}}"})[1] == {}  # Connect keeps ttl >= 0


def reconciler_with_rotating_secret(tmp_path, ttl_ms: int = 2000):
    secret = tmp_path / "db.properties"
    secret.write_text("password=first-pw\n")
    runner = FakeRunner()
    stores, reconciler = reconciler_on_memory(tmp_path, runner, plugin_packages=["sparkcat.connectors", "tests.plugins"],
                                              config_providers={"config.providers": "rot",
                                                                "config.providers.rot.class": ROTATING,
                                                                "config.providers.rot.param.ttl.ms": str(ttl_ms)})
    clock = Clock()
    reconciler.services.reloads = ConfigReloads(clock)
    config = {"connector.class": "tests.plugins.secret_probe:SecretProbeConnector",
              "probe.password": f"${{rot:{secret}:password}}",
              "sink.connector.class": "file-sink", "sink.file": str(tmp_path / "out.jsonl")}
    return stores, reconciler, runner, clock, secret, config


def test_the_connector_and_its_query_restart_with_the_new_value_when_the_ttl_ends(tmp_path):
    stores, reconciler, runner, clock, secret, config = reconciler_with_rotating_secret(tmp_path)
    secret_probe.STARTED.clear()
    stores.config.put_connector_config("probe", config)
    settle(stores, reconciler)
    assert [c["probe.password"] for c in secret_probe.STARTED] == ["first-pw"] and len(runner.started) == 1
    secret.write_text("password=second-pw\n")
    clock.now += 1.9
    settle(stores, reconciler)
    assert len(secret_probe.STARTED) == 1 and len(runner.started) == 1, "restarted before the ttl ended"
    clock.now += 0.2
    settle(stores, reconciler)
    assert [c["probe.password"] for c in secret_probe.STARTED] == ["first-pw", "second-pw"]
    assert len(runner.started) == 2 and len(runner.stopped) == 1, "the tasks' query did not restart"
    assert status(stores, "probe") == ("RUNNING", ["RUNNING"])
    assert 1.9 < reconciler.services.reloads.scheduled("probe")[str(secret)] <= 2.0  # the restart scheduled anew


def test_action_none_leaves_the_connector_running_with_the_value_it_started_with(tmp_path):
    stores, reconciler, runner, clock, secret, config = reconciler_with_rotating_secret(tmp_path)
    secret_probe.STARTED.clear()
    stores.config.put_connector_config("probe", {**config, "config.action.reload": "none"})
    settle(stores, reconciler)
    secret.write_text("password=second-pw\n")
    clock.now += 60
    settle(stores, reconciler)
    assert [c["probe.password"] for c in secret_probe.STARTED] == ["first-pw"] and len(runner.started) == 1


def test_deleting_or_stopping_the_connector_cancels_its_reload(tmp_path):
    stores, reconciler, runner, clock, secret, config = reconciler_with_rotating_secret(tmp_path)
    for name in ("deleted", "stopped"):
        stores.config.put_connector_config(name, config)
    settle(stores, reconciler)
    assert set(reconciler.services.reloads.due()) == set() and reconciler.services.reloads.scheduled("stopped")
    stores.config.remove_connector_config("deleted")
    stores.config.put_target_state("stopped", TargetState.STOPPED)
    settle(stores, reconciler)
    assert reconciler.services.reloads.scheduled("deleted") == {} == reconciler.services.reloads.scheduled("stopped")
    clock.now += 60
    started = len(runner.started)
    settle(stores, reconciler)
    assert len(runner.started) == started and status(stores, "stopped")[0] == "STOPPED"
