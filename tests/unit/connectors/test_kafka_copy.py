"""The kafka copy's native write: the Java producer's options and the exactly-once writer's (no Spark, no broker)."""

from __future__ import annotations

import json

import pytest

from sparkcat.api.native import NativeWriteContext
from sparkcat.connectors.kafka_copy import EOS_FORMAT, INTERCEPTOR, _transactional, writer_options
from sparkcat.errors import ConfigError


def test_options_layering_and_the_interceptor():
    opts = writer_options({"producer.override.linger.ms": "7", "producer.override.interceptor.classes": "a.B"},
                          "w:9092", {"producer.acks": "1", "security.protocol": "SSL", "consumer.fetch.min.bytes": "9",
                                     "log_level": "3", "admin.request.timeout.ms": "5"})
    assert opts["kafka.bootstrap.servers"] == "w:9092"
    assert opts["kafka.linger.ms"] == "7"                   # override wins
    assert opts["kafka.acks"] == "1"                        # worker producer setting beats the default
    assert opts["kafka.security.protocol"] == "SSL"         # worker client setting applies on its own cluster
    assert opts["kafka.compression.type"] == "lz4"          # copy default
    assert not {"kafka.fetch.min.bytes", "kafka.log_level", "kafka.request.timeout.ms"} & set(opts)
    assert opts["kafka.interceptor.classes"] == f"a.B,{INTERCEPTOR}"  # the user's first, ours last
    other = writer_options({"target.bootstrap.servers": "t:9092"}, "w:9092", {"security.protocol": "SSL"})
    assert other["kafka.bootstrap.servers"] == "t:9092" and "kafka.security.protocol" not in other
    assert other["kafka.interceptor.classes"] == INTERCEPTOR


def test_options_refuse_what_the_writer_cannot_honour():
    with pytest.raises(ConfigError, match="value.serializer"):
        writer_options({"producer.override.value.serializer": "x"}, "w:9092", {})
    with pytest.raises(ConfigError):
        writer_options({}, "", {})


def context(**fields) -> NativeWriteContext:
    base = dict(connector='orders "eu"', config={}, bootstrap_servers="w:9092", kafka_config={},
                task_of={("t", 0): 0}, group_id="g", offsets_topic="g-offsets", lease_key="sparkcat-leader.g",
                replay_through_epoch=7)
    return NativeWriteContext(**{**base, **fields})


def test_the_exactly_once_write_names_its_transactions_positions_and_lease():
    options = writer_options({"producer.override.interceptor.classes": "com.acme.Audit",
                              "producer.override.buffer.memory": "1048576"}, "w:9092", {})
    native = _transactional(context(), "w:9092", "${topic}.copy", {"t": 1}, options)
    assert (native.format, native.transactional) == (EOS_FORMAT, True)
    opts = dict(native.options)
    assert opts["kafka.interceptor.classes"] == "com.acme.Audit"  # the timestamp interceptor is not needed
    assert opts["kafka.buffer.memory"] == "1048576"              # Java producer names, as the at-least-once copy
    assert json.loads(opts["sparkcat.connector.json"]) == 'orders "eu"'
    assert (opts["sparkcat.group.id"], opts["sparkcat.offsets.topic"], opts["sparkcat.lease.key"],
            opts["sparkcat.replay.through.epoch"]) == ("g", "g-offsets", "sparkcat-leader.g", "7")


def test_the_exactly_once_write_needs_the_workers_cluster_and_offsets_topic():
    with pytest.raises(ConfigError, match="worker's own Kafka cluster"):
        _transactional(context(), "other:9092", "${topic}.copy", {}, {})
    with pytest.raises(ConfigError, match="worker's own Kafka cluster"):
        _transactional(context(offsets_topic=""), "w:9092", "${topic}.copy", {}, {})
