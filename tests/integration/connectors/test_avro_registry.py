"""sparkcat's Avro encoding and registry client against a REAL Schema Registry (Apicurio Registry's
Confluent-compatible API), read back by a third-party reader: confluent-kafka's AvroDeserializer."""

from __future__ import annotations

import json

from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext
from pyspark.sql import types as T

from sparkcat.converters.avro_data import AvroCodec, avro_schema
from sparkcat.converters.schema_registry import RegistryClient, RegistrySettings, subject_name

ROW = T.StructType([T.StructField("id", T.LongType(), False), T.StructField("name", T.StringType()),
                    T.StructField("tiny", T.ByteType(), False)])


def test_registered_schema_and_records_read_by_confluent_deserializer(schema_registry, unique_name) -> None:
    topic = f"avro-{unique_name}"
    client = RegistryClient(RegistrySettings.parse({"schema.registry.url": schema_registry.url}, False))
    schema = avro_schema(ROW)
    subject = subject_name("TopicNameStrategy", topic, False, schema)
    schema_id, _ = client.id_for(subject, schema)
    assert client.id_for(subject, schema)[0] == schema_id  # cached, and stable
    assert schema_registry.get(f"/subjects/{subject}/versions/latest")["id"] == schema_id
    codec = AvroCodec(schema_id, schema)
    rows = [{"id": 1, "name": "a", "tiny": 3}, {"id": 2, "name": None, "tiny": -4}]
    payloads = [codec.encode(r, topic) for r in rows]
    reader = AvroDeserializer(SchemaRegistryClient({"url": schema_registry.url}))
    ctx = SerializationContext(topic, MessageField.VALUE)
    assert [reader(p, ctx) for p in payloads] == rows


def test_use_latest_version_and_lookup_without_registering(schema_registry, unique_name) -> None:
    topic = f"avro-{unique_name}"
    schema = avro_schema(ROW)
    subject = f"{topic}-value"
    registered, _ = RegistryClient(RegistrySettings.parse(
        {"schema.registry.url": schema_registry.url}, False)).id_for(subject, schema)
    lookup = RegistryClient(RegistrySettings.parse(
        {"schema.registry.url": schema_registry.url, "auto.register.schemas": "false"}, False))
    assert lookup.id_for(subject, schema)[0] == registered
    latest = RegistryClient(RegistrySettings.parse(
        {"schema.registry.url": schema_registry.url, "use.latest.version": "true"}, False))
    assert latest.id_for(subject, {"type": "string"})[0] == registered
    assert lookup.schema(registered)["name"] == "ConnectDefault"


def test_avro_converter_writes_per_topic_subject_and_reads_back(schema_registry, unique_name) -> None:
    from pyspark.sql import Row

    from sparkcat.converters.avro import AvroConverter

    topic = f"avro-conv-{unique_name}"
    spark_type = T.StructType([T.StructField("id", T.LongType(), False),
                               T.StructField("tags", T.MapType(T.StringType(), T.IntegerType()))])
    conv = AvroConverter()
    conv.configure({"schema.registry.url": schema_registry.url}, is_key=False)
    rows = [Row(id=1, tags={"a": 1}), Row(id=2, tags=None)]
    payloads = [conv.for_topic(topic).to_bytes(r, spark_type) for r in rows]
    assert schema_registry.get(f"/subjects/{topic}-value/versions/latest")["schema"]
    expected = [{"id": 1, "tags": {"a": 1}}, {"id": 2, "tags": None}]
    reader = AvroDeserializer(SchemaRegistryClient({"url": schema_registry.url}))
    assert [reader(p, SerializationContext(topic, MessageField.VALUE)) for p in payloads] == expected
    fresh = AvroConverter()
    fresh.configure({"schema.registry.url": schema_registry.url}, is_key=False)
    assert [fresh.from_bytes(p) for p in payloads] == expected


def test_a_schemaless_source_key_is_written_as_its_avro_primitive(schema_registry, unique_name) -> None:
    import pytest

    from sparkcat.converters.avro_data import AvroError
    from sparkcat.converters import at_topic, converter_for

    topic = f"avro-key-{unique_name}"
    conv = converter_for({"key.converter": "io.confluent.connect.avro.AvroConverter",
                          "key.converter.schema.registry.url": schema_registry.url}, is_key=True)
    topics = {"k1": f"{topic}-text", 42: f"{topic}-number"}  # one subject each: a registry may check compatibility
    payloads = {k: at_topic(conv, t).to_bytes(k, None) for k, t in topics.items()}
    reader = AvroDeserializer(SchemaRegistryClient({"url": schema_registry.url}))
    assert [reader(p, SerializationContext(topics[k], MessageField.KEY)) for k, p in payloads.items()] == ["k1", 42]
    schemas = [schema_registry.get(f"/subjects/{t}-key/versions/latest")["schema"] for t in topics.values()]
    assert [json.loads(s) for s in schemas] == ["string", "long"]
    with pytest.raises(AvroError, match="key without a schema .* not a dict"):
        conv.to_bytes({"id": 1}, None)


def test_connect_logical_types_are_avros_logical_types_both_ways(schema_registry, unique_name) -> None:
    """Decimal, Date, Time and Timestamp fields: registered with Connect's AvroData props, read by confluent-kafka's
    deserializer as Avro's logical values, and read back by sparkcat as the values written."""
    import datetime as dt
    import decimal

    from pyspark.sql import Row

    from sparkcat.converters.avro import AvroConverter

    topic = f"avro-logical-{unique_name}"
    spark_type = T.StructType([T.StructField("amount", T.DecimalType(12, 3), False),
                               T.StructField("day", T.DateType()), T.StructField("at", T.TimeType()),
                               T.StructField("ts", T.TimestampType())])
    utc = dt.timezone.utc
    rows = [Row(amount=decimal.Decimal("-1234.500"), day=dt.date(2026, 11, 28), at=dt.time(23, 59, 59, 999000),
                ts=dt.datetime(2026, 11, 28, 7, 30, 15, 123000)),
            Row(amount=decimal.Decimal("0.000"), day=None, at=None, ts=None)]
    conv = AvroConverter()
    conv.configure({"schema.registry.url": schema_registry.url}, is_key=False)
    payloads = [conv.for_topic(topic).to_bytes(r, spark_type) for r in rows]
    registered = json.loads(schema_registry.get(f"/subjects/{topic}-value/versions/latest")["schema"])
    amount = registered["fields"][0]["type"]
    assert (amount["logicalType"], amount["scale"], amount["connect.name"]) == (
        "decimal", 3, "org.apache.kafka.connect.data.Decimal")
    expected = [{"amount": decimal.Decimal("-1234.500"), "day": dt.date(2026, 11, 28),
                 "at": dt.time(23, 59, 59, 999000), "ts": dt.datetime(2026, 11, 28, 7, 30, 15, 123000, tzinfo=utc)},
                {"amount": decimal.Decimal("0.000"), "day": None, "at": None, "ts": None}]
    reader = AvroDeserializer(SchemaRegistryClient({"url": schema_registry.url}))
    assert [reader(p, SerializationContext(topic, MessageField.VALUE)) for p in payloads] == expected
    fresh = AvroConverter()
    fresh.configure({"schema.registry.url": schema_registry.url}, is_key=False)
    assert [fresh.from_bytes(p) for p in payloads] == expected


def test_a_dead_first_registry_url_fails_over_to_the_next_and_stays_there(schema_registry, unique_name) -> None:
    """schema.registry.url lists a URL nobody answers first: calls go to the second (Confluent's RestService
    fails over the same way), and the converter, and any made later in the process, keep using it without trying
    the dead one again."""
    from pyspark.sql import Row

    from sparkcat.converters import at_topic, converter_for
    from tests.broker import free_port

    topic = f"avro-failover-{unique_name}"
    urls = f"http://127.0.0.1:{free_port()},{schema_registry.url}"
    conv = converter_for({"value.converter": "io.confluent.connect.avro.AvroConverter",
                          "value.converter.schema.registry.url": urls, "value.converter.max.retries": "0"},
                         is_key=False)
    payload = at_topic(conv, topic).to_bytes(Row(id=7, name="x"), ROW[:2])
    assert conv._client.current == 1
    reader = AvroDeserializer(SchemaRegistryClient({"url": schema_registry.url}))
    assert reader(payload, SerializationContext(topic, MessageField.VALUE)) == {"id": 7, "name": "x"}
    fresh = converter_for({"value.converter": "avro", "value.converter.schema.registry.url": urls,
                           "value.converter.max.retries": "0"}, is_key=False)
    assert fresh._client.current == 1  # a converter made later (sparkcat makes them per batch) starts there
    assert at_topic(fresh, topic).from_bytes(payload) == {"id": 7, "name": "x"}
