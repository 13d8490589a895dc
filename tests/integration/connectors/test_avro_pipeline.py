"""Avro round trip through the registry: a source connector writes Avro with AvroConverter, a file sink reads it back.

Everything is real: the driver on Spark, an Apache Kafka broker, Apicurio Registry's Confluent-compatible
API as the Schema Registry, and confluent-kafka's AvroDeserializer as a third-party reader of the topic.
"""

from __future__ import annotations

import json

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext

from sparkcat.errors import ConfigError
from tests.integration.runtime.test_driver import file_lines, kafka_worker, start_driver, status_of
from tests.kafka_helpers import read_topic, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

AVRO = "io.confluent.connect.avro.AvroConverter"
T = "org.apache.kafka.connect.transforms."


def avro_values(bootstrap: str, registry_url: str, topic: str) -> list[dict]:
    """The topic's values as confluent-kafka's AvroDeserializer reads them, by position."""
    reader = AvroDeserializer(SchemaRegistryClient({"url": registry_url}))
    ctx = SerializationContext(topic, MessageField.VALUE)
    values = [reader(v, ctx) for _, _, _, v in read_topic(bootstrap, topic) if v is not None]
    return sorted(values, key=lambda v: v["position"])


def table_rows(postgres, database: str) -> list[dict]:
    """The jdbc sink's table by position (empty until the sink created it)."""
    import psycopg

    with postgres.connect(database) as conn:
        try:
            cur = conn.execute("SELECT position, value, increment FROM avro_increments ORDER BY position")
        except psycopg.errors.UndefinedTable:
            return []
        return [dict(zip(("position", "value", "increment"), r)) for r in cur.fetchall()]


def test_avro_round_trip_through_the_registry(spark, broker, schema_registry, postgres, pg_database, tmp_path,
                                              unique_name):
    prefix = f"{unique_name}-avro_"
    topic = prefix + "3"
    avro = {"value.converter": AVRO, "value.converter.schema.registry.url": schema_registry.url}
    driver = start_driver(spark, kafka_worker(broker, tmp_path, unique_name))
    plain, routed = tmp_path / "plain.txt", tmp_path / "routed.txt"
    try:
        driver.herder.put_connector_config("inc", {
            "connector.class": "increment", "increments": "3", "topic.prefix": prefix, "records.per.poll": "10",
            "trigger.interval.ms": "300", **avro})
        wait_until(lambda: len(avro_values(broker.bootstrap, schema_registry.url, topic)) >= 20, timeout_s=240,
                   message="Avro records from the increment source")
        driver.herder.delete_connector("inc")
        wait_until(lambda: "inc" not in driver.herder.connectors(), message="the source connector gone")

        values = avro_values(broker.bootstrap, schema_registry.url, topic)
        assert values == [{"position": p, "value": 3 * p, "increment": 3} for p in range(1, len(values) + 1)]
        assert f"{topic}-value" in schema_registry.get("/subjects")
        latest = schema_registry.get(f"/subjects/{topic}-value/versions/latest")
        schema = json.loads(latest["schema"])
        assert (schema["type"], schema["name"]) == ("record", "ConnectDefault")
        assert [f["name"] for f in schema["fields"]] == ["position", "value", "increment"]

        driver.herder.put_connector_config("plain", {
            "connector.class": "file-sink", "file": str(plain), "topics": topic, "trigger.interval.ms": "300",
            **avro})
        driver.herder.put_connector_config("routed", {
            "connector.class": "file-sink", "file": str(routed), "topics": topic, "trigger.interval.ms": "300",
            **avro, "transforms": "route", "transforms.route.type": T + "RegexRouter",
            "transforms.route.regex": "(.*)_3", "transforms.route.replacement": "$1_copy"})
        driver.herder.put_connector_config("table", {
            "connector.class": "jdbc-sink", "topics": topic, **postgres.connection_config(pg_database),
            "auto.create": "true", "table.name.format": "avro_increments", "trigger.interval.ms": "300", **avro})
        # The source's last transaction may commit after its deletion returned (as in Connect, tasks stop
        # after the DELETE): each sink must hold exactly what the topic holds once it settled.
        def settled() -> list[dict] | None:
            now = avro_values(broker.bootstrap, schema_registry.url, topic)
            outputs = [sorted((json.loads(line) for line in file_lines(out)), key=lambda v: v["position"])
                       for out in (plain, routed)] + [table_rows(postgres, pg_database)]
            return now if all(len(o) >= len(now) for o in outputs) else None
        final = wait_until(settled, timeout_s=240, message=lambda: f"the sinks: {status_of(driver, 'plain')}, "
                           f"{status_of(driver, 'routed')}, {status_of(driver, 'table')}")
        assert final == [{"position": p, "value": 3 * p, "increment": 3} for p in range(1, len(final) + 1)]
        for out in (plain, routed):
            lines = sorted((json.loads(line) for line in file_lines(out)), key=lambda v: v["position"])
            assert lines == final, out.name
        assert table_rows(postgres, pg_database) == final
        assert [t["state"] for t in status_of(driver, "plain")["tasks"]] == ["RUNNING"]
    finally:
        driver.stop()


def test_avro_without_its_registry_url_is_refused_naming_the_key(spark, broker, tmp_path, unique_name):
    driver = start_driver(spark, kafka_worker(broker, tmp_path, unique_name))
    try:
        with pytest.raises(ConfigError) as info:
            driver.herder.put_connector_config("inc", {
                "connector.class": "increment", "increments": "1", "value.converter": AVRO})
        assert list(info.value.errors) == ["value.converter.schema.registry.url"]
        assert "needs value.converter.schema.registry.url" in str(info.value)
        assert "inc" not in driver.herder.connectors()
    finally:
        driver.stop()
