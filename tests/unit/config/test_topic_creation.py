"""KIP-158's keys as Connect 4.1 reads them: which group takes a topic, and what validation refuses, naming the key."""

from __future__ import annotations

import pytest

from sparkcat.config.topic_creation import topic_creation, topic_creation_errors
from sparkcat.config.validation import validate_connector_config
from sparkcat.config.worker import WorkerConfig, load_worker_config
from sparkcat.errors import ConfigError
from sparkcat.policy.input_policy import InputPolicy

DEFAULT = {"topic.creation.default.replication.factor": "1", "topic.creation.default.partitions": "2"}


def _groups(**extra: str) -> dict[str, str]:
    return {**DEFAULT, "topic.creation.groups": "compacted,big",
            "topic.creation.compacted.include": "orders.*,users",
            "topic.creation.compacted.cleanup.policy": "compact",
            "topic.creation.big.include": ".*",
            "topic.creation.big.exclude": "tmp-.*",
            "topic.creation.big.partitions": "12",
            "topic.creation.big.compression.type": "zstd", **extra}


def test_the_first_listed_group_whose_include_matches_and_exclude_does_not_takes_the_topic():
    creation = topic_creation(_groups())
    assert creation is not None
    orders = creation.group_for("orders-eu")
    assert (orders.name, orders.partitions, orders.replication_factor, orders.configs) == \
        ("compacted", 2, 1, (("cleanup.policy", "compact"),))  # unset partitions: the default group's
    assert creation.group_for("users").name == "compacted"
    assert creation.group_for("usersx").name == "big"  # include matches whole names only, as Java's matches()
    big = creation.group_for("clicks")
    assert (big.name, big.partitions, big.configs) == ("big", 12, (("compression.type", "zstd"),))
    default = creation.group_for("tmp-1")  # excluded by big, included by no other group: the default group
    assert (default.name, default.partitions, default.replication_factor, default.configs) == ("default", 2, 1, ())


def test_a_group_without_include_takes_no_topic_and_minus_one_is_the_brokers_default():
    creation = topic_creation({"topic.creation.default.replication.factor": "-1",
                               "topic.creation.default.partitions": "-1", "topic.creation.groups": "none",
                               "topic.creation.none.partitions": "5"})
    assert creation is not None and creation.group_for("anything").name == "default"
    assert creation.default.describe("t") == "{name=t, numPartitions=default, replicationFactor=default, configs={}}"


def test_no_key_or_a_worker_with_creation_off_creates_nothing():
    assert topic_creation({"topic": "t"}) is None
    assert topic_creation(DEFAULT, enabled=False) is None


def test_both_default_keys_are_required_once_any_topic_creation_key_is_set():
    errors = topic_creation_errors({"topic.creation.default.partitions": "3"})
    assert errors == {"topic.creation.default.replication.factor": [
        'Missing required configuration "topic.creation.default.replication.factor" which has no default value.']}
    with pytest.raises(ConfigError, match="topic.creation.default.replication.factor"):
        topic_creation({"topic.creation.default.partitions": "3"})


@pytest.mark.parametrize("key, value, message", [
    ("topic.creation.default.partitions", "0",
     "Invalid value 0 for configuration topic.creation.default.partitions: Value must be -1 or at least 1"),
    ("topic.creation.default.replication.factor", "three",
     "Invalid value three for configuration topic.creation.default.replication.factor: Not a number of type INT"),
    ("topic.creation.big.partitions", "-2",
     "Invalid value -2 for configuration topic.creation.big.partitions: Value must be -1 or at least 1"),
    ("topic.creation.big.include", "orders(",
     "Invalid value orders( for configuration topic.creation.big.include: 'orders(' is not a valid regular"),
])
def test_bad_values_are_refused_with_connects_wording_naming_the_key(key, value, message):
    errors = topic_creation_errors({**DEFAULT, "topic.creation.groups": "big", key: value})
    assert list(errors) == [key] and errors[key][0].startswith(message)


def test_keys_connect_would_ignore_are_refused_naming_them():
    errors = topic_creation_errors({**DEFAULT, "topic.creation.groups": "big",
                                    "topic.creation.bigg.partitions": "3",   # a group not listed
                                    "topic.creation.default.include": "x.*"})  # ignored by Connect
    assert set(errors) == {"topic.creation.bigg.partitions", "topic.creation.default.include"}
    assert "'bigg', which topic.creation.groups does not list" in errors["topic.creation.bigg.partitions"][0]
    off = topic_creation_errors(DEFAULT, enabled=False)
    assert set(off) == set(DEFAULT) and "topic.creation.enable=false on this worker" in off[
        "topic.creation.default.partitions"][0]


def _increment(**extra: str) -> dict[str, str]:
    return {"name": "seq", "connector.class": "increment", "increments": "1", **extra}


def test_validation_accepts_a_source_connectors_groups_and_refuses_bad_ones_per_key():
    assert validate_connector_config(_increment(**_groups())).errors == {}
    result = validate_connector_config(_increment(**{"topic.creation.default.partitions": "0"}))
    assert set(result.errors) == {"topic.creation.default.partitions", "topic.creation.default.replication.factor"}
    assert result.error_count == 2


def test_validation_refuses_topic_creation_where_no_topic_is_created():
    off = InputPolicy.of(WorkerConfig(topic_creation_enable=False))
    assert set(validate_connector_config(_increment(**DEFAULT), off).errors) == set(DEFAULT)
    sink = validate_connector_config({"name": "s", "connector.class": "file-sink", "file": "/tmp/x", "topics": "t",
                                      **DEFAULT}, InputPolicy.build(["sparkcat.connectors"], ["/tmp"], {}, "state"))
    assert "apply to source connectors only" in sink.errors["topic.creation.default.partitions"][0]
    embedded = validate_connector_config(_increment(**DEFAULT, **{"sink.connector.class": "file-sink",
                                                                   "sink.file": "/tmp/x"}))
    assert "creates no topics" in embedded.errors["topic.creation.default.partitions"][0]


def test_worker_keys_take_connects_names_and_defaults(tmp_path):
    assert (WorkerConfig().topic_creation_enable, WorkerConfig().topic_tracking_enable,
            WorkerConfig().topic_tracking_allow_reset) == (True, True, True)
    path = tmp_path / "worker.yaml"
    path.write_text("topic.creation.enable: false\ntopic.tracking.allow.reset: false\n")
    worker = load_worker_config(path)
    assert (worker.topic_creation_enable, worker.topic_tracking_enable, worker.topic_tracking_allow_reset) == \
        (False, True, False)
