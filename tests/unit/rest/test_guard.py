"""The request guard in front of every handler, on the real app with the real herder (memory stores)."""

from __future__ import annotations

import base64
import logging
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from sparkcat.rest.app import create_app
from sparkcat.rest.guard import GuardPolicy
from sparkcat.config.rest import RestSecurityConfig

CONFIG = {"connector.class": "increment", "increments": "1"}


def basic(user: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


def secret_file(path: Path, text: str) -> str:
    path.write_text(text)
    path.chmod(0o600)
    return str(path)


@pytest.fixture
def policy(tmp_path) -> GuardPolicy:
    config = RestSecurityConfig(
        basic_credentials_file=secret_file(tmp_path / "creds", "alice: s3cret\n"),
        bearer_tokens_file=secret_file(tmp_path / "tokens", "ci: tok-123\n"),
        allowed_hosts=("connect.example.com", "other.example.com:8443"), max_request_bytes=1000,
        max_concurrent_requests=2)
    return GuardPolicy.from_config(config)


@pytest.fixture
def guarded(driver, policy) -> Iterator[TestClient]:
    with TestClient(create_app(driver, policy), base_url="http://localhost", raise_server_exceptions=False) as c:
        yield c


def test_no_or_wrong_credentials_get_connects_401_with_a_challenge(guarded):
    for headers in ({}, basic("alice", "wrong"), basic("mallory", "s3cret"), {"Authorization": "Bearer nope"},
                    {"Authorization": "Basic %%%"}, {"Authorization": "Digest x"}):
        r = guarded.get("/connectors", headers=headers)
        assert r.status_code == 401, headers
        assert r.json() == {"error_code": 401, "message": "User cannot access the resource."}
        assert r.headers.get_list("www-authenticate") == ['Basic realm="KafkaConnect", charset="UTF-8"',
                                                          'Bearer realm="KafkaConnect"']


def test_right_password_or_token_gets_in(guarded):
    assert guarded.get("/connectors", headers=basic("alice", "s3cret")).json() == []
    assert guarded.get("/connectors", headers={"Authorization": "Bearer tok-123"}).json() == []


def test_every_path_is_protected_health_and_the_openapi_document_too(guarded):
    for path in ("/", "/health", "/metrics", "/openapi.json", "/docs", "/connector-plugins", "/admin/loggers",
                 "/no/such/path"):
        assert guarded.get(path).status_code == 401, path
    assert guarded.get("/health", headers=basic("alice", "s3cret")).status_code == 200


def test_a_rejected_write_writes_nothing(guarded, driver):
    end = driver.config_log_end()
    body = {"name": "seq", "config": CONFIG}
    assert guarded.post("/connectors", json=body).status_code == 401
    assert guarded.post("/connectors", json=body, headers={**basic("alice", "s3cret"),
                                                           "Host": "evil.example"}).status_code == 400
    assert driver.config_log_end() == end
    assert guarded.post("/connectors", json=body, headers=basic("alice", "s3cret")).status_code == 201
    assert driver.config_log_end() > end


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8083", "localhost.evil.example", "[::1].evil"])
def test_a_foreign_host_name_is_refused_before_authentication(guarded, host):
    r = guarded.get("/connectors", headers={**basic("alice", "s3cret"), "Host": host})
    assert r.status_code == 400 and r.json()["error_code"] == 400 and "Host" in r.json()["message"]


@pytest.mark.parametrize("host", ["localhost:8083", "LOCALHOST.", "127.0.0.1:8083", "[::1]:8083", "10.9.8.7",
                                  "connect.example.com:443", "Other.Example.com"])
def test_loopback_names_ip_addresses_and_allowed_names_pass(guarded, host):
    assert guarded.get("/connectors", headers={**basic("alice", "s3cret"), "Host": host}).status_code == 200


def test_a_body_over_the_limit_is_413_and_writes_nothing(guarded, driver):
    end = driver.config_log_end()
    big = {"name": "big", "config": {**CONFIG, "pad": "x" * 2000}}
    r = guarded.post("/connectors", json=big, headers=basic("alice", "s3cret"))
    assert r.status_code == 413 and r.json()["error_code"] == 413 and "rest.max.request.bytes" in r.json()["message"]

    def chunks() -> Iterator[bytes]:  # no Content-Length: the limit applies while reading
        yield b'{"name": "big", "config": {"connector.class": "increment", "pad": "'
        for _ in range(10):
            yield b"x" * 200
        yield b'"}}'

    r = guarded.post("/connectors", content=chunks(), headers={**basic("alice", "s3cret"),
                                                               "Content-Type": "application/json"})
    assert r.status_code == 413, r.text
    assert r.json()["error_code"] == 413
    assert driver.config_log_end() == end


class Gate:
    """Stands in for the herder's ``connector_progress``: blocks until opened, or raises."""

    def __init__(self, error: Exception | None = None):
        self.entered = threading.Semaphore(0)
        self.open = threading.Event()
        self.error = error

    def __call__(self):
        if self.error is not None:
            raise self.error
        self.entered.release()
        assert self.open.wait(30)
        return []


def test_requests_beyond_the_in_flight_limit_get_503_and_health_still_answers(guarded, driver, monkeypatch):
    gate = Gate()
    monkeypatch.setattr(driver.herder, "connector_progress", gate)
    auth = basic("alice", "s3cret")
    results: list[int] = []
    slow = [threading.Thread(target=lambda: results.append(guarded.get("/metrics", headers=auth).status_code))
            for _ in range(2)]
    for thread in slow:
        thread.start()
    try:
        assert gate.entered.acquire(timeout=10) and gate.entered.acquire(timeout=10)  # both slots held
        r = guarded.get("/connectors", headers=auth)
        assert r.status_code == 503 and r.headers["retry-after"] == "1"
        assert r.json()["error_code"] == 503 and "rest.max.concurrent.requests" in r.json()["message"]
        assert guarded.get("/health", headers=auth).status_code == 200  # not counted: probes still answer
    finally:
        gate.open.set()
        for thread in slow:
            thread.join(30)
    assert results == [200, 200]
    assert guarded.get("/connectors", headers=auth).status_code == 200  # slots were given back


def test_an_unexpected_fault_is_a_500_with_only_a_request_id(guarded, driver, caplog, monkeypatch):
    monkeypatch.setattr(driver.herder, "connector_progress", Gate(RuntimeError("cannot open /srv/internal/secret.db")))
    with caplog.at_level(logging.ERROR, logger="sparkcat.rest"):
        r = guarded.get("/metrics", headers=basic("alice", "s3cret"))
    assert r.status_code == 500
    request_id = r.headers["x-request-id"]
    assert r.json() == {"error_code": 500, "message": f"Internal server error (request id {request_id})"}
    assert "/srv/internal" not in r.text
    [record] = [rec for rec in caplog.records if request_id in rec.getMessage()]
    assert record.exc_info and "/srv/internal/secret.db" in str(record.exc_info[1])


def test_every_answer_carries_a_request_id_and_a_plain_client_id_is_kept(guarded):
    ids = {guarded.get("/connectors").headers["x-request-id"] for _ in range(3)}  # 401s too
    assert len(ids) == 3
    given = guarded.get("/connectors", headers={**basic("alice", "s3cret"), "X-Request-Id": "trace-42.a_b"})
    assert given.headers["x-request-id"] == "trace-42.a_b"
    odd = guarded.get("/connectors", headers={**basic("alice", "s3cret"), "X-Request-Id": "a b\tc"})
    assert odd.headers["x-request-id"] != "a b\tc"


def test_without_auth_files_the_default_app_lets_loopback_requests_in(client):
    assert client.get("/connectors").status_code == 200
    assert client.get("/connectors", headers={"Host": "rebound.evil.example"}).status_code == 400


def test_a_cross_site_browser_request_is_403_and_nothing_restarts(guarded, driver):
    auth = basic("alice", "s3cret")
    assert guarded.post("/connectors", json={"name": "seq", "config": CONFIG, "initial_state": "STOPPED"},
                        headers=auth).status_code == 201
    end = driver.config_log_end()
    for origin in ("https://evil.example", "null", "http://localhost:9999", "https://localhost"):
        r = guarded.post("/connectors/seq/restart", headers={**auth, "Origin": origin})  # a "simple" request
        assert r.status_code == 403 and r.json()["message"] == "Cross-origin requests are not accepted", origin
    assert driver.config_log_end() == end
    same = guarded.post("/connectors/seq/restart", headers={**auth, "Origin": "http://localhost"})  # /docs
    assert same.status_code in (202, 204), same.text


def test_writes_are_logged_with_who_made_them_and_never_the_secret(guarded, caplog):
    with caplog.at_level(logging.INFO, logger="sparkcat.rest"):
        guarded.put("/connectors/nope/pause", headers={"Authorization": "Bearer tok-123"})
        guarded.put("/connectors/nope%0Aforged/pause", headers=basic("alice", "s3cret"))
    assert "PUT /connectors/nope/pause by token:ci (request id " in caplog.text
    assert "PUT /connectors/nope%0Aforged/pause by alice" in caplog.text  # encoded: no forged log lines
    assert "tok-123" not in caplog.text and "s3cret" not in caplog.text
