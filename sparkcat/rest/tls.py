"""TLS contexts of the REST API: the HTTPS listener's (with client certificates), and the forwarding client's.

Kafka Connect's ``listeners.https.ssl.*`` keys (``config/rest.py``): a PEM or PKCS12 keystore,
a PEM or PKCS12 truststore, ``ssl.client.auth`` (``required``, ``requested``, ``none``), and the
protocols, cipher suites and host name check of ``config/tls_tuning.py``.
Python's ``ssl`` reads PEM files only, so a PKCS12 store is converted in memory with the
``cryptography`` package: its key and chain are written to an anonymous in-memory file
(``memfd``) for ``load_cert_chain``, never to disk; its trusted certificates become ``cadata``.

As Connect's ``RestClient`` does with the worker's ``listeners.https.*`` settings, a driver
forwarding a write to the leader verifies the leader against the truststore and presents the
listener's keystore as its client certificate, so a leader that requires client
certificates accepts the drivers of its own group.
"""

from __future__ import annotations

import os
import secrets
import ssl
from contextlib import contextmanager
from collections.abc import Iterator
from pathlib import Path

from sparkcat.config.rest import TlsConfig
from sparkcat.errors import ConfigError

_VERIFY = {"required": ssl.CERT_REQUIRED, "requested": ssl.CERT_OPTIONAL, "none": ssl.CERT_NONE}


def tls_context(tls: TlsConfig) -> ssl.SSLContext:
    """The HTTPS listener's context: its keystore, the enabled protocols and cipher suites, client certificates per
    ``ssl.client.auth``.

    Only the truststore's certificates are trusted for clients (never the system's CAs).
    """
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _tune(context, tls, tls.tuning.versions[1])
    load_keystore(context, tls)
    mode = _VERIFY[tls.client_auth]
    if mode != ssl.CERT_NONE:
        load_truststore(context, tls)
        context.verify_mode = mode
    return context


def client_context(tls: TlsConfig) -> ssl.SSLContext:
    """What a driver forwarding to the leader's HTTPS listener uses: the truststore (else the system's CAs) to
    check the leader, and the keystore as its client certificate; the leader's host name is checked unless
    ``ssl.endpoint.identification.algorithm`` is empty, and no version above ``ssl.protocol`` is offered."""
    if tls.truststore_location:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # checks hostnames and certificates, trusts nothing yet
        load_truststore(context, tls)
    else:
        context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
    context.check_hostname = tls.tuning.check_hostname
    _tune(context, tls, tls.tuning.client_maximum)
    if tls.keystore_location:
        load_keystore(context, tls)
    return context


def _tune(context: ssl.SSLContext, tls: TlsConfig, maximum: str) -> None:
    """``ssl.enabled.protocols`` (capped at ``maximum``) and the TLS 1.2 ``ssl.cipher.suites`` into ``context``."""
    context.minimum_version = ssl.TLSVersion[tls.tuning.versions[0]]
    context.maximum_version = ssl.TLSVersion[maximum]
    if tls.tuning.openssl_ciphers:
        try:
            context.set_ciphers(tls.tuning.openssl_ciphers)
        except ssl.SSLError as e:  # parse_tuning checked each suite: only a changed OpenSSL gets here
            key = tls.key("cipher.suites")
            raise ConfigError(f"{key}: OpenSSL refuses {tls.tuning.openssl_ciphers}: {e}", {key: [str(e)]}) from None


def load_keystore(context: ssl.SSLContext, tls: TlsConfig) -> None:
    """The keystore's chain and private key into ``context``; ConfigError naming the key (never a password)."""
    key = tls.key("keystore.location")
    if tls.keystore_type == "PKCS12":
        pem, password = _pkcs12_key_and_chain(tls)
        try:
            with _memory_file(pem) as path:
                context.load_cert_chain(path, None, password)
        except ssl.SSLError as e:
            raise ConfigError(f"{key}: cannot use the PKCS12 keystore {tls.keystore_location}: {e}",
                              {key: [str(e)]}) from None
        return
    try:
        context.load_cert_chain(tls.keystore_location, tls.key_location or None, tls.key_password or None)
    except (OSError, ssl.SSLError) as e:
        where = tls.keystore_location + (f" with key {tls.key_location}" if tls.key_location else "")
        raise ConfigError(f"{key}: cannot load the certificate and private key from {where}: {e}",
                          {key: [str(e)]}) from None


def load_truststore(context: ssl.SSLContext, tls: TlsConfig) -> None:
    """The truststore's certificates as the only ones ``context`` trusts to sign the peer's certificate."""
    key = tls.key("truststore.location")
    try:
        if tls.truststore_type == "PKCS12":
            context.load_verify_locations(cadata=_pkcs12_trusted(tls))
        else:
            context.load_verify_locations(cafile=tls.truststore_location)
    except (OSError, ssl.SSLError) as e:
        raise ConfigError(f"{key}: cannot load trusted certificates from {tls.truststore_location}: {e}",
                          {key: [str(e)]}) from None


def _pkcs12(path: str, password: str, key: str):
    try:
        from cryptography.hazmat.primitives.serialization import pkcs12
    except ImportError:
        raise ConfigError(f"{key}: a PKCS12 store needs the cryptography package, which is not installed",
                          {key: ["cryptography is not installed"]}) from None
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise ConfigError(f"{key}: cannot read {path}: {e.strerror}", {key: [str(e.strerror)]}) from None
    try:
        return pkcs12.load_pkcs12(data, password.encode() if password else None)
    except (ValueError, TypeError):
        message = f"{key}: {path} is not a PKCS12 store, or its password is wrong"
        raise ConfigError(message, {key: [message]}) from None


def _pkcs12_key_and_chain(tls: TlsConfig) -> tuple[bytes, str]:
    """The keystore's key (encrypted with a one-off password, returned with it) and certificate chain, as PEM."""
    from cryptography.hazmat.primitives import serialization

    key = tls.key("keystore.location")
    store = _pkcs12(tls.keystore_location, tls.keystore_password or tls.key_password, key)
    if store.key is None or store.cert is None:
        message = f"{key}: the PKCS12 keystore {tls.keystore_location} holds no private key with its certificate"
        raise ConfigError(message, {key: [message]})
    one_off = secrets.token_urlsafe(24)
    pem = store.key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.BestAvailableEncryption(one_off.encode()))
    for cert in [store.cert, *store.additional_certs]:
        pem += cert.certificate.public_bytes(serialization.Encoding.PEM)
    return pem, one_off


def _pkcs12_trusted(tls: TlsConfig) -> str:
    """Every certificate of a PKCS12 truststore (keytool's trusted entries, and an entry's own) as PEM text."""
    from cryptography.hazmat.primitives import serialization

    key = tls.key("truststore.location")
    store = _pkcs12(tls.truststore_location, tls.truststore_password, key)
    certs = [c.certificate for c in ([store.cert] if store.cert else []) + list(store.additional_certs)]
    if not certs:
        message = f"{key}: the PKCS12 truststore {tls.truststore_location} holds no certificate"
        raise ConfigError(message, {key: [message]})
    return "".join(c.public_bytes(serialization.Encoding.PEM).decode() for c in certs)


@contextmanager
def _memory_file(data: bytes) -> Iterator[str]:
    """A path to ``data`` in an anonymous in-memory file of this process (gone when closed)."""
    fd = os.memfd_create("sparkcat-keystore", os.MFD_CLOEXEC)
    try:
        os.write(fd, data)
        yield f"/proc/self/fd/{fd}"
    finally:
        os.close(fd)
