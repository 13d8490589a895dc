"""JSON Schema round trip through the registry: a source connector writes with JsonSchemaConverter, file sinks read it.

Everything is real: the driver on Spark, an Apache Kafka broker, Apicurio Registry's Confluent-compatible API as
the Schema Registry. The topic is read as a third party would: Confluent's framing (magic byte 0, schema id) by
hand, the schema from the registry's REST API.
"""

from __future__ import annotations

import json
import struct

import pytest

from tests.integration.runtime.test_driver import file_lines, kafka_worker, start_driver, status_of
from tests.kafka_helpers import read_topic, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

JSON_SCHEMA = "io.confluent.connect.json.JsonSchemaConverter"
T = "org.apache.kafka.connect.transforms."


def framed_values(bootstrap: str, topic: str) -> list[tuple[int, dict]]:
    """The topic's (schema id, JSON value) pairs by position."""
    out = []
    for _, _, _, value in read_topic(bootstrap, topic):
        if value is not None:
            assert value[0] == 0, "Confluent's magic byte"
            out.append((struct.unpack(">I", value[1:5])[0], json.loads(value[5:])))
    return sorted(out, key=lambda p: p[1]["position"])


def test_json_schema_round_trip_through_the_registry(spark, broker, schema_registry, tmp_path, unique_name):
    prefix = f"{unique_name}-jsonschema_"
    topic = prefix + "2"
    converter = {"value.converter": JSON_SCHEMA, "value.converter.schema.registry.url": schema_registry.url}
    driver = start_driver(spark, kafka_worker(broker, tmp_path, unique_name))
    plain, routed = tmp_path / "plain.txt", tmp_path / "routed.txt"
    try:
        driver.herder.put_connector_config("inc", {
            "connector.class": "increment", "increments": "2", "topic.prefix": prefix, "records.per.poll": "10",
            "trigger.interval.ms": "300", **converter})
        wait_until(lambda: len(framed_values(broker.bootstrap, topic)) >= 20, timeout_s=240,
                   message="JSON Schema records from the increment source")
        driver.herder.delete_connector("inc")
        wait_until(lambda: "inc" not in driver.herder.connectors(), message="the source connector gone")

        latest = schema_registry.get(f"/subjects/{topic}-value/versions/latest")
        assert latest.get("schemaType") == "JSON"
        schema = json.loads(latest["schema"])
        assert schema["type"] == "object" and list(schema["properties"]) == ["position", "value", "increment"]
        assert schema["properties"]["position"]["connect.index"] == 0
        written = framed_values(broker.bootstrap, topic)
        assert {schema_id for schema_id, _ in written} == {latest["id"]}
        values = [v for _, v in written]
        assert values == [{"position": p, "value": 2 * p, "increment": 2} for p in range(1, len(values) + 1)]

        driver.herder.put_connector_config("plain", {
            "connector.class": "file-sink", "file": str(plain), "topics": topic, "trigger.interval.ms": "300",
            **converter})
        driver.herder.put_connector_config("routed", {
            "connector.class": "file-sink", "file": str(routed), "topics": topic, "trigger.interval.ms": "300",
            **converter, "transforms": "route", "transforms.route.type": T + "RegexRouter",
            "transforms.route.regex": "(.*)_2", "transforms.route.replacement": "$1_copy"})

        def settled() -> list[dict] | None:
            now = [v for _, v in framed_values(broker.bootstrap, topic)]
            outputs = [sorted((json.loads(line) for line in file_lines(out)), key=lambda v: v["position"])
                       for out in (plain, routed)]
            return now if all(len(o) >= len(now) for o in outputs) else None
        final = wait_until(settled, timeout_s=240, message=lambda: f"the sinks: {status_of(driver, 'plain')}, "
                           f"{status_of(driver, 'routed')}")
        assert final == [{"position": p, "value": 2 * p, "increment": 2} for p in range(1, len(final) + 1)]
        for out in (plain, routed):
            lines = sorted((json.loads(line) for line in file_lines(out)), key=lambda v: v["position"])
            assert lines == final, out.name
        assert [t["state"] for t in status_of(driver, "plain")["tasks"]] == ["RUNNING"]
    finally:
        driver.stop()


def test_json_schema_without_its_registry_url_is_refused_naming_the_key(spark, broker, tmp_path, unique_name):
    from sparkcat.errors import ConfigError

    driver = start_driver(spark, kafka_worker(broker, tmp_path, unique_name))
    try:
        with pytest.raises(ConfigError) as info:
            driver.herder.put_connector_config("inc", {
                "connector.class": "increment", "increments": "1", "value.converter": JSON_SCHEMA})
        assert list(info.value.errors) == ["value.converter.schema.registry.url"]
        assert "inc" not in driver.herder.connectors()
    finally:
        driver.stop()
