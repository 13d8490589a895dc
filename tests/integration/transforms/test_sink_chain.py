"""Transforms on sink connectors, end to end: a real broker, the driver and a file sink.

The sink writes the transformed records (routed topic, inserted and excluded fields, a record a
Filter dropped left out), while the positions it commits are the ORIGINAL topic-partition offsets,
as Connect commits them (KIP-793's originalTopic/originalKafkaPartition/originalKafkaOffset).
"""

from __future__ import annotations

import json

import pytest
from confluent_kafka import Producer

from tests.integration.runtime.test_driver import file_lines, kafka_worker, start_driver, status_of
from tests.kafka_helpers import create_topic, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

T = "org.apache.kafka.connect.transforms."
STRING_KEYS = {"key.converter": "org.apache.kafka.connect.storage.StringConverter"}
SCHEMA = {"type": "struct", "optional": False, "fields": [
    {"field": "id", "type": "int32", "optional": False}, {"field": "name", "type": "string", "optional": True}]}


def produce(bootstrap: str, topic: str, values: list[bytes], skip: int | None = None) -> None:
    create_topic(bootstrap, topic)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i, value in enumerate(values):
        headers = [("skip", b"1")] if i == skip else []
        producer.produce(topic, value, f"k{i}".encode(), headers=headers, timestamp=1_700_000_000_000 + i)
    assert producer.flush(30) == 0


def test_sink_chain_writes_transformed_records_and_commits_original_offsets(spark, broker, tmp_path, unique_name):
    orders, typed = f"{unique_name}-orders", f"{unique_name}-typed"
    produce(broker.bootstrap, orders,
            [json.dumps({"id": i, "name": f"n{i}", "secret": "s"}).encode() for i in range(4)], skip=2)
    produce(broker.bootstrap, typed,
            [json.dumps({"schema": SCHEMA, "payload": {"id": i, "name": f"t{i}"}}).encode() for i in range(3)])
    driver = start_driver(spark, kafka_worker(broker, tmp_path, unique_name))
    copy, ids = tmp_path / "copy.txt", tmp_path / "ids.txt"
    try:
        driver.herder.put_connector_config("copy", {
            "connector.class": "file-sink", "file": str(copy), "topics": orders, "trigger.interval.ms": "300",
            **STRING_KEYS, "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter.schemas.enable": "false",
            "transforms": "skip,route,insert,drop",
            "transforms.skip.type": T + "Filter", "transforms.skip.predicate": "marked",
            "transforms.route.type": T + "RegexRouter", "transforms.route.regex": "(.*)-orders",
            "transforms.route.replacement": "$1-copied",
            "transforms.insert.type": T + "InsertField$Value", "transforms.insert.topic.field": "topic",
            "transforms.insert.offset.field": "offset", "transforms.insert.partition.field": "partition",
            "transforms.drop.type": T + "ReplaceField$Value", "transforms.drop.exclude": "secret",
            "predicates": "marked", "predicates.marked.type": T + "predicates.HasHeaderKey",
            "predicates.marked.name": "skip"})
        driver.herder.put_connector_config("ids", {
            "connector.class": "file-sink", "file": str(ids), "topics": typed, "trigger.interval.ms": "300",
            **STRING_KEYS, "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "transforms": "name", "transforms.name.type": T + "ExtractField$Value", "transforms.name.field": "name"})
        wait_until(lambda: len(file_lines(copy)) >= 3 and len(file_lines(ids)) >= 3, timeout_s=240,
                   message="transformed records in both files")
        assert [json.loads(line) for line in file_lines(copy)] == [
            {"id": i, "name": f"n{i}", "topic": f"{unique_name}-copied", "offset": i, "partition": 0}
            for i in (0, 1, 3)]
        assert file_lines(ids) == ["t0", "t1", "t2"]
        wait_until(lambda: driver.herder.connector_offsets("copy") == [
            ({"kafka_topic": orders, "kafka_partition": 0}, {"kafka_offset": 4})], timeout_s=60,
            message="copy's committed position: the original topic, past the filtered record")
        assert driver.herder.connector_offsets("ids") == [
            ({"kafka_topic": typed, "kafka_partition": 0}, {"kafka_offset": 3})]
        assert [t["state"] for t in status_of(driver, "copy")["tasks"]] == ["RUNNING"]

        driver.herder.put_connector_config("unfit", {
            "connector.class": "file-sink", "file": str(tmp_path / "unfit.txt"), "topics": orders,
            "trigger.interval.ms": "300", **STRING_KEYS, "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter.schemas.enable": "false", "transforms": "x",
            "transforms.x.type": T + "ExtractField$Value", "transforms.x.field": "nope"})

        def failure() -> str:
            status = status_of(driver, "unfit")
            return " ".join(s.get("trace", "") for s in (status["connector"], *status["tasks"]) if s["state"] == "FAILED")
        assert "nope is not a valid field name" in wait_until(failure, timeout_s=120, message="unfit FAILED")
        assert file_lines(tmp_path / "unfit.txt") == []
    finally:
        driver.stop()


def test_source_set_schema_metadata_names_the_schema_json_converter_writes(spark, broker, tmp_path, unique_name):
    # The name/version travel on the value column's metadata through the streaming query to the writer.
    from tests.kafka_helpers import read_topic
    driver = start_driver(spark, kafka_worker(broker, tmp_path, unique_name))
    topic = f"{unique_name}-seq_1"
    try:
        driver.herder.put_connector_config("named", {
            "connector.class": "increment", "increments": "1", "records.per.poll": "3", "trigger.interval.ms": "300",
            "topic.prefix": f"{unique_name}-seq_", "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "transforms": "name", "transforms.name.type": T + "SetSchemaMetadata$Value",
            "transforms.name.schema.name": "com.example.Increment", "transforms.name.schema.version": "3"})
        records = wait_until(lambda: read_topic(broker.bootstrap, topic), timeout_s=180, message="named records")
        schema = json.loads(records[0][3])["schema"]
        assert (schema["type"], schema["name"], schema["version"]) == ("struct", "com.example.Increment", 3)
    finally:
        driver.stop()
