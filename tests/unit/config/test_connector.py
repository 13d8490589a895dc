"""The framework's connector keys (Connect's ConnectorConfig, SourceConnectorConfig, SinkConnectorConfig)."""

from __future__ import annotations

import pytest

from sparkcat.api.config import NO_DEFAULT, ConfigDef, Type, Width
from sparkcat.errors import ConfigError
from sparkcat.config.connector import COMMON_CONNECTOR_CONFIG, SINK_CONNECTOR_CONFIG, SOURCE_CONNECTOR_CONFIG


def test_shared_connector_defs_cannot_be_mutated() -> None:
    with pytest.raises(TypeError):
        COMMON_CONNECTOR_CONFIG.define("oops", Type.INT, 1)
    extended = COMMON_CONNECTOR_CONFIG.merge(ConfigDef().define("my.key", Type.INT, 1))
    assert "my.key" in extended and "my.key" not in COMMON_CONNECTOR_CONFIG



def test_common_connector_config_defaults() -> None:
    parsed = COMMON_CONNECTOR_CONFIG.parse({"name": "c", "connector.class": "FileStreamSource"})
    assert parsed["tasks.max"] == 1
    assert parsed["key.converter"] is None
    assert parsed["transforms"] == [] and parsed["predicates"] == []
    assert parsed["errors.tolerance"] == "none"
    assert parsed["errors.retry.timeout"] == 0
    assert parsed["errors.retry.delay.max.ms"] == 60000
    assert parsed["errors.log.enable"] is False
    assert parsed["batch.max.records"] == 100000
    assert parsed["trigger.interval.ms"] == 1000
    assert COMMON_CONNECTOR_CONFIG.groups() == ["Common", "Transforms", "Predicates", "Error Handling", "Spark"]
    assert COMMON_CONNECTOR_CONFIG.keys["connector.class"].width is Width.LONG


def test_common_connector_config_reports_all_problems() -> None:
    with pytest.raises(ConfigError) as info:
        COMMON_CONNECTOR_CONFIG.parse(
            {"name": "", "tasks.max": "0", "errors.tolerance": "some", "transforms": "a,a", "batch.max.records": "0"}
        )
    assert set(info.value.errors) == {
        "name",
        "connector.class",
        "tasks.max",
        "errors.tolerance",
        "transforms",
        "batch.max.records",
    }
    assert info.value.errors["transforms"] == [
        "Invalid value [a, a] for configuration transforms: Duplicate alias provided."
    ]


def test_source_and_sink_connector_configs() -> None:
    base = {"name": "c", "connector.class": "X"}
    source = SOURCE_CONNECTOR_CONFIG.parse(base)
    assert source["exactly.once.support"] == "requested"
    assert source["transaction.boundary"] == "poll"
    assert source["offsets.storage.topic"] is None
    assert source["topic.creation.groups"] == []
    assert SOURCE_CONNECTOR_CONFIG.parse({**base, "exactly.once.support": "REQUIRED"})["exactly.once.support"] == "REQUIRED"
    assert SOURCE_CONNECTOR_CONFIG.groups()[-3:] == ["Topic Creation", "Exactly Once Support", "offsets.topic"]

    sink = SINK_CONNECTOR_CONFIG.parse({**base, "topics": "a,b"})
    assert sink["topics"] == ["a", "b"]
    assert sink["topics.regex"] == ""
    assert sink["errors.deadletterqueue.topic.replication.factor"] == 3
    assert sink["errors.deadletterqueue.context.headers.enable"] is False
    assert "topics" not in SOURCE_CONNECTOR_CONFIG and "transaction.boundary" not in SINK_CONNECTOR_CONFIG
    assert sink["exactly.once.support"] == "requested"  # a sparkcat extension for sinks (Connect: sources only)
    with pytest.raises(ConfigError) as info:
        SINK_CONNECTOR_CONFIG.parse({**base, "topics.regex": "("})
    assert "topics.regex" in info.value.errors


def test_shared_connector_defs_pickle_for_spark_executors() -> None:
    import pickle

    for shared in (COMMON_CONNECTOR_CONFIG, SOURCE_CONNECTOR_CONFIG, SINK_CONNECTOR_CONFIG):
        copy = pickle.loads(pickle.dumps(shared))
        assert copy.names() == shared.names() and copy.groups() == shared.groups()
        assert copy.keys["name"].default is NO_DEFAULT


def test_framework_settings_are_typed_once_with_the_configdefs_defaults():
    import pytest

    from sparkcat.errors import ConfigError
    from sparkcat.config.connector import ConnectorSettings, connector_settings
    assert connector_settings({"connector.class": "increment"}) == ConnectorSettings(
        1, 100_000, 1000, 0, 60_000, False, False, False, False, "poll", None)
    assert connector_settings({"tasks.max": " 4", "batch.max.records": "50", "trigger.interval.ms": "0",
                               "errors.retry.timeout": "-1", "errors.retry.delay.max.ms": "500",
                               "errors.tolerance": "all", "errors.log.enable": "true",
                               "errors.log.include.messages": "true", "exactly.once.support": "REQUIRED",
                               "transaction.boundary": "Interval", "transaction.boundary.interval.ms": "2500"}) == \
        ConnectorSettings(4, 50, 0, -1, 500, True, True, True, True, "interval", 2500)
    for key, bad in (("errors.log.enable", "maybe"), ("errors.tolerance", "some"), ("transaction.boundary", "x")):
        with pytest.raises(ConfigError) as raised:
            connector_settings({key: bad})
        assert key in raised.value.errors
    with pytest.raises(ConfigError) as raised:
        connector_settings({"tasks.max": "zero"})
    assert "tasks.max" in raised.value.errors
