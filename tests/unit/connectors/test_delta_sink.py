"""The delta sink's configuration: what it accepts, what it refuses (naming the key), before anything runs."""

from __future__ import annotations

import pytest

from sparkcat import plugins
from sparkcat.connectors.delta_sink import DeltaSinkConnector, DeltaSinkSettings, DeltaSinkTask
from sparkcat.errors import ConfigError, ConnectorError
from sparkcat.config.validation import validate_connector_config
from sparkcat.spark.driver.handlers import handler_for
from sparkcat.spark.query_plan import QueryPlan

TABLE = {"table.path": "/tmp/nowhere/orders"}
KAFKA = {"name": "d", "connector.class": "delta", "topics": "orders", "key.converter": "org.apache.kafka.connect.storage.StringConverter"}


@pytest.mark.parametrize("name", ["delta", "delta-sink", "DeltaSinkConnector", "DeltaSink"])
def test_found_by_its_aliases_as_a_sink(name):
    cls = plugins.connector_class(name)
    assert cls is DeltaSinkConnector and plugins.connector_type(cls) == "sink"


def test_settings_parsed_with_defaults():
    s = DeltaSinkSettings.parse({**TABLE, "partition.columns": "day, region", "write.mode": "MERGE"})
    assert (s.table_path, s.table_name, s.partition_columns, s.schema_evolution, s.write_mode) == \
        ("/tmp/nowhere/orders", None, ("day", "region"), False, "merge")
    assert DeltaSinkSettings.parse({"table.name": "db.orders"}).write_mode == "append"
    assert DeltaSinkSettings.parse({**TABLE, "write.mode": "merge", "delete.enabled": "true"}).delete_enabled


@pytest.mark.parametrize("config, keys", [
    ({}, {"table.path", "table.name"}),
    ({**TABLE, "table.name": "db.orders"}, {"table.path", "table.name"}),
    ({**TABLE, "write.mode": "upsert"}, {"write.mode"}),
    ({**TABLE, "delete.enabled": "true"}, {"delete.enabled"}),  # deletes by key need write.mode=merge
])
def test_bad_table_or_mode_is_a_config_error_naming_the_key(config, keys):
    with pytest.raises(ConfigError) as e:
        DeltaSinkConnector().start(config)
    assert set(e.value.errors) == keys
    result = validate_connector_config({"connector.class": "delta", "topics": "t", **KAFKA,
                                        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
                                        **config})
    assert set(result.errors) == keys


def test_embedded_sink_errors_carry_the_sink_prefix():
    result = validate_connector_config({"name": "s", "connector.class": "increment", "increments": "1",
                                        "sink.connector.class": "delta", "sink.write.mode": "delete"})
    assert set(result.errors) == {"sink.table.path", "sink.table.name", "sink.write.mode"}


@pytest.mark.parametrize("extra, key", [
    ({}, "value.schema"),  # JsonConverter values (the default) need their fields
    ({"value.converter": "org.apache.kafka.connect.storage.StringConverter", "value.schema": "a INT"},
     "value.schema"),
    ({"value.converter": "io.confluent.connect.avro.AvroConverter"}, "value.converter"),
])
def test_kafka_fed_converters_it_cannot_honour_are_refused(extra, key):
    result = validate_connector_config({**KAFKA, **TABLE, **extra})
    assert key in result.errors


def test_kafka_fed_json_values_with_a_schema_are_accepted():
    config = {**KAFKA, **TABLE, "value.schema": "id BIGINT", "value.converter.schemas.enable": "false"}
    assert validate_connector_config(config).errors == {}


def test_tasks_max_gives_that_many_tasks_and_put_is_refused():
    connector = DeltaSinkConnector()
    connector.start({**TABLE, "name": "d"})
    assert [c["task.id"] for c in connector.task_configs(3)] == ["0", "1", "2"]
    with pytest.raises(ConnectorError):
        DeltaSinkTask().put([])


def test_the_runtime_refuses_a_bad_plan_before_the_query_starts():
    plan = QueryPlan(connector="d", connector_type="sink",
                     connector_class="sparkcat.connectors.delta_sink:DeltaSinkConnector",
                     task_class="sparkcat.connectors.delta_sink:DeltaSinkTask",
                     connector_config={**KAFKA, "table.name": "x", **TABLE}, task_configs=[{}], checkpoint_dir="/x")
    with pytest.raises(ConfigError) as e:
        handler_for(plan)
    assert {"table.path", "table.name"} <= set(e.value.errors)
