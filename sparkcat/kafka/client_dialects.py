"""The two dialects of Kafka client settings: librdkafka's (confluent-kafka) and the Java client's.

Most settings have the same name in both (``security.protocol``, ``acks``, ``ssl.key.password``); the
security ones do not. A worker file may use either dialect, as a Kafka Connect worker file (Java names)
or a confluent-kafka config (librdkafka names) would; ``to_librdkafka`` and ``to_java`` turn a merged
set of settings into the dialect of the client that takes them:

============================================  ==========================================================
Java client                                   librdkafka
============================================  ==========================================================
``sasl.mechanism``                            ``sasl.mechanisms``
``sasl.jaas.config`` (Plain/Scram module)     ``sasl.username``, ``sasl.password``
``sasl.jaas.config`` (Krb5LoginModule)        ``sasl.kerberos.keytab``, ``sasl.kerberos.principal``
``ssl.truststore.location`` (type PEM)        ``ssl.ca.location``
``ssl.truststore.certificates``               ``ssl.ca.pem``
``ssl.keystore.location`` (type PEM)          ``ssl.certificate.location`` and ``ssl.key.location`` (one file)
``ssl.keystore.certificate.chain``            ``ssl.certificate.pem``
``ssl.keystore.key``                          ``ssl.key.pem``
``ssl.keystore.location`` (type PKCS12)       ``ssl.keystore.location`` (librdkafka reads PKCS#12 only)
``ssl.endpoint.identification.algorithm=``    ``ssl.endpoint.identification.algorithm=none``
============================================  ==========================================================

A name the target dialect spells itself wins over one translated into it. Settings one client has and
the other has no counterpart for are left out of the other's settings (``JAVA_ONLY``, ``LIBRDKAFKA_ONLY``)
rather than refused there by name; what cannot be translated at all (a JKS store for librdkafka, a
private key and certificate in two files for Java) raises ``ClientSettingsError`` naming the key.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from sparkcat.errors import ConfigError

__all__ = ["ClientSettingsError", "to_librdkafka", "to_java", "parse_jaas", "JAVA_ONLY", "LIBRDKAFKA_ONLY"]


class ClientSettingsError(ConfigError):
    """Kafka client settings one of the two clients cannot take (the key is in ``errors``)."""


#: Java client settings librdkafka has no counterpart for (after translation): Java clients only.
JAVA_ONLY = frozenset({
    "ssl.truststore.type", "ssl.truststore.password", "ssl.keystore.type", "ssl.protocol", "ssl.enabled.protocols",
    "ssl.keymanager.algorithm", "ssl.trustmanager.algorithm", "ssl.secure.random.implementation",
    "ssl.engine.factory.class", "ssl.provider", "sasl.login.class", "sasl.login.callback.handler.class",
    "sasl.client.callback.handler.class", "sasl.kerberos.ticket.renew.window.factor",
    "sasl.kerberos.ticket.renew.jitter"})
#: librdkafka settings the Java client has no counterpart for (after translation): Python clients only.
LIBRDKAFKA_ONLY = frozenset({
    "logger", "log_level", "debug", "enable.partition.eof", "enable.auto.offset.store", "fetch.wait.max.ms",
    "fetch.queue.backoff.ms", "queued.min.messages",
    "enable.ssl.certificate.verification", "ssl.ca.certificate.stores", "ssl.crl.location", "ssl.engine.location",
    "ssl.engine.id", "ssl.providers", "ssl.curves.list", "ssl.sigalgs.list", "sasl.kerberos.kinit.cmd",
    "sasl.oauthbearer.config", "enable.sasl.oauthbearer.unsecure.jwt"})

PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
KRB5_MODULE = "com.sun.security.auth.module.Krb5LoginModule"
_JAAS = re.compile(r"\s*(?P<module>[\w.$]+)\s+(?:required|requisite|sufficient|optional)\b(?P<options>.*?);?\s*$",
                   re.S | re.I)
_OPTION = re.compile(r'([\w.]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s;"]+))')


def parse_jaas(text: str) -> tuple[str, dict[str, str]]:
    """The login module and options of one ``sasl.jaas.config`` entry.

    >>> parse_jaas('org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p\\\\"q";')
    ('org.apache.kafka.common.security.plain.PlainLoginModule', {'username': 'u', 'password': 'p"q'})
    """
    match = _JAAS.fullmatch(text)
    if match is None:
        raise ClientSettingsError("sasl.jaas.config is not '<LoginModule> required key=\"value\" ...;'",
                                  {"sasl.jaas.config": ["not a JAAS login module entry"]})
    options = {m.group(1): re.sub(r"\\(.)", r"\1", m.group(2)) if m.group(2) is not None else m.group(3)
               for m in _OPTION.finditer(match.group("options"))}
    return match.group("module"), options


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _jaas(module: str, **options: str) -> str:
    """One ``sasl.jaas.config`` entry, values quoted as Java's JAAS parser reads them."""
    return " ".join([module, "required", *(f"{k}={_quoted(v)}" for k, v in options.items())]) + ";"


def _fill(out: dict[str, Any], translated: Mapping[str, Any]) -> None:
    """Add translated settings, except where ``out`` spells the target name itself."""
    for key, value in translated.items():
        out.setdefault(key, value)


def _refused(key: str, reason: str) -> ClientSettingsError:
    return ClientSettingsError(f"Kafka client setting {key}: {reason}", {key: [reason]})


def to_librdkafka(settings: Mapping[str, Any]) -> dict[str, Any]:
    """``settings`` as librdkafka (confluent-kafka) takes them: Java security names translated (see the module doc).

    >>> jaas = f'{PLAIN_MODULE} required username="u" password="p";'
    >>> to_librdkafka({"sasl.mechanism": "PLAIN", "sasl.jaas.config": jaas, "ssl.truststore.type": "PEM",
    ...                "ssl.truststore.location": "/ca.pem", "acks": "all"})  # doctest: +NORMALIZE_WHITESPACE
    {'acks': 'all', 'sasl.mechanisms': 'PLAIN', 'sasl.username': 'u', 'sasl.password': 'p',
     'ssl.ca.location': '/ca.pem'}
    """
    out = dict(settings)
    if "sasl.mechanism" in out:
        out.setdefault("sasl.mechanisms", out.pop("sasl.mechanism"))
        out.pop("sasl.mechanism", None)
    jaas = out.pop("sasl.jaas.config", None)
    if jaas is not None and str(jaas).strip():
        _fill(out, _jaas_to_librdkafka(str(jaas)))
    truststore_type = str(out.get("ssl.truststore.type") or "JKS").strip().upper()
    if "ssl.truststore.location" in out:
        location = out.pop("ssl.truststore.location")
        if truststore_type != "PEM":
            raise _refused("ssl.truststore.location", f"librdkafka (the Python clients: stores, leader election, "
                           f"Python connectors' producers) cannot read a {truststore_type} trust store; give it "
                           f"as a PEM file with ssl.truststore.type=PEM, or as ssl.ca.location")
        _fill(out, {"ssl.ca.location": location})
    if "ssl.truststore.certificates" in out:
        _fill(out, {"ssl.ca.pem": out.pop("ssl.truststore.certificates")})
    keystore_type = str(out.get("ssl.keystore.type") or "").strip().upper()
    if keystore_type == "PEM":
        if "ssl.keystore.location" in out:
            location = out.pop("ssl.keystore.location")
            _fill(out, {"ssl.certificate.location": location, "ssl.key.location": location})
        out.pop("ssl.keystore.password", None)
    elif keystore_type not in ("", "PKCS12") and "ssl.keystore.location" in out:
        raise _refused("ssl.keystore.location", f"librdkafka cannot read a {keystore_type} key store; give it as "
                       f"PKCS12 or PEM (ssl.keystore.type)")
    if "ssl.keystore.certificate.chain" in out:
        _fill(out, {"ssl.certificate.pem": out.pop("ssl.keystore.certificate.chain")})
    if "ssl.keystore.key" in out:
        _fill(out, {"ssl.key.pem": out.pop("ssl.keystore.key")})
    if str(out.get("ssl.endpoint.identification.algorithm", "x")).strip() == "":
        out["ssl.endpoint.identification.algorithm"] = "none"
    return {k: v for k, v in out.items() if k not in JAVA_ONLY}


def _jaas_to_librdkafka(jaas: str) -> dict[str, str]:
    module, options = parse_jaas(jaas)
    if module in (PLAIN_MODULE, SCRAM_MODULE):
        return {key: options[name] for name, key in (("username", "sasl.username"), ("password", "sasl.password"))
                if name in options}
    if module == KRB5_MODULE:
        out = {key: options[name] for name, key in (("keyTab", "sasl.kerberos.keytab"),
                                                     ("principal", "sasl.kerberos.principal")) if name in options}
        if "serviceName" in options:
            out["sasl.kerberos.service.name"] = options["serviceName"]
        return out
    raise _refused("sasl.jaas.config", f"librdkafka has no counterpart of the login module {module}; set its "
                   f"own settings (sasl.username and sasl.password, sasl.kerberos.*, sasl.oauthbearer.*) instead")


def to_java(settings: Mapping[str, Any]) -> dict[str, Any]:
    """``settings`` as the Java client (Spark's Kafka source and writer) takes them: librdkafka names translated.

    >>> to_java({"sasl.mechanisms": "SCRAM-SHA-512", "sasl.username": "u", "sasl.password": "p",
    ...          "ssl.ca.location": "/ca.pem", "fetch.wait.max.ms": "10"})  # doctest: +NORMALIZE_WHITESPACE
    {'sasl.mechanism': 'SCRAM-SHA-512',
     'sasl.jaas.config': 'org.apache.kafka.common.security.scram.ScramLoginModule required username="u" password="p";',
     'ssl.truststore.location': '/ca.pem', 'ssl.truststore.type': 'PEM'}
    """
    out = dict(settings)
    if "sasl.mechanisms" in out:
        out.setdefault("sasl.mechanism", out.pop("sasl.mechanisms"))
        out.pop("sasl.mechanisms", None)
    mechanism = str(out.get("sasl.mechanism") or "GSSAPI").strip().upper()
    username, password = out.pop("sasl.username", None), out.pop("sasl.password", None)
    keytab, principal = out.pop("sasl.kerberos.keytab", None), out.pop("sasl.kerberos.principal", None)
    if username is not None or password is not None:
        if mechanism == "PLAIN" or mechanism.startswith("SCRAM-"):
            module = PLAIN_MODULE if mechanism == "PLAIN" else SCRAM_MODULE
            _fill(out, {"sasl.jaas.config": _jaas(module, username=str(username or ""), password=str(password or ""))})
        elif "sasl.jaas.config" not in out:
            raise _refused("sasl.username", f"the Java client takes a user name and password with sasl.mechanism "
                           f"PLAIN or SCRAM-SHA-256/512 only, not {mechanism}")
    elif keytab is not None or principal is not None:
        options = {"keyTab": str(keytab)} if keytab is not None else {}
        if principal is not None:
            options["principal"] = str(principal)
        module = f"{KRB5_MODULE} required useKeyTab=true storeKey=true"
        _fill(out, {"sasl.jaas.config": " ".join([module, *(f"{k}={_quoted(v)}" for k, v in options.items())]) + ";"})
    _java_trust_and_key_stores(out)
    if str(out.get("ssl.endpoint.identification.algorithm", "")).strip().lower() == "none":
        out["ssl.endpoint.identification.algorithm"] = ""
    return {k: v for k, v in out.items() if k not in LIBRDKAFKA_ONLY}


def _java_trust_and_key_stores(out: dict[str, Any]) -> None:
    """librdkafka's PEM locations and inline PEMs as the Java client's PEM trust and key stores (in place)."""
    ca = out.pop("ssl.ca.location", None)
    if ca is not None and str(ca).strip() not in ("", "probe") and "ssl.truststore.location" not in out:
        out["ssl.truststore.location"] = ca
        out["ssl.truststore.type"] = "PEM"
    ca_pem = out.pop("ssl.ca.pem", None)
    if ca_pem is not None and "ssl.truststore.certificates" not in out:
        out["ssl.truststore.certificates"] = ca_pem
        out["ssl.truststore.type"] = "PEM"
    certificate, key = out.pop("ssl.certificate.location", None), out.pop("ssl.key.location", None)
    if (certificate is not None or key is not None) and "ssl.keystore.location" not in out:
        if certificate != key:
            raise _refused("ssl.key.location", "the Java client reads a PEM key store from one file holding the "
                           "private key and the certificate chain: put both in one file and name it in "
                           "ssl.certificate.location and ssl.key.location (or ssl.keystore.location with "
                           "ssl.keystore.type=PEM)")
        out["ssl.keystore.location"] = certificate
        out["ssl.keystore.type"] = "PEM"
    certificate_pem, key_pem = out.pop("ssl.certificate.pem", None), out.pop("ssl.key.pem", None)
    if certificate_pem is not None and "ssl.keystore.certificate.chain" not in out:
        out["ssl.keystore.certificate.chain"] = certificate_pem
        out["ssl.keystore.type"] = "PEM"
    if key_pem is not None and "ssl.keystore.key" not in out:
        out["ssl.keystore.key"] = key_pem
        out["ssl.keystore.type"] = "PEM"
