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
