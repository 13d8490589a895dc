"""``ssl.endpoint.identification.algorithm`` on the real forwarding path: a standby's write reaches an https leader
whose certificate does not name the address the group gives for it only when the algorithm is empty.

The standby is the real REST application on a Sparkless driver; the leader is a real HTTPS server on loopback
(its certificate is signed by the truststore's CA for ``leader.example`` only), answering every POST with 201.
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from sparkcat.config.rest import TlsConfig
from sparkcat.config.tls_tuning import TlsTuning
from sparkcat.rest.app import create_app
from sparkcat.rest.tls import tls_context
from tests.tls import ClientCert, client_cert, issue
from tests.unit.rest.conftest import SparklessDriver
from tests.unit.runtime.control.test_write_routes import Group


class _Leader(http.server.BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 (http.server's name)
        self.rfile.read(int(self.headers.get("content-length", 0)))
        body = b'{"name": "from-the-leader"}'
        self.send_response(201)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def ca(tmp_path_factory) -> ClientCert:
    return client_cert(tmp_path_factory.mktemp("forward-ca"))


@pytest.fixture
def leader_url(ca, tmp_path) -> Iterator[str]:
    cert, key = issue(ca, tmp_path, "leader", names="DNS:leader.example")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Leader)
    server.socket = tls_context(TlsConfig(keystore_location=str(cert), key_location=str(key))).wrap_socket(
        server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"https://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join(10)


def post_through_standby(tmp_path: Path, leader: str, tls: TlsConfig):
    standby = SparklessDriver(tmp_path / "state")
    standby.worker = replace(standby.worker, rest_security=replace(standby.worker.rest_security, tls=tls))
    standby.herder.leadership = Group(url=leader)
    standby.start()
    try:
        with TestClient(create_app(standby, write_wait_s=1), base_url="http://localhost") as client:
            return client.post("/connectors", json={"name": "inc", "config": {"connector.class": "increment"}})
    finally:
        standby.stop()


def test_an_empty_algorithm_lets_the_standby_forward_to_a_leader_whose_certificate_names_another_host(
        ca, leader_url, tmp_path):
    answer = post_through_standby(tmp_path, leader_url, TlsConfig(
        truststore_location=str(ca.ca), tuning=TlsTuning(check_hostname=False)))
    assert answer.status_code == 201 and answer.json() == {"name": "from-the-leader"}


def test_the_default_https_algorithm_refuses_that_leader(ca, leader_url, tmp_path):
    answer = post_through_standby(tmp_path, leader_url, TlsConfig(truststore_location=str(ca.ca)))
    # at once, as Connect's RestClient answers a failed forward: waiting for another leader would not help
    assert answer.status_code == 500, answer.json()
    assert "IO Error trying to forward REST request" in answer.json()["message"]
    assert "leader.example" in answer.json()["message"] or "certificate" in answer.json()["message"].lower()
