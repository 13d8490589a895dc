"""The REST API's listeners and protections, as worker keys parsed once into dataclasses.

Kafka Connect's names where it has one: ``listeners`` (``http://host:port`` and
``https://host:port``, comma-separated) and ``listeners.https.ssl.*`` for the HTTPS
listener's keystore (PEM or PKCS12; JKS is refused with the command that converts it),
its truststore and ``ssl.client.auth`` (client certificates: ``required``, ``requested``,
``none``; ``sparkcat.rest.tls`` builds the contexts), and the TLS tuning keys of
``sparkcat.config.tls_tuning``. As in Connect, a worker file without any ``listeners.https.*`` key
gives the listener its bare ``ssl.*`` keys instead. Authentication follows Connect's ``BasicAuthSecurityRestExtension`` (a
credentials file of ``user: password`` lines) plus bearer tokens; the rest are sparkcat's
own keys under ``rest.``. This module only parses; files are read when the REST API starts
(``sparkcat.rest.guard``), so the CLI can load a worker config without them.

>>> parse_listeners("http://127.0.0.1:8083, https://[::1]:8443", "worker.yaml")[1].url
'https://[::1]:8443'
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from sparkcat.config.tls_tuning import DEFAULTS as TUNING_DEFAULTS, TlsTuning, parse_tuning
from sparkcat.errors import ConfigError

#: Worker keys of this module -> attribute of ``RestSecurityConfig`` or ``TlsConfig``.
KEYS = {
    "listeners": "listeners",
    "listeners.https.ssl.keystore.type": "keystore_type",
    "listeners.https.ssl.keystore.location": "keystore_location",
    "listeners.https.ssl.keystore.password": "keystore_password",
    "listeners.https.ssl.key.location": "key_location",
    "listeners.https.ssl.key.password": "key_password",
    "listeners.https.ssl.client.auth": "client_auth",
    "listeners.https.ssl.truststore.type": "truststore_type",
    "listeners.https.ssl.truststore.location": "truststore_location",
    "listeners.https.ssl.truststore.password": "truststore_password",
    **{f"listeners.https.ssl.{name}": "tuning" for name in TUNING_DEFAULTS},
    "rest.auth.basic.credentials.file": "basic_credentials_file",
    "rest.auth.bearer.tokens.file": "bearer_tokens_file",
    "rest.allow.unauthenticated": "allow_unauthenticated",
    "rest.allowed.hosts": "allowed_hosts",
    "rest.max.request.bytes": "max_request_bytes",
    "rest.max.concurrent.requests": "max_concurrent_requests",
}
#: Kafka Connect REST keys sparkcat does not implement -> why, so a copied worker file fails with a reason.
NOT_IMPLEMENTED = {
    "rest.extension.classes": "Java REST extensions cannot load into a Python REST API; sparkcat's own "
                              "rest.auth.* keys replace BasicAuthSecurityRestExtension",
    "admin.listeners": "the admin endpoints (/admin/loggers) are served on the listeners of the rest of the API",
}
_TLS_ATTRS = {"keystore_type", "keystore_location", "keystore_password", "key_location", "key_password",
              "client_auth", "truststore_type", "truststore_location", "truststore_password"}
#: Connect's ``ssl.client.auth`` values; ``none`` is its default.
CLIENT_AUTH = ("required", "requested", "none")
STORE_TYPES = ("PEM", "PKCS12")
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
DEFAULT_MAX_REQUEST_BYTES = 1024 * 1024
DEFAULT_MAX_CONCURRENT_REQUESTS = 32


@dataclass(frozen=True)
class Listener:
    """One address the REST API listens on; an empty host means every interface (as in Connect)."""

    scheme: str
    host: str
    port: int

    @property
    def url(self) -> str:
        """Where a client on this machine reaches it (a wildcard host is reached on loopback)."""
        host = self.host if self.host not in ("", "0.0.0.0", "::") else "127.0.0.1"
        return f"{self.scheme}://{_bracketed(host)}:{self.port}"

    @property
    def loopback(self) -> bool:
        """True when only this machine can connect (localhost or a loopback address)."""
        return is_loopback(self.host)


@dataclass(frozen=True)
class TlsConfig:
    """The HTTPS listener's keystore (PEM: chain, and the key unless ``key_location``; or PKCS12), and the
    truststore its clients' certificates are checked against when ``client_auth`` is not ``none``."""

    keystore_type: str = "PEM"
    keystore_location: str = ""
    keystore_password: str = field(default="", repr=False)
    key_location: str = ""
    key_password: str = field(default="", repr=False)
    client_auth: str = "none"
    truststore_type: str = "PEM"
    truststore_location: str = ""
    truststore_password: str = field(default="", repr=False)
    tuning: TlsTuning = field(default_factory=TlsTuning)
    #: How the worker file spells the keys: ``listeners.https.`` or, as Connect falls back to, bare ``ssl.*``.
    prefix: str = "listeners.https."

    def key(self, name: str) -> str:
        """The worker key of ``ssl.NAME`` as the worker file spells it, for messages."""
        return f"{self.prefix}ssl.{name}"

    def __post_init__(self) -> None:
        object.__setattr__(self, "keystore_type", self.keystore_type.strip().upper() or "PEM")
        object.__setattr__(self, "truststore_type", self.truststore_type.strip().upper() or "PEM")
        object.__setattr__(self, "client_auth", self.client_auth.strip().lower() or "none")


@dataclass(frozen=True)
class RestSecurityConfig:
    """Listeners, authentication and request limits of the REST API (see conf/worker.yaml)."""

    listeners: tuple[Listener, ...] = ()
    tls: TlsConfig = field(default_factory=TlsConfig)
    basic_credentials_file: str = ""
    bearer_tokens_file: str = ""
    allow_unauthenticated: bool = False
    allowed_hosts: tuple[str, ...] = ()
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES
    max_concurrent_requests: int = DEFAULT_MAX_CONCURRENT_REQUESTS

    @property
    def authenticates(self) -> bool:
        return bool(self.basic_credentials_file or self.bearer_tokens_file)


def is_loopback(host: str) -> bool:
    """``localhost`` or a loopback address; a wildcard or any other name is not.

    >>> is_loopback("127.0.0.2"), is_loopback("localhost"), is_loopback("0.0.0.0"), is_loopback("myhost")
    (True, True, False, False)
    """
    host = host.strip("[]").lower().rstrip(".")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def parse_listeners(value: Any, source: str) -> tuple[Listener, ...]:
    """Connect's ``listeners``: a comma-separated string (or a YAML list) of ``scheme://host:port``."""
    items = value if isinstance(value, list) else str(value or "").split(",")
    listeners = []
    for item in (str(i).strip() for i in items):
        if not item:
            continue
        problem = f"{source}: listeners: {item!r} is not scheme://host:port with scheme http or https"
        try:
            parts = urlsplit(item)
            port = parts.port
        except ValueError:
            raise ConfigError(problem, {"listeners": [problem]}) from None
        if parts.scheme.lower() not in ("http", "https") or port is None or parts.path not in ("", "/"):
            raise ConfigError(problem, {"listeners": [problem]})
        listeners.append(Listener(parts.scheme.lower(), parts.hostname or "", port))
    return tuple(listeners)


def _positive_int(raw: dict[str, Any], key: str, default: int, source: str) -> int:
    value = raw.get(key, default)
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = 0
    if number < 1 or isinstance(value, bool):
        raise ConfigError(f"{source}: {key} must be a positive whole number, not {value!r}",
                          {key: ["not a positive number"]})
    return number


def _boolean(raw: dict[str, Any], key: str, source: str) -> bool:
    value = raw.get(key, False)
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text not in ("true", "false"):
        raise ConfigError(f"{source}: {key} must be true or false, not {value!r}", {key: ["not a boolean"]})
    return text == "true"


def _check_tls(tls: TlsConfig, listeners: tuple[Listener, ...], source: str, tuned: bool) -> None:
    _check_store_type(tls, "keystore", tls.keystore_type, source)
    _check_store_type(tls, "truststore", tls.truststore_type, source)
    if tls.client_auth not in CLIENT_AUTH:
        message = (f"{source}: {tls.key('client.auth')} must be one of {', '.join(CLIENT_AUTH)}, "
                   f"not {tls.client_auth!r}")
        raise ConfigError(message, {tls.key("client.auth"): [message]})
    if tls.client_auth != "none" and not tls.truststore_location:
        message = (f"{source}: {tls.key('client.auth')}={tls.client_auth} needs "
                   f"{tls.key('truststore.location')}: the certificates client certificates must be signed by")
        raise ConfigError(message, {tls.key("truststore.location"): [message]})
    for store, password in (("keystore", tls.keystore_password), ("truststore", tls.truststore_password)):
        if password and getattr(tls, f"{store}_type") == "PEM":  # Kafka's DefaultSslEngineFactory refuses it too
            key = tls.key(f"{store}.password")
            message = (f"{source}: {key} cannot be set for a PEM {store} (Kafka refuses it too); "
                       + (f"an encrypted key's password is {tls.key('key.password')}" if store == "keystore"
                          else "a PEM truststore has no password"))
            raise ConfigError(message, {key: [message]})
    if tls.keystore_type == "PKCS12" and tls.key_location:
        message = f"{source}: {tls.key('key.location')} is for a PEM keystore; a PKCS12 keystore holds its key"
        raise ConfigError(message, {tls.key("key.location"): [message]})
    https = any(listener.scheme == "https" for listener in listeners)
    if https and not tls.keystore_location:
        message = f"{source}: an https listener needs {tls.key('keystore.location')} (a PEM or PKCS12 file)"
        raise ConfigError(message, {tls.key("keystore.location"): ["required by an https listener"]})
    untouched = TlsConfig(keystore_type=tls.keystore_type, truststore_type=tls.truststore_type,
                          tuning=tls.tuning, prefix=tls.prefix)
    if not https and (tuned or tls != untouched):
        message = (f"{source}: {tls.prefix}ssl.* is set but no listener is https://"
                   + ("; the Kafka clients' TLS keys are kafka.ssl.*" if not tls.prefix else ""))
        raise ConfigError(message, {"listeners": [f"no https listener for {tls.prefix}ssl.*"]})


def _check_store_type(tls: TlsConfig, store: str, kind: str, source: str) -> None:
    key = tls.key(f"{store}.type")
    if kind == "JKS":
        message = (f"{source}: {key} 'JKS' is not supported: sparkcat reads PEM and PKCS12. Convert the "
                   f"store with `keytool -importkeystore -srckeystore KS.jks -destkeystore KS.p12 "
                   f"-deststoretype PKCS12` and set {key}: PKCS12")
        raise ConfigError(message, {key: ["only PEM and PKCS12 are supported"]})
    if kind not in STORE_TYPES:
        message = f"{source}: {key} must be PEM or PKCS12, not {kind!r}"
        raise ConfigError(message, {key: ["only PEM and PKCS12 are supported"]})


def parse_rest_config(raw: dict[str, Any], source: str) -> RestSecurityConfig:
    """The keys of ``KEYS`` found in a worker file (``raw``); errors name the key and ``source``."""
    text = {k: ("" if v is None else v) for k, v in raw.items()}
    listeners = parse_listeners(text.get("listeners", ""), source)
    text, prefix = _with_bare_ssl_keys(text, source)
    tuning_raw = {k[len("listeners.https.ssl."):]: v for k, v in text.items() if KEYS.get(k) == "tuning"}
    tls = TlsConfig(**{KEYS[k]: str(v) for k, v in text.items() if KEYS.get(k) in _TLS_ATTRS},
                    tuning=parse_tuning(tuning_raw, prefix, source), prefix=prefix)
    _check_tls(tls, listeners, source, tuned=bool(tuning_raw))
    hosts = text.get("rest.allowed.hosts", "")
    hosts = hosts if isinstance(hosts, list) else str(hosts).split(",")
    return RestSecurityConfig(
        listeners=listeners, tls=tls,
        basic_credentials_file=str(text.get("rest.auth.basic.credentials.file", "")),
        bearer_tokens_file=str(text.get("rest.auth.bearer.tokens.file", "")),
        allow_unauthenticated=_boolean(text, "rest.allow.unauthenticated", source),
        allowed_hosts=tuple(h.strip().lower() for h in map(str, hosts) if h.strip()),
        max_request_bytes=_positive_int(text, "rest.max.request.bytes", DEFAULT_MAX_REQUEST_BYTES, source),
        max_concurrent_requests=_positive_int(text, "rest.max.concurrent.requests",
                                              DEFAULT_MAX_CONCURRENT_REQUESTS, source))


def is_rest_key(key: str) -> bool:
    """A key of this module: one of ``KEYS``, or a bare ``ssl.*`` key Connect's REST falls back to."""
    return key in KEYS or (key.startswith("ssl.") and f"listeners.https.{key}" in KEYS)


def _with_bare_ssl_keys(text: dict[str, Any], source: str) -> tuple[dict[str, Any], str]:
    """Connect's all-or-nothing: with no ``listeners.https.*`` key the listener takes the bare ``ssl.*`` keys
    (returned under their prefixed names, with the prefix ``""`` for messages); with one, a bare key would be
    ignored by Connect, so it is refused."""
    bare = sorted(k for k in text if k.startswith("ssl."))
    if not bare:
        return text, "listeners.https."
    prefixed = sorted(k for k in text if k.startswith("listeners.https."))
    if prefixed:
        message = (f"{source}: {', '.join(bare)} would be ignored because {prefixed[0]} is set (Connect's REST "
                   f"server then reads only listeners.https.* keys); prefix them with listeners.https. (the Kafka "
                   f"clients' TLS keys are kafka.ssl.*)")
        raise ConfigError(message, {k: [message] for k in bare})
    return {(f"listeners.https.{k}" if k in bare else k): v for k, v in text.items()}, ""


def rest_listeners(security: RestSecurityConfig, rest_host: str, rest_port: int) -> tuple[Listener, ...]:
    """``listeners`` when set, else the plain-HTTP listener of ``rest.host``/``rest.port``."""
    return security.listeners or (Listener("http", rest_host, rest_port),)


def check_exposure(security: RestSecurityConfig, listeners: tuple[Listener, ...]) -> None:
    """A listener other machines can reach needs authentication, or ``rest.allow.unauthenticated: true``."""
    exposed = [listener for listener in listeners if not listener.loopback]
    if exposed and not security.authenticates and not security.allow_unauthenticated:
        where = ", ".join(f"{listener.scheme}://{_bracketed(listener.host) or '*'}:{listener.port}"
                          for listener in exposed)
        message = (f"The REST API would listen on {where}, which other machines can reach, without "
                   f"authentication. Set rest.auth.basic.credentials.file or rest.auth.bearer.tokens.file, "
                   f"listen on 127.0.0.1, or set rest.allow.unauthenticated: true to accept the risk.")
        raise ConfigError(message, {"rest.allow.unauthenticated": ["required for an unauthenticated, "
                                                                   "non-loopback listener"]})
