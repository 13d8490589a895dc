"""Connect's REST TLS tuning keys in a worker file: mapped to what OpenSSL does, or refused naming the key."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest
import yaml

from sparkcat.config.tls_tuning import TLS12_SUITES, TlsTuning, openssl_tls13_suites
from sparkcat.config.worker import load_worker_config
from sparkcat.errors import ConfigError

HTTPS = {"listeners": "https://127.0.0.1:8443", "listeners.https.ssl.keystore.location": "/etc/server.pem"}


def tuning(tmp_path: Path, keys: dict, base: dict = HTTPS) -> TlsTuning:
    path = tmp_path / "worker.yaml"
    path.write_text(yaml.safe_dump({**base, **keys}))
    return load_worker_config(path).rest_security.tls.tuning


def refused(tmp_path: Path, keys: dict, base: dict = HTTPS) -> ConfigError:
    with pytest.raises(ConfigError) as e:
        tuning(tmp_path, keys, base)
    return e.value


def test_connects_defaults_enable_tls_1_2_and_1_3_with_openssls_suites_and_hostname_checks(tmp_path):
    assert tuning(tmp_path, {}) == TlsTuning(("TLSv1_2", "TLSv1_3"), "TLSv1_3", "", True)


def test_enabled_protocols_set_the_lowest_and_highest_version(tmp_path):
    assert tuning(tmp_path, {"listeners.https.ssl.enabled.protocols": "TLSv1.3"}).versions == ("TLSv1_3", "TLSv1_3")
    assert tuning(tmp_path, {"listeners.https.ssl.enabled.protocols": ["TLSv1.2"]}).versions == ("TLSv1_2", "TLSv1_2")


@pytest.mark.parametrize("key,value", [("enabled.protocols", "TLSv1.1,TLSv1.2"), ("enabled.protocols", "TLSv1"),
                                       ("enabled.protocols", "TLSv9"), ("protocol", "SSLv3"), ("protocol", "DTLS")])
def test_protocols_openssl_cannot_negotiate_are_refused_naming_the_key(tmp_path, key, value):
    error = refused(tmp_path, {f"listeners.https.ssl.{key}": value})
    assert f"listeners.https.ssl.{key}" in error.message and f"listeners.https.ssl.{key}" in error.errors


def test_ssl_protocol_caps_what_the_forwarding_client_offers(tmp_path):
    assert tuning(tmp_path, {"listeners.https.ssl.protocol": "TLSv1.2"}).client_maximum == "TLSv1_2"
    assert tuning(tmp_path, {"listeners.https.ssl.protocol": "TLS"}).client_maximum == "TLSv1_3"
    error = refused(tmp_path, {"listeners.https.ssl.protocol": "TLSv1.2",
                               "listeners.https.ssl.enabled.protocols": "TLSv1.3"})
    assert "below every enabled protocol" in error.message


def test_tls_1_2_suites_in_java_names_become_openssl_names_and_leave_tls_1_3_off(tmp_path):
    tuned = tuning(tmp_path, {"listeners.https.ssl.cipher.suites":
                              "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384, TLS_EMPTY_RENEGOTIATION_INFO_SCSV,"
                              "TLS_RSA_WITH_AES_128_GCM_SHA256"})
    assert tuned.openssl_ciphers == "ECDHE-RSA-AES256-GCM-SHA384:AES128-GCM-SHA256"
    assert tuned.versions == ("TLSv1_2", "TLSv1_2")  # as Java: TLS 1.3 has no listed suite


def test_tls_1_3_suites_are_taken_only_when_they_are_all_of_openssls(tmp_path):
    every = ",".join(openssl_tls13_suites())
    assert tuning(tmp_path, {"listeners.https.ssl.cipher.suites": every}).versions == ("TLSv1_3", "TLSv1_3")
    mixed = tuning(tmp_path, {"listeners.https.ssl.cipher.suites": every + ",TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"})
    assert mixed.versions == ("TLSv1_2", "TLSv1_3") and mixed.openssl_ciphers == "ECDHE-RSA-AES128-GCM-SHA256"
    error = refused(tmp_path, {"listeners.https.ssl.cipher.suites": "TLS_AES_256_GCM_SHA384"})
    assert "cannot be restricted" in error.message and "listeners.https.ssl.cipher.suites" in error.errors


def test_unknown_suites_and_suites_of_no_enabled_protocol_are_refused(tmp_path):
    assert "TLS_FOO_WITH_BAR" in refused(tmp_path, {"listeners.https.ssl.cipher.suites": "TLS_FOO_WITH_BAR"}).message
    error = refused(tmp_path, {"listeners.https.ssl.cipher.suites": "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
                               "listeners.https.ssl.enabled.protocols": "TLSv1.3"})
    assert "names no suite of any protocol" in error.message


def test_the_suite_table_covers_openssls_default_tls_1_2_suites_and_openssl_takes_each_name():
    defaults = {c["name"] for c in ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).get_ciphers()
                if c["protocol"] == "TLSv1.2"}
    assert defaults <= set(TLS12_SUITES.values())
    for native in TLS12_SUITES.values():
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.set_ciphers(native)
        assert [c["name"] for c in context.get_ciphers() if c["protocol"] != "TLSv1.3"] == [native]


def test_an_empty_endpoint_identification_algorithm_turns_the_hostname_check_off(tmp_path):
    assert not tuning(tmp_path, {"listeners.https.ssl.endpoint.identification.algorithm": ""}).check_hostname
    assert tuning(tmp_path, {"listeners.https.ssl.endpoint.identification.algorithm": "HTTPS"}).check_hostname
    error = refused(tmp_path, {"listeners.https.ssl.endpoint.identification.algorithm": "ldaps"})
    assert "listeners.https.ssl.endpoint.identification.algorithm" in error.errors


@pytest.mark.parametrize("key,default,other", [("keymanager.algorithm", "SunX509", "PKIX"),
                                               ("trustmanager.algorithm", "PKIX", "SunX509"),
                                               ("secure.random.implementation", "", "SHA1PRNG"),
                                               ("provider", "", "BC"),
                                               ("engine.factory.class", "", "com.example.Factory")])
def test_jvm_only_keys_are_accepted_at_the_jvm_default_and_refused_otherwise(tmp_path, key, default, other):
    assert tuning(tmp_path, {f"listeners.https.ssl.{key}": default}) == TlsTuning()
    error = refused(tmp_path, {f"listeners.https.ssl.{key}": other})
    assert f"listeners.https.ssl.{key}={other} cannot be honoured" in error.message


def test_bare_ssl_keys_configure_the_listener_when_no_prefixed_key_is_set(tmp_path):
    bare = {"listeners": "https://127.0.0.1:8443", "ssl.keystore.location": "/etc/server.pem"}
    path = tmp_path / "worker.yaml"
    path.write_text(yaml.safe_dump({**bare, "ssl.enabled.protocols": "TLSv1.3"}))
    tls = load_worker_config(path).rest_security.tls
    assert tls.keystore_location == "/etc/server.pem" and tls.tuning.versions == ("TLSv1_3", "TLSv1_3")
    error = refused(tmp_path, {"ssl.enabled.protocols": "TLSv1"}, bare)
    assert "ssl.enabled.protocols" in error.errors and "listeners.https." not in error.message


def test_a_bare_key_beside_prefixed_ones_is_refused_as_connect_would_ignore_it(tmp_path):
    error = refused(tmp_path, {"ssl.cipher.suites": "TLS_RSA_WITH_AES_128_GCM_SHA256"})
    assert "ssl.cipher.suites would be ignored" in error.message and "ssl.cipher.suites" in error.errors


def test_tuning_keys_without_an_https_listener_are_refused(tmp_path):
    error = refused(tmp_path, {"ssl.enabled.protocols": "TLSv1.3"}, {"listeners": "http://127.0.0.1:8083"})
    assert "no listener is https://" in error.message and "kafka.ssl.*" in error.message
