"""PKCS12 stores and client certificates: real TLS handshakes between the listener's and the forwarder's contexts."""

from __future__ import annotations

import socket
import ssl
import threading

import pytest

from sparkcat.config.rest import TlsConfig
from sparkcat.config.tls_tuning import TlsTuning
from sparkcat.errors import ConfigError
from sparkcat.rest.tls import client_context, tls_context
from tests.tls import client_cert, issue, pkcs12, pkcs12_truststore, self_signed


def handshake(server: ssl.SSLContext, client: ssl.SSLContext) -> str:
    """Connect ``client`` to a loopback server using ``server``; the peer's certificate subject CN the server saw
    ("" for none), or the exception the client met."""
    seen: list[str] = []
    with socket.create_server(("127.0.0.1", 0)) as listener:
        def serve():
            conn, _ = listener.accept()
            try:
                with server.wrap_socket(conn, server_side=True) as tls:
                    peer = tls.getpeercert() or {}
                    seen.append(dict(x[0] for x in peer.get("subject", ())).get("commonName", ""))
                    tls.sendall(b"ok")
            except (ssl.SSLError, OSError) as e:
                seen.append(f"refused: {type(e).__name__}")

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        try:
            with socket.create_connection(listener.getsockname()) as raw, \
                    client.wrap_socket(raw, server_hostname="localhost") as tls:
                tls.recv(2)
        except (ssl.SSLError, OSError):
            pass
        thread.join(10)
    return seen[0]


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    base = tmp_path_factory.mktemp("stores")
    server = self_signed(base / "server")
    client = client_cert(base / "client")
    return server, client, base


def test_a_pkcs12_keystore_serves_and_a_wrong_password_names_the_key_not_the_password(certs):
    server, _, base = certs
    store = pkcs12(server.cert, server.key, base / "server.p12", "st0re-pw")
    context = tls_context(TlsConfig(keystore_type="PKCS12", keystore_location=str(store), keystore_password="st0re-pw"))
    assert handshake(context, ssl.create_default_context(cafile=str(server.cert))) == ""
    with pytest.raises(ConfigError) as e:
        tls_context(TlsConfig(keystore_type="PKCS12", keystore_location=str(store), keystore_password="wr0ng-pw"))
    assert "listeners.https.ssl.keystore.location" in e.value.errors and "wr0ng-pw" not in e.value.message


@pytest.mark.parametrize("truststore", ["PEM", "PKCS12"])
def test_required_client_auth_refuses_a_client_without_a_certificate_and_accepts_one_signed_by_the_truststore(
        certs, truststore):
    server, client, base = certs
    location = (str(client.ca) if truststore == "PEM"
                else str(pkcs12_truststore(client.ca, base / "trust.p12", "tru5t-pw")))
    listener = tls_context(TlsConfig(keystore_location=str(server.keystore), client_auth="required",
                                     truststore_type=truststore, truststore_location=location,
                                     truststore_password="tru5t-pw"))
    anonymous = ssl.create_default_context(cafile=str(server.cert))
    assert handshake(listener, anonymous).startswith("refused")
    with_cert = ssl.create_default_context(cafile=str(server.cert))
    with_cert.load_cert_chain(str(client.cert), str(client.key))
    assert handshake(listener, with_cert) == "sparkcat-client"
    stranger = ssl.create_default_context(cafile=str(server.cert))
    stranger.load_cert_chain(str(server.cert), str(server.key))  # not signed by the truststore's CA
    assert handshake(listener, stranger).startswith("refused")


def test_requested_client_auth_lets_a_client_without_a_certificate_in(certs):
    server, client, _ = certs
    listener = tls_context(TlsConfig(keystore_location=str(server.keystore), client_auth="requested",
                                     truststore_location=str(client.ca)))
    assert handshake(listener, ssl.create_default_context(cafile=str(server.cert))) == ""


def test_the_forwarding_client_presents_the_keystore_and_checks_the_leader_with_the_truststore(certs, tmp_path):
    """A group whose drivers share one keystore, signed by the CA of their truststore (Connect's usual setup)."""
    _, client, _ = certs
    cert, key = issue(client, tmp_path, "driver")
    tls = TlsConfig(keystore_type="PKCS12", keystore_location=str(pkcs12(cert, key, tmp_path / "d.p12", "pw12")),
                    keystore_password="pw12", client_auth="required", truststore_location=str(client.ca))
    assert handshake(tls_context(tls), client_context(tls)) == "driver"
    untrusting = TlsConfig(keystore_location=str(cert), key_location=str(key))  # system CAs: the leader is unknown
    assert handshake(tls_context(tls), client_context(untrusting)).startswith("refused")


def negotiated(server: ssl.SSLContext, client: ssl.SSLContext, hostname: str = "localhost") -> tuple[str, str] | str:
    """The (protocol, OpenSSL cipher name) the client negotiated with a loopback server, or the client's error."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        def serve():
            conn, _ = listener.accept()
            try:
                with server.wrap_socket(conn, server_side=True) as tls:
                    tls.sendall(b"ok")
            except (ssl.SSLError, OSError):
                conn.close()

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        try:
            with socket.create_connection(listener.getsockname()) as raw, \
                    client.wrap_socket(raw, server_hostname=hostname) as tls:
                tls.recv(2)
                return tls.version(), tls.cipher()[0]
        except (ssl.SSLError, OSError) as e:
            return f"refused: {type(e).__name__}"
        finally:
            thread.join(10)


def test_enabled_protocols_and_cipher_suites_decide_the_handshake(certs):
    server, _, _ = certs
    tls12_only = ssl.create_default_context(cafile=str(server.cert))
    tls12_only.maximum_version = ssl.TLSVersion.TLSv1_2
    only13 = TlsConfig(keystore_location=str(server.keystore),
                       tuning=TlsTuning(versions=("TLSv1_3", "TLSv1_3")))
    assert negotiated(tls_context(only13), tls12_only).startswith("refused")
    assert negotiated(tls_context(only13), ssl.create_default_context(cafile=str(server.cert)))[0] == "TLSv1.3"
    suite = TlsConfig(keystore_location=str(server.keystore),
                      tuning=TlsTuning(versions=("TLSv1_2", "TLSv1_2"), openssl_ciphers="ECDHE-RSA-AES128-GCM-SHA256"))
    assert negotiated(tls_context(suite), tls12_only) == ("TLSv1.2", "ECDHE-RSA-AES128-GCM-SHA256")
    tls12_only.set_ciphers("ECDHE-RSA-AES256-GCM-SHA384")  # a client without the listener's one suite
    assert negotiated(tls_context(suite), tls12_only).startswith("refused")


def test_the_forwarding_client_checks_the_leaders_host_name_unless_the_algorithm_is_empty(certs, tmp_path):
    _, client, _ = certs
    cert, key = issue(client, tmp_path, "leader")  # a certificate for localhost and 127.0.0.1 only
    leader = tls_context(TlsConfig(keystore_location=str(cert), key_location=str(key)))
    checking = TlsConfig(truststore_location=str(client.ca))
    assert negotiated(leader, client_context(checking), "leader.example") == "refused: SSLCertVerificationError"
    trusting = TlsConfig(truststore_location=str(client.ca), tuning=TlsTuning(check_hostname=False))
    assert negotiated(leader, client_context(trusting), "leader.example")[0] == "TLSv1.3"
    capped = TlsConfig(truststore_location=str(client.ca), tuning=TlsTuning(client_maximum="TLSv1_2"))
    assert negotiated(leader, client_context(capped))[0] == "TLSv1.2"  # ssl.protocol=TLSv1.2
