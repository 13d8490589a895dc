"""sparkcat's ProtobufConverter against a REAL Schema Registry (Apicurio Registry's Confluent-compatible API),
compared with confluent-kafka's own ProtobufSerializer / ProtobufDeserializer.

Confluent's Java ProtobufConverter is not on Maven Central, so the third party here is confluent-kafka's Python
serdes: what sparkcat writes they read, what they write sparkcat reads. Their message classes are built in the
test from a descriptor, as a Python producer without generated code would.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal

from pyspark.sql import Row
from pyspark.sql import types as T

from sparkcat.converters import at_topic, converter_for
from tests.broker import free_port

PROTOBUF = "io.confluent.connect.protobuf.ProtobufConverter"
INNER = T.StructType([T.StructField("city", T.StringType())])
ROW = T.StructType([T.StructField("id", T.LongType(), False), T.StructField("name", T.StringType()),
                    T.StructField("amount", T.DecimalType(12, 3)), T.StructField("day", T.DateType()),
                    T.StructField("at", T.TimestampType()), T.StructField("address", INNER),
                    T.StructField("tags", T.MapType(T.StringType(), T.IntegerType())),
                    T.StructField("sizes", T.ArrayType(T.IntegerType()))])
SAMPLE = Row(id=1, name="a", amount=decimal.Decimal("-1234.500"), day=dt.date(2026, 11, 28),
             at=dt.datetime(2026, 11, 28, 9, 30, 1, 250000), address=Row(city="Oslo"), tags={"x": 1}, sizes=[3, 4])


def _converter(url: str, is_key: bool = False, **settings: str):
    side = "key.converter" if is_key else "value.converter"
    return converter_for({side: PROTOBUF, f"{side}.schema.registry.url": url,
                          **{f"{side}.{k.replace('_', '.')}": v for k, v in settings.items()}}, is_key)


def _ctx(topic: str):
    from confluent_kafka.serialization import MessageField, SerializationContext

    return SerializationContext(topic, MessageField.VALUE)


def _registered_class(schema_registry, topic: str):
    """The message class a Python consumer builds from the subject's latest schema (no generated code)."""
    from google.protobuf import descriptor_pb2, descriptor_pool
    from google.protobuf.message_factory import GetMessageClass

    latest = schema_registry.get(f"/subjects/{topic}-value/versions/latest")
    proto = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(latest["schema"]))
    pool = descriptor_pool.Default()
    try:
        pool.Add(proto)
    except TypeError:
        pass  # already added by another test of this process
    return latest, GetMessageClass(pool.FindMessageTypeByName(proto.message_type[0].name))


def test_what_sparkcat_writes_confluent_kafkas_deserializer_reads(schema_registry, unique_name):
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer
    from confluent_kafka.schema_registry.confluent.type import decimal_pb2
    from google.protobuf import timestamp_pb2
    from google.type import date_pb2

    assert all(m.DESCRIPTOR for m in (timestamp_pb2, date_pb2, decimal_pb2))  # imported: in the default pool

    topic = f"protobuf-{unique_name}"
    conv = at_topic(_converter(schema_registry.url), topic)
    payloads = [conv.to_bytes(SAMPLE, ROW), conv.to_bytes(Row(id=2, **{f: None for f in ROW.names[1:]}), ROW)]
    latest, cls = _registered_class(schema_registry, topic)
    assert latest.get("schemaType") == "PROTOBUF" and cls.DESCRIPTOR.name == "ConnectDefault1"
    assert [f.number for f in cls.DESCRIPTOR.fields] == list(range(1, 9))
    deserializer = ProtobufDeserializer(cls, {}, SchemaRegistryClient({"url": schema_registry.url}))
    first, second = (deserializer(p, _ctx(topic)) for p in payloads)
    assert (first.id, first.name, first.address.city, dict(first.tags), list(first.sizes)) == \
        (1, "a", "Oslo", {"x": 1}, [3, 4])
    assert (first.day.year, first.day.month, first.day.day) == (2026, 11, 28)
    assert first.at.ToDatetime() == dt.datetime(2026, 11, 28, 9, 30, 1, 250000)
    assert second.id == 2 and not second.HasField("address") and not second.HasField("amount")
    fresh = at_topic(_converter(schema_registry.url), topic)
    assert fresh.from_bytes(payloads[0]) == {**SAMPLE.asDict(recursive=True),
                                             "at": SAMPLE.at.replace(tzinfo=dt.timezone.utc)}


def test_what_confluent_kafkas_serializer_writes_sparkcat_reads(schema_registry, unique_name):
    """A producer's own message type (nested message, enum, a second message first in the file)."""
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
    from google.protobuf import descriptor_pb2, descriptor_pool
    from google.protobuf.message_factory import GetMessageClass

    package = f"shop{unique_name.replace('-', '_')}"
    proto = descriptor_pb2.FileDescriptorProto(name=f"{package}/order.proto", package=package, syntax="proto3")
    proto.message_type.add(name="Unused").field.add(name="x", number=1, type=5, label=1)
    order = proto.message_type.add(name="Order")
    order.field.add(name="sku", number=1, type=9, label=1)
    order.field.add(name="qty", number=2, type=5, label=1)
    order.field.add(name="state", number=3, type=14, label=1, type_name=f".{package}.Order.State")
    order.field.add(name="line", number=4, type=11, label=1, type_name=f".{package}.Order.Line")
    order.nested_type.add(name="Line").field.add(name="price", number=1, type=1, label=1)
    state = order.enum_type.add(name="State")
    state.value.add(name="NEW", number=0)
    state.value.add(name="PAID", number=1)
    pool = descriptor_pool.DescriptorPool()
    cls = GetMessageClass(pool.Add(proto).message_types_by_name["Order"])
    topic = f"protobuf-other-{unique_name}"
    serializer = ProtobufSerializer(cls, SchemaRegistryClient({"url": schema_registry.url}))
    data = serializer(cls(sku="A-1", qty=3, state=1, line={"price": 2.5}), _ctx(topic))
    assert data[5] != 0  # message indexes [1]: not the first message of the file
    assert at_topic(_converter(schema_registry.url), topic).from_bytes(data) == {
        "sku": "A-1", "qty": 3, "state": "PAID", "line": {"price": 2.5}}


def test_use_latest_version_writes_with_the_subjects_schema_and_auto_register_false_looks_up(schema_registry,
                                                                                            unique_name):
    topic = f"protobuf-latest-{unique_name}"
    first = at_topic(_converter(schema_registry.url), topic).to_bytes(SAMPLE, ROW)
    latest = at_topic(_converter(schema_registry.url, auto_register_schemas="false", use_latest_version="true"),
                      topic)
    looked_up = at_topic(_converter(schema_registry.url, auto_register_schemas="false"), topic)
    assert latest.to_bytes(SAMPLE, ROW)[:5] == first[:5] == looked_up.to_bytes(SAMPLE, ROW)[:5]
    versions = schema_registry.get(f"/subjects/{topic}-value/versions")
    assert versions == [1]


def test_a_dead_first_registry_url_fails_over_to_the_next(schema_registry, unique_name):
    topic = f"protobuf-failover-{unique_name}"
    urls = f"http://127.0.0.1:{free_port()},{schema_registry.url}"
    conv = at_topic(_converter(urls, max_retries="0"), topic)
    payload = conv.to_bytes(SAMPLE, ROW)
    assert conv._client.current == 1
    assert at_topic(_converter(urls, max_retries="0"), topic).from_bytes(payload)["id"] == 1


def test_a_schema_with_references_reads_through_the_referenced_files(schema_registry, unique_name):
    """confluent-kafka's serializer registers an imported file as a reference (its own subject); sparkcat fetches
    it by subject and version to read the record."""
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
    from google.protobuf import descriptor_pb2, descriptor_pool
    from google.protobuf.message_factory import GetMessageClass

    package = f"shared{unique_name.replace('-', '_')}"
    money = descriptor_pb2.FileDescriptorProto(name=f"{package}/money.proto", package=package, syntax="proto3")
    money.message_type.add(name="Money").field.add(name="cents", number=1, type=3, label=1)
    order = descriptor_pb2.FileDescriptorProto(name=f"{package}/order.proto", package=package, syntax="proto3",
                                               dependency=[money.name])
    fields = order.message_type.add(name="Order").field
    fields.add(name="sku", number=1, type=9, label=1)
    fields.add(name="price", number=2, type=11, label=1, type_name=f".{package}.Money")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(money)
    cls = GetMessageClass(pool.Add(order).message_types_by_name["Order"])
    topic = f"protobuf-refs-{unique_name}"
    data = ProtobufSerializer(cls, SchemaRegistryClient({"url": schema_registry.url}))(
        cls(sku="A-1", price={"cents": 250}), _ctx(topic))
    latest = schema_registry.get(f"/subjects/{topic}-value/versions/latest")
    assert [r["name"] for r in latest["references"]] == [money.name]
    assert at_topic(_converter(schema_registry.url), topic).from_bytes(data) == {
        "sku": "A-1", "price": {"cents": 250}}
