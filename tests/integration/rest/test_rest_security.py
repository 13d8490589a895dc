"""A real driver (real Spark, local stores) whose REST API has authentication and an HTTPS listener on.

Checked from the outside, as a user meets it: which requests get in, what the rejected
ones answer, that they changed nothing in the config log, and that the CLI and a
third-party Connect client work with credentials and a private CA.
"""

from __future__ import annotations

import base64
import logging
import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import requests
from kafka_connect import KafkaConnect

from sparkcat.bootstrap import Driver
from sparkcat.cli import main as cli
from sparkcat.config.rest import Listener, RestSecurityConfig, TlsConfig
from sparkcat.config.worker import WorkerConfig
from tests.broker import free_port
from tests.tls import SelfSigned, self_signed

pytestmark = pytest.mark.integration

PASSWORD = "c0rrect-h0rse"
TOKEN = "tok-" + "9" * 32


@dataclass
class Secured:
    driver: Driver
    http: str
    https: str
    cert: SelfSigned

    def config_log_end(self) -> int:
        return self.driver.stores.config.backend.end_offset()

    def trust(self) -> ssl.SSLContext:
        """Client TLS that trusts the test's self-signed certificate (and nothing else)."""
        return ssl.create_default_context(cafile=str(self.cert.cert))


def secret(path: Path, text: str) -> str:
    path.write_text(text)
    path.chmod(0o600)
    return str(path)


def basic(user: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


AUTH = basic("admin", PASSWORD)


@pytest.fixture(scope="module")
def secured(spark, tmp_path_factory) -> Iterator[Secured]:
    base = tmp_path_factory.mktemp("secured")
    cert = self_signed(base / "tls")
    http_port, https_port = free_port(), free_port()
    security = RestSecurityConfig(
        listeners=(Listener("http", "127.0.0.1", http_port), Listener("https", "127.0.0.1", https_port)),
        tls=TlsConfig(keystore_location=str(cert.keystore)),
        basic_credentials_file=secret(base / "rest.password", f"# users\nadmin: {PASSWORD}\n"),
        bearer_tokens_file=secret(base / "rest.tokens", f"ci: {TOKEN}\n"),
        max_concurrent_requests=4)
    # the tests' sink files live in their own tmp_path, beside this fixture's directory
    worker = WorkerConfig(state_dir=str(base / "state"), group_id="rest-sec", rest_port=http_port,
                          rest_security=security, file_allowed_dirs=[str(tmp_path_factory.getbasetemp())])
    with Driver(spark, worker, rest=True, watch_pipelines=False) as driver:
        yield Secured(driver, f"http://127.0.0.1:{http_port}", f"https://127.0.0.1:{https_port}", cert)


def increment(out: Path) -> dict[str, str]:
    return {"connector.class": "increment", "increments": "1", "sink.connector.class": "file-sink",
            "sink.file": str(out)}


def test_only_the_right_password_or_token_gets_in(secured):
    for headers in ({}, basic("admin", "wrong"), basic("nobody", PASSWORD), {"Authorization": "Bearer wrong"}):
        r = httpx.get(f"{secured.http}/connectors", headers=headers)
        assert r.status_code == 401, headers
        assert r.json() == {"error_code": 401, "message": "User cannot access the resource."}
        assert 'Basic realm="KafkaConnect"' in r.headers["www-authenticate"]
    assert httpx.get(f"{secured.http}/health").status_code == 401  # as Connect: every path is protected
    assert httpx.get(f"{secured.http}/connectors", headers=AUTH).json() == []
    assert httpx.get(f"{secured.http}/health", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200


def test_a_connect_client_with_basic_auth_drives_the_api(secured, tmp_path):
    end = secured.config_log_end()
    with pytest.raises(requests.HTTPError) as refused:
        KafkaConnect(url=secured.http).create_connector({"name": "nope", "config": increment(tmp_path / "n")})
    assert refused.value.response.status_code == 401
    assert secured.config_log_end() == end

    kc = KafkaConnect(url=secured.http, auth=f"admin:{PASSWORD}")
    created = kc.create_connector({"name": "authed", "config": increment(tmp_path / "a.jsonl"),
                                   "initial_state": "STOPPED"})
    assert created["name"] == "authed" and "authed" in kc.list_connectors()
    assert kc.delete_connector("authed") is None


def test_a_20_mb_body_is_413_and_the_config_log_is_unchanged(secured, tmp_path):
    end = secured.config_log_end()
    config = {**increment(tmp_path / "big.jsonl"), "padding": "x" * (20 * 1024 * 1024)}
    r = httpx.post(f"{secured.http}/connectors", json={"name": "big", "config": config}, headers=AUTH, timeout=60)
    assert r.status_code == 413, r.text[:200]
    assert r.json()["error_code"] == 413 and "rest.max.request.bytes" in r.json()["message"]
    assert secured.config_log_end() == end
    assert "big" not in httpx.get(f"{secured.http}/connectors", headers=AUTH).json()


def test_a_rebound_host_name_is_refused_and_nothing_runs(secured, tmp_path):
    end = secured.config_log_end()
    r = httpx.post(f"{secured.http}/connectors", json={"name": "rebound", "config": increment(tmp_path / "r")},
                   headers={**AUTH, "Host": "attacker.example:8083"})
    assert r.status_code == 400 and "Host" in r.json()["message"]
    assert secured.config_log_end() == end
    assert httpx.get(f"{secured.http}/connectors", headers={**AUTH, "Host": "localhost"}).status_code == 200


def test_https_serves_with_its_certificate_and_plain_http_to_it_fails(secured):
    r = httpx.get(f"{secured.https}/connectors", headers=AUTH, verify=secured.trust())
    assert r.status_code == 200 and r.json() == []
    assert httpx.get(f"{secured.https}/connectors", verify=secured.trust()).status_code == 401
    with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):  # not a system CA
        httpx.get(f"{secured.https}/connectors", headers=AUTH)
    plain = secured.https.replace("https://", "http://")
    with pytest.raises(httpx.TransportError):  # no HTTP answer at all on the TLS port
        httpx.get(f"{plain}/connectors", headers=AUTH, timeout=10)


def test_the_cli_passes_credentials_and_verifies_tls(secured, capsys, monkeypatch):
    monkeypatch.delenv("SPARKCAT_USER", raising=False)
    monkeypatch.delenv("SPARKCAT_TOKEN", raising=False)
    cacert = str(secured.cert.cert)
    assert cli(["plugins", "--url", secured.https, "--user", f"admin:{PASSWORD}", "--cacert", cacert]) == 0
    assert "IncrementSourceConnector" in capsys.readouterr().out
    monkeypatch.setenv("SPARKCAT_TOKEN", TOKEN)
    assert cli(["get", "--url", secured.https, "--cacert", cacert, "-o", "json"]) == 0
    assert capsys.readouterr().out.strip() == "[]"
    monkeypatch.delenv("SPARKCAT_TOKEN")

    assert cli(["get", "--url", secured.https, "--cacert", cacert]) == 1
    err = capsys.readouterr().err
    assert "User cannot access the resource." in err and "--user" in err
    assert cli(["get", "--url", secured.https, "--user", f"admin:{PASSWORD}"]) == 2
    assert "certificate verify failed" in capsys.readouterr().err
    assert cli(["get", "--url", secured.https, "--user", f"admin:{PASSWORD}", "--insecure"]) == 0


class Gate:
    """In place of the herder's ``connector_progress`` for /metrics: blocks until opened, or raises ``error``."""

    def __init__(self, error: Exception | None = None):
        self.entered = threading.Semaphore(0)
        self.opened = threading.Event()
        self.error = error

    def __call__(self):
        if self.error is not None:
            raise self.error
        self.entered.release()
        assert self.opened.wait(60)
        return []


@pytest.fixture
def gated(secured, monkeypatch) -> Iterator[Gate]:
    """Swaps the herder's connector progress, which /metrics reads, for a gate; restored afterwards."""
    gate = Gate()
    monkeypatch.setattr(secured.driver.herder, "connector_progress", gate)
    try:
        yield gate
    finally:
        gate.opened.set()


def test_slow_requests_fill_the_slots_then_503_while_health_answers(secured, gated):
    results: list[int] = []
    slow = [threading.Thread(target=lambda: results.append(
        httpx.get(f"{secured.http}/metrics", headers=AUTH, timeout=60).status_code)) for _ in range(4)]
    for thread in slow:
        thread.start()
    for _ in slow:
        assert gated.entered.acquire(timeout=30)
    r = httpx.get(f"{secured.https}/connectors", headers=AUTH, verify=secured.trust())
    assert r.status_code == 503 and r.headers["retry-after"] == "1"  # the limit spans both listeners
    assert httpx.get(f"{secured.http}/health", headers=AUTH).status_code == 200
    gated.opened.set()
    for thread in slow:
        thread.join(60)
    assert results == [200] * 4
    assert httpx.get(f"{secured.http}/connectors", headers=AUTH).status_code == 200


def test_a_server_fault_answers_a_request_id_and_logs_the_traceback_under_it(secured, gated, caplog):
    gated.error = RuntimeError("cannot open /var/lib/sparkcat/internal/secret.db")
    with caplog.at_level(logging.ERROR, logger="sparkcat.rest"):
        r = httpx.get(f"{secured.http}/metrics", headers=AUTH)
    assert r.status_code == 500
    request_id = r.headers["x-request-id"]
    assert r.json() == {"error_code": 500, "message": f"Internal server error (request id {request_id})"}
    assert "/var/lib" not in r.text
    logged = [rec for rec in caplog.records if request_id in rec.getMessage()]
    assert logged and logged[0].exc_info and "secret.db" in str(logged[0].exc_info[1])
