"""REST listeners and protections in the worker config: parsed, checked, and refused when unsafe."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from sparkcat.errors import ConfigError
from sparkcat.config.rest import (
    DEFAULT_MAX_CONCURRENT_REQUESTS,
    DEFAULT_MAX_REQUEST_BYTES,
    Listener,
    check_exposure,
    parse_listeners,
)
from sparkcat.config.worker import WorkerConfig, load_worker_config


def worker(tmp_path: Path, **keys) -> WorkerConfig:
    path = tmp_path / "worker.yaml"
    path.write_text(yaml.safe_dump(keys))
    return load_worker_config(path)


def test_defaults_are_one_loopback_http_listener_without_auth_and_with_limits():
    config = WorkerConfig()
    assert config.rest_listeners == (Listener("http", "127.0.0.1", 8083),)
    security = config.rest_security
    assert not security.authenticates and not security.allow_unauthenticated
    assert security.max_request_bytes == DEFAULT_MAX_REQUEST_BYTES == 1024 * 1024
    assert security.max_concurrent_requests == DEFAULT_MAX_CONCURRENT_REQUESTS
    check_exposure(security, config.rest_listeners)  # loopback: fine without auth


def test_listeners_replace_rest_host_and_port(tmp_path):
    keystore = tmp_path / "server.pem"
    config = worker(tmp_path, listeners="http://localhost:8083, https://0.0.0.0:8443",
                    **{"listeners.https.ssl.keystore.location": str(keystore),
                       "rest.auth.bearer.tokens.file": "tokens"})
    assert config.rest_listeners == (Listener("http", "localhost", 8083), Listener("https", "0.0.0.0", 8443))
    assert config.rest_security.tls.keystore_location == str(keystore)
    assert [listener.url for listener in config.rest_listeners] == ["http://localhost:8083",
                                                                    "https://127.0.0.1:8443"]


def test_a_yaml_list_of_listeners_and_ipv6_hosts():
    listeners = parse_listeners(["http://[::1]:1", "HTTP://:2"], "w")
    assert listeners == (Listener("http", "::1", 1), Listener("http", "", 2))
    assert listeners[0].loopback and not listeners[1].loopback


@pytest.mark.parametrize("bad", ["ftp://h:1", "http://h", "127.0.0.1:8083", "http://h:99999", "http://h:1/path"])
def test_a_malformed_listener_is_refused_naming_the_key(bad):
    with pytest.raises(ConfigError, match="listeners") as e:
        parse_listeners(bad, "w.yaml")
    assert "listeners" in e.value.errors


def test_listeners_with_rest_port_in_the_same_file_is_a_conflict(tmp_path):
    with pytest.raises(ConfigError, match="either listeners or rest.host/rest.port"):
        worker(tmp_path, listeners="http://127.0.0.1:1", **{"rest.port": 2})


@pytest.mark.parametrize("store", ["keystore", "truststore"])
def test_a_jks_store_is_refused_with_how_to_convert_it(tmp_path, store):
    with pytest.raises(ConfigError, match="PEM and PKCS12") as e:
        worker(tmp_path, listeners="https://127.0.0.1:8443",
               **{f"listeners.https.ssl.{store}.type": "jks", "listeners.https.ssl.keystore.location": "ks"})
    assert f"listeners.https.ssl.{store}.type" in e.value.errors
    assert "keytool -importkeystore" in e.value.message and "JKS" in e.value.message


def test_pkcs12_stores_and_client_auth_are_read_with_connects_keys(tmp_path):
    tls = worker(tmp_path, listeners="https://127.0.0.1:8443", **{
        "listeners.https.ssl.keystore.type": "pkcs12", "listeners.https.ssl.keystore.location": "ks.p12",
        "listeners.https.ssl.keystore.password": "st0re-pass", "listeners.https.ssl.client.auth": "REQUIRED",
        "listeners.https.ssl.truststore.type": "PKCS12", "listeners.https.ssl.truststore.location": "ts.p12",
        "listeners.https.ssl.truststore.password": "tru5t-pass"}).rest_security.tls
    assert (tls.keystore_type, tls.client_auth, tls.truststore_type) == ("PKCS12", "required", "PKCS12")
    assert "st0re-pass" not in repr(tls) and "tru5t-pass" not in repr(tls)
    assert worker(tmp_path, listeners="https://127.0.0.1:8443", **{
        "listeners.https.ssl.keystore.location": "s.pem"}).rest_security.tls.client_auth == "none"


@pytest.mark.parametrize("keys, named", [
    ({"listeners.https.ssl.client.auth": "required"}, "listeners.https.ssl.truststore.location"),
    ({"listeners.https.ssl.client.auth": "requested"}, "listeners.https.ssl.truststore.location"),
    ({"listeners.https.ssl.client.auth": "want", "listeners.https.ssl.truststore.location": "t.pem"},
     "listeners.https.ssl.client.auth"),
    ({"listeners.https.ssl.truststore.type": "BKS"}, "listeners.https.ssl.truststore.type"),
    ({"listeners.https.ssl.keystore.type": "PKCS12", "listeners.https.ssl.key.location": "k.pem"},
     "listeners.https.ssl.key.location"),
    ({"listeners.https.ssl.keystore.password": "pw"}, "listeners.https.ssl.keystore.password"),
    ({"listeners.https.ssl.truststore.location": "t.pem", "listeners.https.ssl.truststore.password": "pw"},
     "listeners.https.ssl.truststore.password"),
])
def test_client_auth_and_store_settings_that_cannot_work_name_their_key(tmp_path, keys, named):
    with pytest.raises(ConfigError) as e:
        worker(tmp_path, listeners="https://127.0.0.1:8443",
               **{"listeners.https.ssl.keystore.location": "s.pem", **keys})
    assert named in e.value.errors and named in e.value.message


def test_https_needs_a_keystore_and_a_keystore_needs_https(tmp_path):
    with pytest.raises(ConfigError, match="needs listeners.https.ssl.keystore.location"):
        worker(tmp_path, listeners="https://127.0.0.1:8443")
    with pytest.raises(ConfigError, match="no listener is https"):
        worker(tmp_path, **{"listeners.https.ssl.keystore.location": "server.pem"})


def test_the_key_password_is_not_in_the_config_repr(tmp_path):
    config = worker(tmp_path, listeners="https://127.0.0.1:8443", **{
        "listeners.https.ssl.keystore.location": "s.pem", "listeners.https.ssl.key.password": "Sup3rS3cret"})
    assert config.rest_security.tls.key_password == "Sup3rS3cret"
    assert "Sup3rS3cret" not in repr(config)


@pytest.mark.parametrize("key,value", [("rest.max.request.bytes", 0), ("rest.max.request.bytes", "1MB"),
                                       ("rest.max.concurrent.requests", -1), ("rest.allow.unauthenticated", "yes")])
def test_bad_limits_and_booleans_name_their_key(tmp_path, key, value):
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")) as e:
        worker(tmp_path, **{key: value})
    assert key in e.value.errors


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "", "10.0.0.5", "connect.example.com"])
def test_a_reachable_listener_without_auth_is_refused_naming_the_key(tmp_path, host):
    config = WorkerConfig(rest_host=host, rest_port=8083)
    with pytest.raises(ConfigError, match="rest.allow.unauthenticated: true") as e:
        check_exposure(config.rest_security, config.rest_listeners)
    assert "rest.allow.unauthenticated" in e.value.errors


def test_a_reachable_listener_starts_with_auth_or_an_explicit_opt_out(tmp_path):
    with_auth = worker(tmp_path, listeners="http://0.0.0.0:8083", **{"rest.auth.basic.credentials.file": "c"})
    check_exposure(with_auth.rest_security, with_auth.rest_listeners)
    opted_out = worker(tmp_path, listeners="http://0.0.0.0:8083", **{"rest.allow.unauthenticated": True})
    check_exposure(opted_out.rest_security, opted_out.rest_listeners)
