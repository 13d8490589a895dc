"""A real driver's HTTPS listener tuned with Connect's ``listeners.https.ssl.*`` protocol and cipher suite keys.

Each test starts a driver (real Spark, local stores) from a worker YAML file as an operator writes it, and
connects to it with Python clients that offer only some protocols or suites: what a user's client meets.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from sparkcat.bootstrap import Driver
from sparkcat.config.worker import load_worker_config
from tests.broker import free_port
from tests.tls import ClientCert, client_cert, issue

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def ca(tmp_path_factory) -> ClientCert:
    return client_cert(tmp_path_factory.mktemp("tls-tuning-ca"))


@contextmanager
def tuned_driver(spark, ca: ClientCert, directory: Path, tuning: str) -> Iterator[tuple[str, int]]:
    """A driver whose only listener is https on 127.0.0.1, with the worker file's ``tuning`` lines; (host, port)."""
    cert, key = issue(ca, directory, "localhost")
    port = free_port()
    path = directory / "worker.yaml"
    path.write_text(f"""
state.dir: {directory / "state"}
group.id: rest-tls-tuning
listeners: https://127.0.0.1:{port}
listeners.https.ssl.keystore.location: {cert}
listeners.https.ssl.key.location: {key}
{tuning}
""")
    with Driver(spark, load_worker_config(path), rest=True, watch_pipelines=False):
        yield "127.0.0.1", port


def client(ca: ClientCert, maximum: ssl.TLSVersion | None = None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(ca.ca))
    if maximum is not None:
        context.maximum_version = maximum
    return context


def get_connectors(address: tuple[str, int], context: ssl.SSLContext) -> tuple[str, str, str]:
    """GET /connectors over one TLS connection: (negotiated protocol, negotiated OpenSSL suite, HTTP status line)."""
    with socket.create_connection(address, timeout=30) as raw, \
            context.wrap_socket(raw, server_hostname="localhost") as tls:
        tls.sendall(b"GET /connectors HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        answer = b""
        while b"\r\n" not in answer:
            chunk = tls.recv(4096)
            if not chunk:
                break
            answer += chunk
        return tls.version(), tls.cipher()[0], answer.split(b"\r\n", 1)[0].decode()


def test_a_listener_enabling_only_tls_1_3_refuses_a_client_offering_only_tls_1_2(spark, ca, tmp_path):
    with tuned_driver(spark, ca, tmp_path, "listeners.https.ssl.enabled.protocols: TLSv1.3") as address:
        with pytest.raises(ssl.SSLError):
            get_connectors(address, client(ca, maximum=ssl.TLSVersion.TLSv1_2))
        with httpx.Client(verify=client(ca, maximum=ssl.TLSVersion.TLSv1_2)) as old, pytest.raises(httpx.ConnectError):
            old.get(f"https://localhost:{address[1]}/connectors")
        assert get_connectors(address, client(ca))[::2] == ("TLSv1.3", "HTTP/1.1 200 OK")


def test_a_cipher_suite_restriction_is_the_suite_a_tls_1_2_client_negotiates(spark, ca, tmp_path):
    # without the key the listener would pick ECDHE-RSA-AES256-GCM-SHA384, OpenSSL's first TLS 1.2 RSA suite
    with tuned_driver(spark, ca, tmp_path,
                      "listeners.https.ssl.cipher.suites: TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256") as address:
        assert get_connectors(address, client(ca, maximum=ssl.TLSVersion.TLSv1_2)) == (
            "TLSv1.2", "ECDHE-RSA-AES128-GCM-SHA256", "HTTP/1.1 200 OK")
        # as in Java, TLS 1.3 is off when none of its suites is listed: a client offering it gets TLS 1.2
        assert get_connectors(address, client(ca))[:2] == ("TLSv1.2", "ECDHE-RSA-AES128-GCM-SHA256")
        other = client(ca, maximum=ssl.TLSVersion.TLSv1_2)
        other.set_ciphers("ECDHE-RSA-AES256-GCM-SHA384")
        with pytest.raises(ssl.SSLError):
            get_connectors(address, other)
