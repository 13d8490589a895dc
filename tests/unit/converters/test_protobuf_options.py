"""ProtobufDataConfig's settings on ProtobufConverter, as Confluent's ProtobufData applies them.

Messages with enums and oneofs (which sparkcat never writes) are written by confluent-kafka's own
ProtobufSerializer, with its mock registry, and read back through sparkcat's converter; what sparkcat writes
is read by confluent-kafka's ProtobufDeserializer.
"""

from __future__ import annotations

import pytest
from pyspark.sql import Row
from pyspark.sql import types as T

from sparkcat.converters import at_topic, converter_for
from sparkcat.converters.protobuf_schema import ProtoOptions, proto_file, schema_text, scrub_name
from sparkcat.converters.protobuf_values import ProtoSchema, fill, read

URL = "http://localhost:8081"
NULLABLE = T.StructType([T.StructField("id", T.LongType(), False), T.StructField("name", T.StringType()),
                         T.StructField("xs", T.ArrayType(T.IntegerType())),
                         T.StructField("m", T.MapType(T.StringType(), T.DoubleType()))])


def _shop_order():
    """shop.Order {int64 id; Status status; oneof payment {string card; string iban}; Item item; optional
    int32 qty} as a message class of its own pool, written and registered by confluent-kafka."""
    from google.protobuf import descriptor_pb2, descriptor_pool
    from google.protobuf.message_factory import GetMessageClass

    fd = descriptor_pb2.FileDescriptorProto(name="shop.proto", package="shop", syntax="proto3")
    order = fd.message_type.add(name="Order")
    status = order.enum_type.add(name="Status")
    status.value.add(name="NEW", number=0)
    status.value.add(name="PAID", number=1)
    item = order.nested_type.add(name="Item")
    item.field.add(name="sku", number=1, type=9, label=1)
    order.oneof_decl.add(name="payment")
    order.field.add(name="id", number=1, type=3, label=1)
    order.field.add(name="status", number=2, type=14, type_name=".shop.Order.Status", label=1)
    order.field.add(name="card", number=3, type=9, label=1, oneof_index=0)
    order.field.add(name="iban", number=4, type=9, label=1, oneof_index=0)
    order.field.add(name="item", number=5, type=11, type_name=".shop.Order.Item", label=1)
    order.oneof_decl.add(name="_qty")
    order.field.add(name="qty", number=6, type=5, label=1, oneof_index=1, proto3_optional=True)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    return GetMessageClass(pool.FindMessageTypeByName("shop.Order"))


def _written_by_confluent(message):
    """The record confluent-kafka's ProtobufSerializer writes for ``message``, and the schema it registered."""
    from confluent_kafka.schema_registry._sync.mock_schema_registry_client import MockSchemaRegistryClient
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    client = MockSchemaRegistryClient({"url": "mock://options"})
    data = ProtobufSerializer(type(message), client, {"use.deprecated.format": False})(
        message, SerializationContext("orders", MessageField.VALUE))
    return data, client.get_schema(int.from_bytes(data[1:5], "big")).schema_str


def _read(message, **settings):
    data, text = _written_by_confluent(message)
    conv = at_topic(converter_for({"value.converter": "protobuf", "value.converter.schema.registry.url": URL,
                                   **{f"value.converter.{k}": v for k, v in settings.items()}}, False), "orders")
    conv._client.schema = lambda schema_id: text
    return conv.from_bytes(data)


def test_by_default_a_oneof_is_the_union_field_name_index_and_an_enum_its_name():
    order = _shop_order()(id=7, status=1, iban="DE00")
    # ProtobufData: unions first, named <oneof>_<index>, holding every member (the unset ones null)
    assert _read(order) == {"payment_0": {"card": None, "iban": "DE00"}, "id": 7, "status": "PAID", "item": None,
                            "qty": None}
    assert list(_read(order)) == ["payment_0", "id", "status", "item", "qty"]
    assert _read(_shop_order()(id=8))["payment_0"] is None  # no member set: a null union


def test_union_names_without_the_index_and_flattened_unions():
    order = _shop_order()(id=7, card="4111")
    assert _read(order, **{"generate.index.for.unions": "false"})["payment"] == {"card": "4111", "iban": None}
    flat = _read(order, **{"flatten.unions": "true"})
    assert flat == {"card": "4111", "iban": None, "id": 7, "status": "NEW", "item": None, "qty": None}


def test_int_for_enums_reads_an_enum_as_its_number():
    assert _read(_shop_order()(id=7, status=1), **{"int.for.enums": "true"})["status"] == 1


def test_generate_struct_for_nulls_reads_an_unset_message_as_its_default_message():
    got = _read(_shop_order()(id=7), **{"generate.struct.for.nulls": "true"})
    assert got["item"] == {"sku": ""} and got["qty"] == 0  # proto3 optional: its default too, as getField gives
    assert _read(_shop_order()(id=7, qty=0))["qty"] == 0 and _read(_shop_order()(id=7))["qty"] is None


def test_wrapper_for_nullables_writes_nullable_scalars_as_wrappers_that_keep_null_apart_from_empty():
    from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    options = ProtoOptions(wrapper_for_nullables=True)
    file_proto = proto_file(NULLABLE, options)
    assert "google/protobuf/wrappers.proto" in file_proto.dependency
    cls = ProtoSchema(1, schema_text(file_proto)).message_class()
    by = cls.DESCRIPTOR.fields_by_name
    assert by["id"].type == by["id"].TYPE_INT64  # not nullable: no wrapper
    assert by["name"].message_type.full_name == "google.protobuf.StringValue"
    assert by["xs"].message_type.full_name == "google.protobuf.Int32Value"  # array elements may be null
    assert by["m"].message_type.fields_by_name["value"].message_type.full_name == "google.protobuf.DoubleValue"
    conv = at_topic(converter_for({"value.converter": "protobuf", "value.converter.schema.registry.url": URL,
                                   "value.converter.wrapper.for.nullables": "true"}, False), "orders")
    conv._client.id_for = lambda subject, text: (5, text)
    empty, null = (conv.to_bytes(Row(id=1, name=name, xs=[3], m={"k": 0.5}), NULLABLE) for name in ("", None))
    assert conv.from_bytes(empty) == {"id": 1, "name": "", "xs": [3], "m": {"k": 0.5}}
    assert conv.from_bytes(null)["name"] is None  # plain proto3 would give "" for both
    parsed = ProtobufDeserializer(cls, {"use.deprecated.format": False})(
        empty, SerializationContext("orders", MessageField.VALUE))
    assert parsed.HasField("name") and parsed.name.value == ""
    # without the setting a wrapper is a message like any other: a struct with its value
    assert read(cls.FromString(empty[6:]))["name"] == {"value": ""}


@pytest.mark.parametrize("name, scrubbed", [  # ProtobufDataTest.testScrubName's cases
    ("abc_DEF_123", "abc_DEF_123"), ("abc+-.*_", "abc_2B____"), ("abc-def", "abc_def"), ("abc+def", "abc_2Bdef"),
    ("abc  def", "abc__def"), ("abc.def", "abc_def"), ("0abc.def", "x0abc_def"), ("_abc.def", "x_abc_def"),
    ("0abc", "x0abc"), ("_abc", "x_abc"), ("", "")])
def test_scrub_name_is_protobuf_datas(name, scrubbed):
    assert scrub_name(name) == scrubbed


def test_scrub_invalid_names_makes_field_and_message_names_valid_and_values_follow():
    odd = T.StructType([T.StructField("order-id", T.LongType()), T.StructField("1st", T.StringType())])
    odd.connect_name = "com.my-shop.Order$1"
    options = ProtoOptions(scrub_invalid_names=True)
    cls = ProtoSchema(1, schema_text(proto_file(odd, options))).message_class()
    assert cls.DESCRIPTOR.full_name == "com.my_shop.Order_241"
    assert [f.name for f in cls.DESCRIPTOR.fields] == ["order_id", "x1st"]
    assert read(cls.FromString(fill(cls(), Row(**{"order-id": 4, "1st": "a"}), options).SerializeToString())) == {
        "order_id": 4, "x1st": "a"}
