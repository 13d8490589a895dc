"""The server refuses to start on an unusable certificate or an exposed, unauthenticated listener."""

from __future__ import annotations

import socket

import pytest

from sparkcat.errors import ConfigError
from sparkcat.rest.server import RestServer, tls_context
from sparkcat.config.rest import Listener, TlsConfig
from sparkcat.config.worker import WorkerConfig
from tests.tls import self_signed


def test_a_pem_keystore_loads_whole_or_as_separate_cert_and_key(tmp_path):
    cert = self_signed(tmp_path)
    assert tls_context(TlsConfig(keystore_location=str(cert.keystore))).minimum_version.name == "TLSv1_2"
    tls_context(TlsConfig(keystore_location=str(cert.cert), key_location=str(cert.key)))


def test_an_encrypted_key_needs_its_password(tmp_path):
    cert = self_signed(tmp_path, key_password="k3y-pass")
    tls_context(TlsConfig(keystore_location=str(cert.keystore), key_password="k3y-pass"))
    with pytest.raises(ConfigError, match="listeners.https.ssl.keystore.location") as e:
        tls_context(TlsConfig(keystore_location=str(cert.keystore), key_password="wrong"))
    assert "k3y-pass" not in e.value.message


def test_a_missing_keystore_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot load the certificate"):
        tls_context(TlsConfig(keystore_location=str(tmp_path / "nope.pem")))


def test_an_exposed_listener_without_auth_refuses_before_binding(driver):
    driver.worker = WorkerConfig(state_dir=driver.worker.state_dir, rest_host="0.0.0.0", rest_port=0)
    with pytest.raises(ConfigError, match="rest.allow.unauthenticated"):
        RestServer(driver).start()


def test_a_bad_credentials_file_refuses_before_binding(driver, tmp_path):
    from dataclasses import replace

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    security = replace(driver.worker.rest_security, basic_credentials_file=str(tmp_path / "missing"))
    driver.worker = replace(driver.worker, rest_security=security, rest_port=port)
    with pytest.raises(ConfigError, match="rest.auth.basic.credentials.file"):
        RestServer(driver, (Listener("http", "127.0.0.1", port),)).start()
    with socket.socket() as s:  # nothing was left listening
        s.bind(("127.0.0.1", port))
