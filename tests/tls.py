"""Self-signed certificates for HTTPS tests, made with the ``openssl`` command (no Python dependency)."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass(frozen=True)
class SelfSigned:
    """A certificate for localhost and 127.0.0.1: ``cert`` and ``key`` apart, and ``keystore`` with both."""

    cert: Path
    key: Path
    keystore: Path


def self_signed(directory: Path, key_password: str | None = None) -> SelfSigned:
    """A fresh key and certificate in ``directory``; the key is encrypted when ``key_password`` is given."""
    if shutil.which("openssl") is None:
        pytest.fail("the openssl command is needed to make a test certificate (apt-get install openssl)")
    directory.mkdir(parents=True, exist_ok=True)
    cert, key, keystore = directory / "cert.pem", directory / "key.pem", directory / "server.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                    str(cert), "-days", "2", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"], check=True, capture_output=True)
    if key_password is not None:
        plain = key.with_name("plain-key.pem")
        key.rename(plain)
        subprocess.run(["openssl", "pkey", "-in", str(plain), "-out", str(key), "-aes256", "-passout",
                        f"pass:{key_password}"], check=True, capture_output=True)
        plain.unlink()
    keystore.write_text(key.read_text() + cert.read_text())
    for path in (cert, key, keystore):
        path.chmod(0o600)
    return SelfSigned(cert, key, keystore)


@dataclass(frozen=True)
class ClientCert:
    """A CA (``ca``, PEM: the listener's truststore) and a client certificate it signed (``cert``, ``key``)."""

    ca: Path
    cert: Path
    key: Path


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def client_cert(directory: Path) -> ClientCert:
    """A fresh CA and a client certificate (CN=sparkcat-client) signed by it."""
    directory.mkdir(parents=True, exist_ok=True)
    ca, ca_key = directory / "ca.pem", directory / "ca-key.pem"
    cert, key, csr = directory / "client.pem", directory / "client-key.pem", directory / "client.csr"
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(ca_key), "-out", str(ca), "-days", "2",
             "-subj", "/CN=sparkcat-test-ca")
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(csr), "-subj",
             "/CN=sparkcat-client")
    _openssl("x509", "-req", "-in", str(csr), "-CA", str(ca), "-CAkey", str(ca_key), "-CAcreateserial", "-out",
             str(cert), "-days", "2")
    return ClientCert(ca, cert, key)


def issue(ca: ClientCert, directory: Path, name: str,
          names: str = "DNS:localhost,IP:127.0.0.1") -> tuple[Path, Path]:
    """A certificate ``ca`` signed for ``names`` (localhost and 127.0.0.1 unless given; a server's, usable as a
    client's too): (cert, key)."""
    directory.mkdir(parents=True, exist_ok=True)
    cert, key, csr, ext = (directory / f"{name}.pem", directory / f"{name}-key.pem", directory / f"{name}.csr",
                           directory / f"{name}.ext")
    ext.write_text(f"subjectAltName={names}\n")
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(csr), "-subj", f"/CN={name}")
    _openssl("x509", "-req", "-in", str(csr), "-CA", str(ca.ca), "-CAkey", str(ca.ca.with_name("ca-key.pem")),
             "-CAcreateserial", "-out", str(cert), "-days", "2", "-extfile", str(ext))
    return cert, key


def pkcs12(cert: Path, key: Path, out: Path, password: str) -> Path:
    """``cert`` and ``key`` as a PKCS12 keystore (what ``keytool`` or ``openssl pkcs12 -export`` make)."""
    _openssl("pkcs12", "-export", "-in", str(cert), "-inkey", str(key), "-out", str(out), "-passout",
             f"pass:{password}", "-name", "sparkcat")
    return out


def pkcs12_truststore(cert: Path, out: Path, password: str) -> Path:
    """A PKCS12 truststore holding only the trusted certificate ``cert`` (no key), as keytool makes one."""
    _openssl("pkcs12", "-export", "-nokeys", "-in", str(cert), "-out", str(out), "-passout", f"pass:{password}")
    return out
