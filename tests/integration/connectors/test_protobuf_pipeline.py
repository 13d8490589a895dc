"""Protobuf through the registry: a source connector writes with ProtobufConverter, a plain confluent-kafka consumer
reads it with ProtobufDeserializer; a file sink with ProtobufConverter reads records confluent-kafka's
ProtobufSerializer wrote.

Everything is real: the driver on Spark, an Apache Kafka broker, Apicurio Registry's Confluent-compatible API as
the Schema Registry. Confluent's Java converter is not on Maven Central; confluent-kafka's Python serdes are the
Confluent-style producer and consumer.
"""

from __future__ import annotations

import base64
import json

import pytest

from tests.integration.runtime.test_driver import file_lines, kafka_worker, start_driver, status_of
from tests.kafka_helpers import ordered_producer_settings, read_topic, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

PROTOBUF = "io.confluent.connect.protobuf.ProtobufConverter"


def _ctx(topic: str):
    from confluent_kafka.serialization import MessageField, SerializationContext

    return SerializationContext(topic, MessageField.VALUE)


def _consumer_values(schema_registry, bootstrap: str, topic: str) -> list[dict]:
    """The topic's values as a Python consumer reads them: ProtobufDeserializer with a class built from the
    subject's registered schema (no generated code), then protobuf's MessageToDict."""
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer
    from google.protobuf import descriptor_pb2, descriptor_pool, json_format
    from google.protobuf.message_factory import GetMessageClass

    latest = schema_registry.get(f"/subjects/{topic}-value/versions/latest")
    proto = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(latest["schema"]))
    proto.name = f"{topic}.proto"
    cls = GetMessageClass(descriptor_pool.DescriptorPool().Add(proto).message_types_by_name["ConnectDefault1"])
    deserializer = ProtobufDeserializer(cls, {}, SchemaRegistryClient({"url": schema_registry.url}))
    out = [json_format.MessageToDict(deserializer(value, _ctx(topic)), preserving_proto_field_name=True,
                                     always_print_fields_with_no_presence=True)
           for _, _, _, value in read_topic(bootstrap, topic) if value is not None]
    return sorted(out, key=lambda v: int(v["position"]))


def test_a_source_writes_protobuf_a_python_consumer_reads(spark, broker, schema_registry, tmp_path, unique_name):
    prefix = f"{unique_name}-protobuf_"
    topic = prefix + "2"
    driver = start_driver(spark, kafka_worker(broker, tmp_path, unique_name))
    try:
        driver.herder.put_connector_config("inc", {
            "connector.class": "increment", "increments": "2", "topic.prefix": prefix, "records.per.poll": "10",
            "trigger.interval.ms": "300", "value.converter": PROTOBUF,
            "value.converter.schema.registry.url": schema_registry.url})
        wait_until(lambda: len(read_topic(broker.bootstrap, topic)) >= 20, timeout_s=240,
                   message=lambda: f"Protobuf records from the increment source: {status_of(driver, 'inc')}")
        driver.herder.delete_connector("inc")
        wait_until(lambda: "inc" not in driver.herder.connectors(), message="the source connector gone")
        latest = schema_registry.get(f"/subjects/{topic}-value/versions/latest")
        assert latest.get("schemaType") == "PROTOBUF"
        values = _consumer_values(schema_registry, broker.bootstrap, topic)
        # protobuf's JSON gives int64 as strings
        assert values == [{"position": str(p), "value": str(2 * p), "increment": str(2)}
                          for p in range(1, len(values) + 1)]
        assert {v[1:5] for _, _, _, v in read_topic(broker.bootstrap, topic)} == {latest["id"].to_bytes(4, "big")}
    finally:
        driver.stop()


def _order_class(unique_name: str):
    from google.protobuf import descriptor_pb2, descriptor_pool
    from google.protobuf.message_factory import GetMessageClass

    package = f"shop{unique_name.replace('-', '_')}"
    proto = descriptor_pb2.FileDescriptorProto(name=f"{package}/order.proto", package=package, syntax="proto3")
    order = proto.message_type.add(name="Order")
    order.field.add(name="sku", number=1, type=9, label=1)
    order.field.add(name="qty", number=2, type=5, label=1)
    order.field.add(name="line", number=3, type=11, label=1, type_name=f".{package}.Order.Line")
    order.nested_type.add(name="Line").field.add(name="price", number=1, type=1, label=1)
    return GetMessageClass(descriptor_pool.DescriptorPool().Add(proto).message_types_by_name["Order"])


def test_a_sink_reads_records_confluent_kafkas_serializer_wrote(spark, broker, schema_registry, tmp_path,
                                                                unique_name):
    from confluent_kafka import SerializingProducer
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer

    topic = f"{unique_name}-orders"
    cls = _order_class(unique_name)
    producer = SerializingProducer({**ordered_producer_settings(broker.bootstrap), "value.serializer": ProtobufSerializer(
        cls, SchemaRegistryClient({"url": schema_registry.url}))})
    for n in range(1, 6):
        producer.produce(topic, value=cls(sku=f"A-{n}", qty=n, line={"price": n / 2}))
    assert producer.flush(30) == 0
    out = tmp_path / "orders.txt"
    driver = start_driver(spark, kafka_worker(broker, tmp_path, unique_name))
    try:
        driver.herder.put_connector_config("orders", {
            "connector.class": "file-sink", "file": str(out), "topics": topic, "trigger.interval.ms": "300",
            "value.converter": PROTOBUF, "value.converter.schema.registry.url": schema_registry.url})
        lines = wait_until(lambda: (lambda got: got if len(got) >= 5 else None)(file_lines(out)), timeout_s=240,
                           message=lambda: f"the sink: {status_of(driver, 'orders')}")
        assert sorted((json.loads(line) for line in lines), key=lambda v: v["qty"]) == [
            {"sku": f"A-{n}", "qty": n, "line": {"price": n / 2}} for n in range(1, 6)]
        assert [t["state"] for t in status_of(driver, "orders")["tasks"]] == ["RUNNING"]
    finally:
        driver.stop()
