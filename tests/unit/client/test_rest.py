"""Where the CLI's credentials and TLS trust come from, and what it never sends where."""

from __future__ import annotations

import base64
import ssl

import pytest

from sparkcat.client.rest import Credentials, resolve_credentials, resolve_url, tls_context
from sparkcat.errors import ConfigError


def decoded(credentials: Credentials) -> str:
    scheme, _, value = credentials.authorization.partition(" ")
    return f"{scheme} {base64.b64decode(value).decode()}" if scheme == "Basic" else credentials.authorization


@pytest.fixture
def worker(tmp_path):
    creds = tmp_path / "creds"
    creds.write_text("# admins\nadmin: from-file\n")
    path = tmp_path / "worker.yaml"
    path.write_text(f"listeners: https://127.0.0.1:8443\nlisteners.https.ssl.keystore.location: s.pem\n"
                    f"rest.auth.basic.credentials.file: {creds}\n")
    return str(path)


def test_flags_win_over_environment_and_environment_over_the_worker_files(worker):
    env = {"SPARKCAT_USER": "env:pw", "SPARKCAT_TOKEN": "env-token"}
    assert decoded(resolve_credentials("flag:pw", None, worker, env)) == "Basic flag:pw"
    assert decoded(resolve_credentials(None, "flag-token", worker, env)) == "Bearer flag-token"
    assert decoded(resolve_credentials(None, None, worker, env)) == "Bearer env-token"
    assert decoded(resolve_credentials(None, None, worker, {"SPARKCAT_USER": "u:p:w"})) == "Basic u:p:w"
    assert decoded(resolve_credentials(None, None, worker, {})) == "Basic admin:from-file"


def test_the_worker_password_is_never_sent_to_a_url_given_elsewhere(worker):
    assert resolve_credentials(None, None, worker, {}, url_from_worker=False) is None


def test_the_url_from_the_worker_config_is_its_first_listener(worker):
    assert resolve_url(None, worker, {}) == "https://127.0.0.1:8443"


def test_user_without_password_is_asked_and_user_with_token_is_refused(monkeypatch):
    monkeypatch.setattr("getpass.getpass", lambda prompt: "typed")
    assert decoded(resolve_credentials("alice", None, None, {})) == "Basic alice:typed"
    with pytest.raises(ConfigError, match="together"):
        resolve_credentials("a:b", "t", None, {})
    with pytest.raises(ConfigError, match="USER:PASSWORD"):
        resolve_credentials(":pw", None, None, {})


def test_the_secret_is_not_in_the_repr():
    assert "s3cret" not in repr(Credentials.basic("u:s3cret", "--user"))
    assert "T0ken-xyz" not in repr(Credentials.bearer("T0ken-xyz", "--token"))


def test_tls_verifies_by_default_and_only_insecure_turns_it_off(tmp_path):
    assert tls_context().verify_mode == ssl.CERT_REQUIRED and tls_context().check_hostname
    assert tls_context(insecure=True).verify_mode == ssl.CERT_NONE
    with pytest.raises(ConfigError, match="--cacert"):
        tls_context(str(tmp_path / "missing.pem"))
