"""Config provider classes written in Python, named by config.providers.NAME.class inside plugin.packages."""

from __future__ import annotations

import sys

import pytest

from sparkcat import redact
from sparkcat.errors import ConfigError
from sparkcat.policy.config_providers import ConfigProviders
from sparkcat.policy.input_policy import InputPolicy, attach, prepare
from tests.plugins import vault_provider

VAULT = "tests.plugins.vault_provider:VaultLikeProvider"


def vault(cls: str = VAULT, packages=("tests.plugins",), token: str = "let-me-in", **extra) -> ConfigProviders:
    return ConfigProviders({"config.providers": "vault", "config.providers.vault.class": cls,
                            "config.providers.vault.param.token": token,
                            "config.providers.vault.param.secrets": "secret/db/password=v4ult-pw-1;secret/db/user=app",
                            **extra}, (), tuple(packages))


def test_a_plugin_provider_resolves_placeholders_and_its_values_are_scrubbed():
    resolved = vault().resolved({"pw": "${vault:secret/db:password}", "dsn": "user=${vault:secret/db:user}"})
    assert resolved == {"pw": "v4ult-pw-1", "dsn": "user=app"}
    assert redact.scrub("login v4ult-pw-1 failed") == "login [hidden] failed"


def test_one_configured_instance_per_process_for_the_same_settings():
    before = len(vault_provider.CONFIGURED)
    for _ in range(3):
        vault(**{"config.providers.vault.param.run": "once"}).resolved({"pw": "${vault:secret/db:password}"})
    assert len(vault_provider.CONFIGURED) == before + 1


def test_a_missing_key_or_path_is_an_error_naming_the_config_key():
    _, errors = vault().resolve({"a": "${vault:secret/db:nope}", "b": "${vault:secret/other:password}"})
    assert set(errors) == {"a", "b"} and "has no key nope" in errors["a"][0]


@pytest.mark.parametrize("cls, packages, problem", [
    ("tests.plugins.vault_provider:VaultLikeProvider", ("sparkcat.connectors",), "plugin.packages"),
    ("tests.plugins.vault_provider:NotAProvider", ("tests.plugins",), "is not a sparkcat.api.ConfigProvider"),
    ("tests.plugins.vault_provider:Missing", ("tests.plugins",), "has no class"),
    ("com.example.VaultConfigProvider", ("tests.plugins",), "plugin.packages"),
])
def test_an_unusable_provider_class_names_the_class_key(cls, packages, problem):
    with pytest.raises(ConfigError) as e:
        vault(cls, packages).providers()
    assert "config.providers.vault.class" in e.value.errors and problem in e.value.message


def test_a_class_outside_plugin_packages_is_never_imported(tmp_path, monkeypatch):
    (tmp_path / "evil_provider.py").write_text("import pathlib; pathlib.Path(__file__).with_name('ran').touch()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError):
        vault("evil_provider:Provider").providers()
    assert "evil_provider" not in sys.modules and not (tmp_path / "ran").exists()


def test_a_failing_configure_names_the_class_key_and_not_the_params():
    with pytest.raises(ConfigError) as e:
        vault(token="wr0ng-t0ken").providers()
    assert "configure failed" in e.value.message and "wr0ng-t0ken" not in e.value.message


def test_tasks_on_executors_load_the_plugin_provider_from_the_policy_they_carry():
    policy = InputPolicy(plugin_packages=("tests.plugins",), providers=dict(vault().settings))
    assert prepare(attach({"pw": "${vault:secret/db:password}"}, policy)) == {"pw": "v4ult-pw-1"}


def test_checking_the_classes_imports_but_never_configures():
    before = len(vault_provider.CONFIGURED)
    vault(token="wr0ng-t0ken").check_classes()  # configure would refuse this token
    assert len(vault_provider.CONFIGURED) == before
