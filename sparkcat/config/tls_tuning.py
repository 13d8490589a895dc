"""Kafka Connect's TLS tuning keys of the REST API, as far as Python's ``ssl`` module can honour them.

Connect's REST server (Jetty, ``SSLUtils``) takes, beside the stores, ``ssl.protocol``,
``ssl.enabled.protocols``, ``ssl.cipher.suites``, ``ssl.endpoint.identification.algorithm`` and
the JVM's machinery keys. Here:

- ``ssl.enabled.protocols`` (default ``TLSv1.2,TLSv1.3``) sets the contexts' minimum and maximum
  version. TLSv1 and TLSv1.1 are refused: OpenSSL 3 at Python's security level cannot negotiate
  them (the JVM disables them too, in ``jdk.tls.disabledAlgorithms``).
- ``ssl.protocol`` (default ``TLSv1.3``, ``TLSv1.2`` where OpenSSL lacks 1.3, as Kafka falls back)
  is, as in Java, the highest version the forwarding client offers; a Java server answers every
  enabled protocol whatever its value, and so does sparkcat's.
- ``ssl.cipher.suites`` is Java's (IANA) names. The TLS 1.2 ones become OpenSSL names for
  ``set_ciphers`` (``TLS12_SUITES``). Python cannot restrict TLS 1.3 suites, so TLS 1.3 names are
  taken only when they are exactly OpenSSL's enabled ones; a list with no TLS 1.3 name turns TLS
  1.3 off and one with no TLS 1.2 name turns TLS 1.2 off, as Java does (a protocol without suites).
- ``ssl.endpoint.identification.algorithm``: ``https`` (default) checks the leader's host name when
  a driver forwards a write to it; empty turns that check off.
- ``ssl.keymanager.algorithm``, ``ssl.trustmanager.algorithm``, ``ssl.secure.random.implementation``,
  ``ssl.provider``, ``ssl.engine.factory.class`` name JVM classes and algorithms. Each is accepted at
  the JVM's default (``SunX509``, ``PKIX``, or empty: what OpenSSL does anyway) and refused otherwise.

>>> parse_tuning({"cipher.suites": "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"}, "listeners.https.", "w.yaml").versions
('TLSv1_2', 'TLSv1_2')
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from typing import Any

from sparkcat.errors import ConfigError

#: The tuning keys (after ``ssl.``) and Connect's defaults; ``None``: the JVM's own choice.
DEFAULTS: dict[str, str | None] = {
    "protocol": "TLSv1.3",
    "enabled.protocols": "TLSv1.2,TLSv1.3",
    "cipher.suites": None,
    "endpoint.identification.algorithm": "https",
    "keymanager.algorithm": "SunX509",
    "trustmanager.algorithm": "PKIX",
    "secure.random.implementation": None,
    "provider": None,
    "engine.factory.class": None,
}
#: JVM-only keys -> why sparkcat cannot honour a value other than the default.
JVM_ONLY = {
    "keymanager.algorithm": "it names a Java KeyManagerFactory algorithm; OpenSSL reads the keystore itself",
    "trustmanager.algorithm": "it names a Java TrustManagerFactory algorithm; OpenSSL checks certificate "
                              "chains as PKIX does",
    "secure.random.implementation": "it names a Java SecureRandom algorithm; OpenSSL uses its own random "
                                    "generator",
    "provider": "it names a Java security provider; sparkcat's TLS is OpenSSL's",
    "engine.factory.class": "it names a Java SslEngineFactory class, which cannot load into Python "
                            "(Connect's REST server does not use it either)",
}
#: Protocol names sparkcat's contexts can use -> ``ssl.TLSVersion`` member names.
VERSIONS = {"TLSv1.2": "TLSv1_2", "TLSv1.3": "TLSv1_3"}
OLD_PROTOCOLS = ("SSL", "SSLv2", "SSLv3", "TLSv1", "TLSv1.1")
#: Java's TLS 1.3 suite names (OpenSSL names them alike).
TLS13_SUITES = ("TLS_AES_256_GCM_SHA384", "TLS_AES_128_GCM_SHA256", "TLS_CHACHA20_POLY1305_SHA256",
                "TLS_AES_128_CCM_SHA256", "TLS_AES_128_CCM_8_SHA256")
#: Java lists this signalling value among its suites; it is not a suite and OpenSSL always sends it.
SCSV = "TLS_EMPTY_RENEGOTIATION_INFO_SCSV"
#: IANA (Java) name -> OpenSSL name of the TLS 1.2 suites OpenSSL implements.
TLS12_SUITES = {
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_DHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "DHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384": "ECDHE-ECDSA-AES256-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384": "ECDHE-RSA-AES256-SHA384",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256": "ECDHE-ECDSA-AES128-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256": "ECDHE-RSA-AES128-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA": "ECDHE-ECDSA-AES256-SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA": "ECDHE-RSA-AES256-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA": "ECDHE-ECDSA-AES128-SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA": "ECDHE-RSA-AES128-SHA",
    "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384": "DHE-RSA-AES256-GCM-SHA384",
    "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256": "DHE-RSA-AES128-GCM-SHA256",
    "TLS_DHE_RSA_WITH_AES_256_CBC_SHA256": "DHE-RSA-AES256-SHA256",
    "TLS_DHE_RSA_WITH_AES_128_CBC_SHA256": "DHE-RSA-AES128-SHA256",
    "TLS_DHE_RSA_WITH_AES_256_CBC_SHA": "DHE-RSA-AES256-SHA",
    "TLS_DHE_RSA_WITH_AES_128_CBC_SHA": "DHE-RSA-AES128-SHA",
    "TLS_RSA_WITH_AES_256_GCM_SHA384": "AES256-GCM-SHA384",
    "TLS_RSA_WITH_AES_128_GCM_SHA256": "AES128-GCM-SHA256",
    "TLS_RSA_WITH_AES_256_CBC_SHA256": "AES256-SHA256",
    "TLS_RSA_WITH_AES_128_CBC_SHA256": "AES128-SHA256",
    "TLS_RSA_WITH_AES_256_CBC_SHA": "AES256-SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA": "AES128-SHA",
}


@dataclass(frozen=True)
class TlsTuning:
    """What the tuning keys ask of the listener's and the forwarding client's contexts.

    ``versions``: the lowest and highest ``ssl.TLSVersion`` member names enabled; ``client_maximum``: the
    highest the forwarding client offers (``ssl.protocol``); ``openssl_ciphers``: the ``set_ciphers``
    string for TLS 1.2 (empty: OpenSSL's defaults); ``check_hostname``: the forwarding client checks the
    leader's host name."""

    versions: tuple[str, str] = ("TLSv1_2", "TLSv1_3")
    client_maximum: str = "TLSv1_3"
    openssl_ciphers: str = ""
    check_hostname: bool = True


def openssl_tls13_suites() -> tuple[str, ...]:
    """The TLS 1.3 suites OpenSSL enables here (Python cannot change them)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    return tuple(c["name"] for c in context.get_ciphers() if c["protocol"] == "TLSv1.3")


def parse_tuning(raw: dict[str, Any], prefix: str, source: str) -> TlsTuning:
    """The tuning keys of ``raw`` (keyed by the part after ``ssl.``); ``prefix`` (``listeners.https.`` or empty)
    is how the worker file spells them, for the messages."""
    def key(name: str) -> str:
        return f"{prefix}ssl.{name}"

    for name, why in JVM_ONLY.items():
        value = str(raw.get(name) or "").strip()
        if value and value != (DEFAULTS[name] or ""):
            default = f"only its JVM default {DEFAULTS[name]} is accepted" if DEFAULTS[name] else "leave it unset"
            _refuse(key(name), f"{key(name)}={value} cannot be honoured: {why}; {default}", source)
    enabled = _enabled_protocols(raw.get("enabled.protocols"), key("enabled.protocols"), source)
    ciphers, tls12, tls13 = _cipher_suites(raw.get("cipher.suites"), key("cipher.suites"), source)
    if ciphers is not None:  # as Java: a protocol none of whose suites is listed cannot be negotiated
        enabled = [v for v in enabled if (tls12 if v == "TLSv1.2" else tls13)]
        if not enabled:
            _refuse(key("cipher.suites"), f"{key('cipher.suites')} names no suite of any protocol of "
                                          f"{key('enabled.protocols')}", source)
    maximum = _protocol(raw.get("protocol"), key("protocol"), source)
    if VERSIONS[maximum] < VERSIONS[enabled[0]]:
        _refuse(key("protocol"), f"{key('protocol')}={maximum} is below every enabled protocol "
                                 f"({', '.join(enabled)}): the forwarding client could not connect", source)
    algorithm = str(raw.get("endpoint.identification.algorithm", "https") or "").strip()
    if algorithm.lower() not in ("https", ""):
        _refuse(key("endpoint.identification.algorithm"),
                f"{key('endpoint.identification.algorithm')} must be https (check the leader's host name) or "
                f"empty (do not), not {algorithm!r}", source)
    return TlsTuning(versions=(VERSIONS[enabled[0]], VERSIONS[enabled[-1]]),
                     client_maximum=min(VERSIONS[maximum], VERSIONS[enabled[-1]]),
                     openssl_ciphers=":".join(ciphers or ()), check_hostname=bool(algorithm))


def _refuse(key: str, message: str, source: str) -> None:
    raise ConfigError(f"{source}: {message}", {key: [message]})


def _names(value: Any) -> list[str]:
    items = value if isinstance(value, list) else str(value).split(",")
    return [str(i).strip() for i in items if str(i).strip()]


def _enabled_protocols(value: Any, key: str, source: str) -> list[str]:
    """The enabled versions, lowest first; unset or empty is Connect's default (TLSv1.2 and TLSv1.3)."""
    names = _names(value) if value not in (None, "") else []
    names = names or ["TLSv1.2", "TLSv1.3"]
    for name in names:
        if name in OLD_PROTOCOLS:
            _refuse(key, f"{key}: {name} is not supported: OpenSSL 3 at Python's security level cannot "
                         f"negotiate it (Java disables it by default too); use TLSv1.2 and/or TLSv1.3", source)
        if name not in VERSIONS:
            _refuse(key, f"{key}: {name!r} is not a protocol sparkcat knows; use TLSv1.2 and/or TLSv1.3", source)
        if name == "TLSv1.3" and not ssl.HAS_TLSv1_3:
            _refuse(key, f"{key}: TLSv1.3 is not available in this Python's OpenSSL ({ssl.OPENSSL_VERSION})",
                    source)
    return sorted(set(names), key=VERSIONS.get)


def _protocol(value: Any, key: str, source: str) -> str:
    """``ssl.protocol``: TLSv1.3 by default (TLSv1.2 where OpenSSL lacks it, as Kafka falls back); TLS is the newest."""
    name = str(value or "").strip()
    if not name:
        return "TLSv1.3" if ssl.HAS_TLSv1_3 else "TLSv1.2"
    if name == "TLS":
        return "TLSv1.3" if ssl.HAS_TLSv1_3 else "TLSv1.2"
    if name in OLD_PROTOCOLS:
        _refuse(key, f"{key}={name} is not supported: OpenSSL 3 at Python's security level cannot negotiate "
                     f"it; use TLSv1.2 or TLSv1.3", source)
    if name not in VERSIONS or (name == "TLSv1.3" and not ssl.HAS_TLSv1_3):
        _refuse(key, f"{key} must be TLSv1.2, TLSv1.3 or TLS, not {name!r}", source)
    return name


def _cipher_suites(value: Any, key: str, source: str) -> tuple[list[str] | None, bool, bool]:
    """The OpenSSL names of the listed TLS 1.2 suites (None: unset, OpenSSL's defaults), and whether TLS 1.2 and
    TLS 1.3 suites are listed."""
    names = _names(value) if value not in (None, "") else []
    if not names:
        return None, True, True
    unknown = [n for n in names if n not in TLS12_SUITES and n not in TLS13_SUITES and n != SCSV]
    if unknown:
        _refuse(key, f"{key}: {', '.join(unknown)} is not a cipher suite OpenSSL offers here (use Java's IANA "
                     f"names, e.g. TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384)", source)
    tls13 = [n for n in names if n in TLS13_SUITES]
    defaults = openssl_tls13_suites()
    if tls13 and set(tls13) != set(defaults):
        _refuse(key, f"{key}: the TLS 1.3 suites cannot be restricted in Python's ssl module; list all of "
                     f"{', '.join(defaults)} or none (none turns TLS 1.3 off), not {', '.join(tls13)}", source)
    openssl = [TLS12_SUITES[n] for n in names if n in TLS12_SUITES]
    for name, native in zip([n for n in names if n in TLS12_SUITES], openssl):
        try:
            ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).set_ciphers(native)
        except ssl.SSLError:
            _refuse(key, f"{key}: {name} ({native}) is not enabled in this Python's OpenSSL "
                         f"({ssl.OPENSSL_VERSION})", source)
    return openssl, bool(openssl), bool(tls13)
