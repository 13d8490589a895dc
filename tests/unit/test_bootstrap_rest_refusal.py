"""The driver refuses an unsafe or unusable REST configuration before it starts Spark."""

from __future__ import annotations

import logging

import pytest

from sparkcat import bootstrap


@pytest.fixture(autouse=True)
def no_spark(monkeypatch):
    def refuse(worker):
        raise AssertionError("Spark must not start for a refused configuration")

    monkeypatch.setattr(bootstrap, "_session", refuse)


def run(tmp_path, caplog, yaml_text: str, *flags: str) -> str:
    path = tmp_path / "worker.yaml"
    path.write_text(yaml_text)
    with caplog.at_level(logging.ERROR, logger="sparkcat.driver"):
        assert bootstrap.main(["--worker-config", str(path), *flags]) == 2
    return caplog.text


def test_rest_host_flag_on_every_interface_without_auth_names_the_key(tmp_path, caplog):
    text = run(tmp_path, caplog, "state.dir: s\n", "--rest-host", "0.0.0.0")
    assert "rest.allow.unauthenticated: true" in text and "http://0.0.0.0:8083" in text


def test_listeners_and_rest_port_flag_conflict(tmp_path, caplog):
    text = run(tmp_path, caplog, "listeners: http://127.0.0.1:8083\n", "--rest-port", "9000")
    assert "listeners replaces rest.host/rest.port" in text


def test_an_unreadable_tokens_file_or_certificate_stops_the_start(tmp_path, caplog):
    assert "rest.auth.bearer.tokens.file" in run(tmp_path, caplog, f"rest.auth.bearer.tokens.file: {tmp_path}/nope\n")
    text = run(tmp_path, caplog, f"listeners: https://127.0.0.1:8443\n"
                                 f"listeners.https.ssl.keystore.location: {tmp_path}/none.pem\n")
    assert "cannot load the certificate" in text
