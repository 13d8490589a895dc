"""A source connector's records through a transforms chain to a real Kafka broker, with headers."""

from __future__ import annotations

import json
import uuid

import pytest
from confluent_kafka import Consumer, TopicPartition

from sparkcat.spark.driver.queries import start_query
from tests.integration.spark.query_helpers import Batches, run_until
from tests.integration.spark.test_connector_query import create_topics, increment_plan

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

T = "org.apache.kafka.connect.transforms."


def read_with_headers(bootstrap: str, topic: str) -> list[tuple[str, dict, list]]:
    """(topic, value JSON, headers) of every record of a single-partition topic."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"t-{uuid.uuid4().hex}", "enable.partition.eof": True,
                  "enable.auto.commit": False})
    out = []
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        while True:
            m = c.poll(10)
            if m is None or (m.error() and m.error().code() == -191):  # _PARTITION_EOF
                break
            out.append((m.topic(), json.loads(m.value()), m.headers() or []))
    finally:
        c.close()
    return out


def test_chain_inserts_masks_routes_adds_headers_and_filters(spark, broker, unique_name, tmp_path):
    prefix = f"{unique_name}-seq_"
    routed = f"{unique_name}-copy_1"
    create_topics(broker.bootstrap, prefix + "1", prefix + "100", routed)
    plan = increment_plan(unique_name, tmp_path / "ck", broker.bootstrap, 1, prefix, batch_max_records=40)
    plan.connector_config.update({
        "transforms": "dropHundreds, insert, mask, route, header",
        "transforms.dropHundreds.type": T + "Filter", "transforms.dropHundreds.predicate": "isHundred",
        "transforms.insert.type": T + "InsertField$Value", "transforms.insert.static.field": "source",
        "transforms.insert.static.value": "sparkcat", "transforms.insert.topic.field": "from_topic",
        "transforms.mask.type": T + "MaskField$Value", "transforms.mask.fields": "increment",
        "transforms.route.type": T + "RegexRouter", "transforms.route.regex": "(.*)-seq_(.*)",
        "transforms.route.replacement": "$1-copy_$2",
        "transforms.header.type": T + "InsertHeader", "transforms.header.header": "origin",
        "transforms.header.value.literal": "increment",
        "predicates": "isHundred", "predicates.isHundred.type": T + "predicates.TopicNameMatches",
        "predicates.isHundred.pattern": ".*_100"})
    batches = Batches()
    run_until(spark, plan, batches, lambda: batches.position(1) >= 40 and batches.position(100) >= 40)

    records = read_with_headers(broker.bootstrap, routed)
    n = len(records)
    assert n >= 40
    assert [r[1]["payload"] for r in records] == [
        {"position": p, "value": p, "increment": 0, "from_topic": prefix + "1", "source": "sparkcat"}
        for p in range(1, n + 1)]
    assert records[0][1]["schema"]["fields"][-1] == {"type": "string", "optional": True, "field": "source"}
    assert all(r[2] == [("origin", b"increment")] for r in records)
    assert read_with_headers(broker.bootstrap, prefix + "1") == []  # routed away
    assert read_with_headers(broker.bootstrap, prefix + "100") == []  # filtered
    # Filtered records still advance their source offsets (Connect commits them), but do not count as written.
    assert batches.position(100) >= 40
    assert batches.records() == n


def test_value_to_key_then_set_schema_metadata_key_reaches_kafka_with_the_named_key_schema(spark, broker, unique_name,
                                                                                         tmp_path):
    # Connect's JsonConverter writes the key ValueToKey built with its schema, named by SetSchemaMetadata$Key
    prefix = f"{unique_name}-seq_"
    create_topics(broker.bootstrap, prefix + "1", prefix + "100")
    plan = increment_plan(unique_name, tmp_path / "ck", broker.bootstrap, 1, prefix, batch_max_records=20)
    plan.connector_config.update({
        "transforms": "createKey, name", "transforms.createKey.type": T + "ValueToKey",
        "transforms.createKey.fields": "position", "transforms.name.type": T + "SetSchemaMetadata$Key",
        "transforms.name.schema.name": "com.example.SeqKey", "transforms.name.schema.version": "3"})
    batches = Batches()
    run_until(spark, plan, batches, lambda: batches.position(1) >= 20)

    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": f"t-{uuid.uuid4().hex}",
                  "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(prefix + "1", 0, 0)])
        message = c.poll(30)
    finally:
        c.close()
    assert message is not None and not message.error()
    assert json.loads(message.key()) == {"schema": {"type": "struct", "fields": [
        {"type": "int64", "optional": True, "field": "position"}], "optional": False, "name": "com.example.SeqKey",
        "version": 3}, "payload": {"position": 1}}


def test_a_chain_that_cannot_apply_fails_the_query_before_any_record(spark, broker, unique_name, tmp_path):
    prefix = f"{unique_name}-seq_"
    create_topics(broker.bootstrap, prefix + "1", prefix + "100")
    plan = increment_plan(unique_name, tmp_path / "ck", broker.bootstrap, 1, prefix)
    plan.connector_config.update({"transforms": "x", "transforms.x.type": T + "ExtractField$Value",
                                  "transforms.x.field": "nope"})
    with pytest.raises(Exception, match="nope is not a valid field name"):
        start_query(spark, plan, Batches())


def test_chain_on_the_way_to_a_sink_named_by_sink_keys(spark, unique_name, tmp_path):
    from tests.integration.spark.test_connector_query import file_sink_plan

    out = tmp_path / "out.jsonl"
    plan = file_sink_plan(unique_name, tmp_path / "ck", 1, out, tmp_path / "stores")
    plan.connector_config.update({
        "transforms": "onlyOnes, tag", "transforms.onlyOnes.type": "Filter",
        "transforms.onlyOnes.predicate": "isOne", "transforms.onlyOnes.negate": "true",
        "transforms.tag.type": "InsertField$Value", "transforms.tag.static.field": "tag",
        "transforms.tag.static.value": "t",
        "predicates": "isOne", "predicates.isOne.type": "TopicNameMatches", "predicates.isOne.pattern": "seq_1"})
    batches = Batches()
    run_until(spark, plan, batches, lambda: batches.position(1) >= 30 and batches.position(100) >= 30)

    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert lines == [{"position": p, "value": p, "increment": 1, "tag": "t"} for p in range(1, len(lines) + 1)]
    assert len(lines) == batches.position(1) and batches.records() == len(lines)  # seq_100 dropped, offsets kept


def test_sql_transform_on_the_streaming_source(spark, unique_name, tmp_path):
    from tests.integration.spark.test_connector_query import file_sink_plan

    out = tmp_path / "out.jsonl"
    plan = file_sink_plan(unique_name, tmp_path / "ck", 1, out, tmp_path / "stores")
    plan.connector_config.update({
        "transforms": "q", "transforms.q.type": "sql",
        "transforms.q.query": "SELECT _task, _partition, _offset, topic, key, timestamp, headers, "
                              "named_struct('n', value.position, 'square', value.value * value.value) AS value "
                              "FROM records WHERE value.increment = 1 AND value.position % 2 = 0"})
    batches = Batches()
    run_until(spark, plan, batches, lambda: batches.position(1) >= 30)

    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert lines and lines == [{"n": p, "square": p * p} for p in range(2, 2 * len(lines) + 1, 2)]
