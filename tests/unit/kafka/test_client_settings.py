"""One owner of Kafka client settings: role prefixes, layering, and the librdkafka and Java dialects
(sparkcat/kafka/client_settings.py, sparkcat/kafka/client_dialects.py)."""

from __future__ import annotations

import pytest

from sparkcat.kafka.client_dialects import PLAIN_MODULE, SCRAM_MODULE, parse_jaas, to_java, to_librdkafka
from sparkcat.kafka.client_settings import (
    ClientKind,
    ClientSettingsError,
    admin_settings,
    connection_settings,
    connector_overrides,
    consumer_settings,
    producer_settings,
    role_settings,
    spark_source_options,
    spark_writer_options,
)

#: A worker's kafka.* settings (prefix stripped) with every role prefix, in Java's names as a Connect worker file has.
WORKER = {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
          "sasl.jaas.config": f'{PLAIN_MODULE} required username="svc" password="s3cr\\"et";',
          "producer.acks": "all", "consumer.fetch.min.bytes": "1", "admin.request.timeout.ms": "20000"}


def test_a_role_prefixed_key_goes_only_to_its_kind_of_client():
    worker = {"linger.ms": "1", "producer.acks": "all", "consumer.fetch.min.bytes": "1", "admin.retries": "3"}
    assert role_settings(worker, ClientKind.PRODUCER) == {"linger.ms": "1", "acks": "all"}
    assert role_settings(worker, ClientKind.CONSUMER) == {"linger.ms": "1", "fetch.min.bytes": "1"}
    assert role_settings(worker, ClientKind.ADMIN) == {"linger.ms": "1", "retries": "3"}


def test_the_prefixed_key_wins_over_the_same_key_unprefixed_whatever_their_order():
    for worker in ({"acks": "1", "producer.acks": "all"}, {"producer.acks": "all", "acks": "1"}):
        assert role_settings(worker, ClientKind.PRODUCER)["acks"] == "all"
        assert role_settings(worker, ClientKind.CONSUMER)["acks"] == "1"


def test_defaults_then_worker_then_overrides_and_the_bootstrap_servers_always_the_callers():
    conf = producer_settings("b:1", {"linger.ms": "5", "producer.acks": "1", "bootstrap.servers": "elsewhere:9"},
                             {"acks": "0"}, {"acks": "all", "linger.ms": "50", "batch.size": "100", "x": True})
    assert conf == {"acks": "0", "linger.ms": "5", "batch.size": "100", "x": True, "bootstrap.servers": "b:1"}


def test_connector_overrides_of_each_kind():
    config = {"producer.override.acks": "1", "consumer.override.max.poll.records": "5",
              "admin.override.request.timeout.ms": "9", "producer.acks": "not an override"}
    assert connector_overrides(config, ClientKind.PRODUCER) == {"acks": "1"}
    assert connector_overrides(config, ClientKind.CONSUMER) == {"max.poll.records": "5"}
    assert connector_overrides(config, ClientKind.ADMIN) == {"request.timeout.ms": "9"}


def test_librdkafka_clients_get_their_share_in_librdkafka_names():
    """The admin client of the stores and of leader election no longer sees producer.acks (issue 27)."""
    expected_security = {"security.protocol": "SASL_SSL", "sasl.mechanisms": "PLAIN", "sasl.username": "svc",
                         "sasl.password": 's3cr"et', "bootstrap.servers": "b:1"}
    assert admin_settings("b:1", WORKER) == {**expected_security, "request.timeout.ms": "20000"}
    assert consumer_settings("b:1", WORKER) == {**expected_security, "fetch.min.bytes": "1"}
    assert producer_settings("b:1", WORKER) == {**expected_security, "acks": "all"}


def test_librdkafka_accepts_every_clients_settings_of_a_worker_with_role_prefixes_and_java_names():
    """Built with librdkafka itself, which refuses an unknown name ("No such configuration property")."""
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient
    worker = {**WORKER, "security.protocol": "PLAINTEXT", "ssl.truststore.type": "PEM",
              "ssl.truststore.location": "/nowhere/ca.pem", "ssl.endpoint.identification.algorithm": "",
              "ssl.enabled.protocols": "TLSv1.3", "consumer.isolation.level": "read_committed"}
    quiet = {"log_level": 0}
    AdminClient({**admin_settings("127.0.0.1:9", worker), **quiet})
    Producer({**producer_settings("127.0.0.1:9", worker), **quiet}).flush(0)
    Consumer({**consumer_settings("127.0.0.1:9", worker), **quiet, "group.id": "g"}).close()


def test_spark_source_options_are_the_consumers_share_in_java_names_without_what_spark_sets():
    worker = {"security.protocol": "SSL", "consumer.fetch.min.bytes": "10", "producer.linger.ms": "5",
              "admin.retries": "3", "auto.offset.reset": "latest", "group.id": "g", "fetch.wait.max.ms": "10"}
    options = spark_source_options("h:1", worker, {"fetch.min.bytes": "20"}, {"isolation.level": "read_committed"})
    assert options == {"kafka.bootstrap.servers": "h:1", "kafka.security.protocol": "SSL",
                       "kafka.fetch.min.bytes": "20", "kafka.isolation.level": "read_committed"}


def test_spark_writer_options_are_the_producers_share_in_java_names():
    worker = {"sasl.mechanisms": "SCRAM-SHA-256", "sasl.username": "u", "sasl.password": "p",
              "ssl.ca.location": "/ca.pem", "producer.acks": "all", "consumer.fetch.min.bytes": "1",
              "log_level": "3", "key.serializer": "x"}
    assert spark_writer_options("h:1", worker) == {
        "kafka.acks": "all", "kafka.bootstrap.servers": "h:1", "kafka.sasl.mechanism": "SCRAM-SHA-256",
        "kafka.sasl.jaas.config": f'{SCRAM_MODULE} required username="u" password="p";',
        "kafka.ssl.truststore.location": "/ca.pem", "kafka.ssl.truststore.type": "PEM"}


def test_a_name_the_target_dialect_spells_itself_wins_over_a_translated_one():
    assert to_librdkafka({"sasl.mechanism": "PLAIN", "sasl.mechanisms": "SCRAM-SHA-512"}) == {
        "sasl.mechanisms": "SCRAM-SHA-512"}
    jaas = f'{PLAIN_MODULE} required username="java" password="j";'
    assert to_java({"sasl.mechanism": "PLAIN", "sasl.jaas.config": jaas, "sasl.username": "rd"}) == {
        "sasl.mechanism": "PLAIN", "sasl.jaas.config": jaas}


def test_pem_key_stores_and_endpoint_identification_both_ways():
    java = {"ssl.keystore.type": "PEM", "ssl.keystore.location": "/both.pem", "ssl.key.password": "k",
            "ssl.endpoint.identification.algorithm": ""}
    librdkafka = {"ssl.certificate.location": "/both.pem", "ssl.key.location": "/both.pem", "ssl.key.password": "k",
                  "ssl.endpoint.identification.algorithm": "none"}
    assert to_librdkafka(java) == librdkafka
    assert to_java(librdkafka) == {"ssl.key.password": "k", "ssl.endpoint.identification.algorithm": "",
                                   "ssl.keystore.location": "/both.pem", "ssl.keystore.type": "PEM"}
    inline = to_librdkafka({"ssl.truststore.certificates": "CA", "ssl.keystore.certificate.chain": "C",
                            "ssl.keystore.key": "K", "ssl.keystore.type": "PEM"})
    assert inline == {"ssl.ca.pem": "CA", "ssl.certificate.pem": "C", "ssl.key.pem": "K"}
    assert to_java({"ssl.keystore.location": "/k.p12", "ssl.keystore.password": "p"}) == {
        "ssl.keystore.location": "/k.p12", "ssl.keystore.password": "p"}  # the same names for PKCS#12


def test_what_one_client_cannot_take_is_refused_naming_the_key():
    with pytest.raises(ClientSettingsError, match="JKS trust store") as e:
        to_librdkafka({"ssl.truststore.location": "/ts.jks", "ssl.truststore.password": "p"})
    assert list(e.value.errors) == ["ssl.truststore.location"]
    with pytest.raises(ClientSettingsError, match="one file") as e:
        to_java({"ssl.certificate.location": "/c.pem", "ssl.key.location": "/k.pem"})
    assert list(e.value.errors) == ["ssl.key.location"]
    with pytest.raises(ClientSettingsError, match="OAuthBearerLoginModule"):
        to_librdkafka({"sasl.jaas.config": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule "
                                           "required;"})
    with pytest.raises(ClientSettingsError, match="sasl.jaas.config is not") as e:
        parse_jaas("username=u")
    assert e.value.errors == {"sasl.jaas.config": ["not a JAAS login module entry"]}


def test_kerberos_keytab_and_principal_both_ways():
    krb = 'com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true keyTab="/k.tab" principal="me@R";'
    assert to_librdkafka({"sasl.jaas.config": krb, "sasl.kerberos.service.name": "kafka"}) == {
        "sasl.kerberos.service.name": "kafka", "sasl.kerberos.keytab": "/k.tab", "sasl.kerberos.principal": "me@R"}
    back = to_java({"sasl.kerberos.keytab": "/k.tab", "sasl.kerberos.principal": "me@R"})
    assert parse_jaas(back["sasl.jaas.config"])[1] == {"useKeyTab": "true", "storeKey": "true", "keyTab": "/k.tab",
                                                       "principal": "me@R"}


def test_connection_settings_of_an_override_reach_another_clusters_admin_client():
    overrides = connector_overrides({"producer.override.security.protocol": "SASL_SSL",
                                     "producer.override.sasl.mechanism": "PLAIN",
                                     "producer.override.linger.ms": "5"}, ClientKind.PRODUCER)
    assert admin_settings("t:1", {}, connection_settings(overrides)) == {
        "security.protocol": "SASL_SSL", "sasl.mechanisms": "PLAIN", "bootstrap.servers": "t:1"}
