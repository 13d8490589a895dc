"""Connect's AvroData mapping of Spark types, the Confluent wire format and AvroConverter settings."""

from __future__ import annotations

import pytest
from pyspark.sql import types as T

from sparkcat.converters.avro_data import AvroCodec, AvroError, avro_schema, schema_id_of
from sparkcat.converters.schema_registry import RegistrySettings, subject_name
from sparkcat.errors import ConfigError

NS = "io.confluent.connect.avro"


def test_primitives_follow_connect_avro_data() -> None:
    assert avro_schema(T.ByteType()) == {"type": "int", "connect.type": "int8"}
    assert avro_schema(T.ShortType()) == {"type": "int", "connect.type": "int16"}
    assert [avro_schema(t) for t in (T.IntegerType(), T.LongType(), T.FloatType(), T.DoubleType(),
                                      T.BooleanType(), T.StringType(), T.BinaryType())] == \
        ["int", "long", "float", "double", "boolean", "string", "bytes"]


def test_struct_is_connect_default_record_with_optional_fields() -> None:
    inner = T.StructType([T.StructField("x", T.LongType(), False)])
    schema = avro_schema(T.StructType([T.StructField("id", T.IntegerType(), False),
                                       T.StructField("name", T.StringType(), True),
                                       T.StructField("inner", inner, False)]))
    assert schema == {"type": "record", "name": "ConnectDefault", "namespace": NS, "fields": [
        {"name": "id", "type": "int"},
        {"name": "name", "type": ["null", "string"], "default": None},
        {"name": "inner", "type": {"type": "record", "name": "ConnectDefault2", "namespace": NS,
                                   "fields": [{"name": "x", "type": "long"}]}}]}


def test_arrays_and_maps() -> None:
    assert avro_schema(T.ArrayType(T.StringType(), False)) == {"type": "array", "items": "string"}
    assert avro_schema(T.MapType(T.StringType(), T.LongType(), True)) == \
        {"type": "map", "values": ["null", "long"]}
    entry = avro_schema(T.MapType(T.IntegerType(), T.StringType(), False))["items"]
    assert entry["name"] == "MapEntry" and [f["name"] for f in entry["fields"]] == ["key", "value"]


def test_unmapped_type_is_refused() -> None:
    with pytest.raises(ConfigError, match="no Avro mapping"):
        avro_schema(T.DayTimeIntervalType())


CONNECT = "org.apache.kafka.connect.data."


def test_connect_logical_types_carry_avro_datas_props_and_avros_logical_type() -> None:
    assert avro_schema(T.DecimalType(10, 2)) == {
        "type": "bytes", "scale": 2, "precision": 10, "connect.version": 1,
        "connect.parameters": {"scale": "2", "connect.decimal.precision": "10"},
        "connect.name": CONNECT + "Decimal", "logicalType": "decimal"}
    assert avro_schema(T.DateType()) == {"type": "int", "connect.version": 1, "connect.name": CONNECT + "Date",
                                         "logicalType": "date"}
    assert avro_schema(T.TimeType()) == {"type": "int", "connect.version": 1, "connect.name": CONNECT + "Time",
                                         "logicalType": "time-millis"}
    for kind in (T.TimestampType(), T.TimestampNTZType()):
        assert avro_schema(kind, optional=True) == ["null", {
            "type": "long", "connect.version": 1, "connect.name": CONNECT + "Timestamp",
            "logicalType": "timestamp-millis"}]


def test_logical_values_round_trip_and_decimals_are_javas_bytes() -> None:
    import datetime as dt
    import decimal

    from sparkcat.converters.avro import _datum

    row = T.StructType([T.StructField("amount", T.DecimalType(10, 2), False), T.StructField("day", T.DateType()),
                        T.StructField("at", T.TimeType()), T.StructField("ts", T.TimestampType())])
    codec = AvroCodec(1, avro_schema(row))
    value = {"amount": decimal.Decimal("-1.28"), "day": dt.date(2026, 11, 28), "at": dt.time(7, 30, 15, 123000),
             "ts": dt.datetime(2026, 11, 28, 7, 30, 15, 123000, tzinfo=dt.timezone.utc)}
    payload = codec.encode(_datum(value, row), "t")
    assert payload[5:7] == b"\x02\x80"  # length 1, then -128 as Java's BigInteger.toByteArray writes it
    assert codec.decode(payload, "t") == value


def test_wire_format_is_magic_byte_id_and_avro_binary() -> None:
    schema = avro_schema(T.StructType([T.StructField("n", T.LongType(), False)]))
    codec = AvroCodec(258, schema)
    payload = codec.encode({"n": 1}, "t")
    assert payload == b"\x00\x00\x00\x01\x02" + b"\x02"  # zigzag varint of 1
    assert schema_id_of(payload, "t") == 258
    assert codec.decode(payload, "t") == {"n": 1}


def test_errors_name_the_topic() -> None:
    with pytest.raises(AvroError, match="'orders'"):
        schema_id_of(b"{}", "orders")
    codec = AvroCodec(1, avro_schema(T.StructType([T.StructField("n", T.LongType(), False)])))
    with pytest.raises(AvroError, match="'orders'"):
        codec.encode({"n": "not a number"}, "orders")
    with pytest.raises(AvroError, match="'orders'"):
        codec.decode(b"\x00\x00\x00\x00\x01", "orders")  # framing but no Avro body


def test_subject_name_strategies() -> None:
    schema = avro_schema(T.StructType([T.StructField("n", T.LongType(), False)]))
    assert subject_name("TopicNameStrategy", "t", False, schema) == "t-value"
    assert subject_name("TopicNameStrategy", "t", True, schema) == "t-key"
    assert subject_name("RecordNameStrategy", "t", False, schema) == f"{NS}.ConnectDefault"
    assert subject_name("TopicRecordNameStrategy", "t", False, schema) == f"t-{NS}.ConnectDefault"


def test_settings_defaults_and_refusals() -> None:
    s = RegistrySettings.parse({"schema.registry.url": "http://r:1/x/"}, is_key=False)
    assert (s.url, s.strategy, s.auto_register, s.use_latest) == ("http://r:1/x", "TopicNameStrategy", True, False)
    s = RegistrySettings.parse({"schema.registry.url": "http://r", "key.subject.name.strategy":
                                "io.confluent.kafka.serializers.subject.RecordNameStrategy",
                                "auto.register.schemas": "false"}, is_key=True)
    assert (s.strategy, s.auto_register) == ("RecordNameStrategy", False)
    with pytest.raises(ConfigError, match="schema.registry.url"):
        RegistrySettings.parse({}, is_key=False)
    with pytest.raises(ConfigError, match="not implemented"):
        RegistrySettings.parse({"schema.registry.url": "http://r", "normalize.schemas": "true"}, is_key=False)
    with pytest.raises(ConfigError, match="USER_INFO"):
        RegistrySettings.parse({"schema.registry.url": "http://r",
                                "basic.auth.credentials.source": "SASL_INHERIT"}, is_key=False)
    s = RegistrySettings.parse({"schema.registry.url": "http://r", "basic.auth.credentials.source":
                                "USER_INFO", "basic.auth.user.info": "u:p"}, is_key=False)
    assert s.user_info == "u:p" and "u:p" not in repr(s)


def test_every_registry_url_of_the_list_is_kept_in_order() -> None:
    """Confluent's converters take schema.registry.url as a comma-separated list and fail over along it."""
    s = RegistrySettings.parse({"schema.registry.url": " http://a:1/ , http://b:2,,https://c:3/x/ "}, is_key=False)
    assert s.urls == ("http://a:1", "http://b:2", "https://c:3/x") and s.url == "http://a:1"
    assert dict(s.retries) == {"max.retries": 3, "retries.wait.ms": 1000, "retries.max.wait.ms": 20000}
    s = RegistrySettings.parse({"schema.registry.url": "http://a", "max.retries": "0", "retries.wait.ms": "5"},
                               is_key=False)
    assert dict(s.retries)["max.retries"] == 0 and dict(s.retries)["retries.wait.ms"] == 5
    with pytest.raises(ConfigError, match="must list http:// or https:// URLs, not 'b:2'"):
        RegistrySettings.parse({"schema.registry.url": "http://a,b:2"}, is_key=False)
    with pytest.raises(ConfigError, match="max.retries must be a whole number of at least 0"):
        RegistrySettings.parse({"schema.registry.url": "http://a", "max.retries": "-1"}, is_key=False)


def test_an_unreachable_registry_list_names_every_url_tried() -> None:
    """Each URL is tried once per call (no retries here); the error names them all, and the first is tried again
    next time only after the others."""
    from sparkcat.converters.schema_registry import RegistryClient
    from sparkcat.errors import SparkcatError
    from tests.broker import free_port

    dead = [f"http://127.0.0.1:{free_port()}" for _ in range(2)]
    client = RegistryClient(RegistrySettings.parse({"schema.registry.url": ",".join(dead), "max.retries": "0"},
                                                   is_key=False))
    with pytest.raises(SparkcatError, match="schema registry unreachable \\(schema 7\\)") as info:
        client.schema(7)
    assert all(url in str(info.value) for url in dead)
    assert client.current == 0  # both failed: round the list once, back where it started
