"""sparkcat's JsonSchemaConverter against a REAL Schema Registry (Apicurio Registry's Confluent-compatible API).

confluent-kafka's JSONSerializer / JSONDeserializer need the ``jsonschema`` package, which this environment
does not have, so the third-party view is the registry's own REST API and Confluent's wire format read by
hand: magic byte 0, the schema id (4 bytes, big-endian), the JSON text.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import struct
import urllib.request

from pyspark.sql import Row
from pyspark.sql import types as T

from sparkcat.converters import at_topic, converter_for
from tests.broker import free_port

JSON_SCHEMA = "io.confluent.connect.json.JsonSchemaConverter"
ROW = T.StructType([T.StructField("id", T.LongType(), False), T.StructField("name", T.StringType()),
                    T.StructField("amount", T.DecimalType(12, 3)), T.StructField("day", T.DateType()),
                    T.StructField("tags", T.MapType(T.StringType(), T.IntegerType()))])


def _converter(url: str, is_key: bool = False, **settings: str):
    side = "key.converter" if is_key else "value.converter"
    return converter_for({side: JSON_SCHEMA, f"{side}.schema.registry.url": url,
                          **{f"{side}.{k.replace('_', '.')}": v for k, v in settings.items()}}, is_key)


def _framed(payload: bytes) -> tuple[int, dict]:
    """The schema id and the JSON of a Confluent-framed message."""
    assert payload[0] == 0
    return struct.unpack(">I", payload[1:5])[0], json.loads(payload[5:])


def test_records_are_framed_json_under_a_registered_json_schema_and_read_back(schema_registry, unique_name):
    topic = f"jsonschema-{unique_name}"
    conv = at_topic(_converter(schema_registry.url), topic)
    rows = [Row(id=1, name="a", amount=decimal.Decimal("-1234.500"), day=dt.date(2026, 11, 28), tags={"x": 1}),
            Row(id=2, name=None, amount=None, day=None, tags=None)]
    payloads = [conv.to_bytes(r, ROW) for r in rows]
    latest = schema_registry.get(f"/subjects/{topic}-value/versions/latest")
    assert latest.get("schemaType") == "JSON"
    registered = json.loads(latest["schema"])
    assert registered["type"] == "object" and list(registered["properties"]) == ["id", "name", "amount", "day", "tags"]
    assert registered["properties"]["id"] == {"type": "integer", "connect.index": 0, "connect.type": "int64"}
    ids_and_values = [_framed(p) for p in payloads]
    assert {i for i, _ in ids_and_values} == {latest["id"]}
    assert ids_and_values[0][1] == {"id": 1, "name": "a", "amount": "7Sm8", "day": 20785, "tags": {"x": 1}}
    assert ids_and_values[1][1] == {"id": 2, "name": None, "amount": None, "day": None, "tags": None}
    fresh = at_topic(_converter(schema_registry.url), topic)
    assert [fresh.from_bytes(p) for p in payloads] == [r.asDict() for r in rows]


def test_json_written_by_another_producer_is_read_through_its_registered_schema(schema_registry, unique_name):
    """A plain JSON Schema (no connect.* properties) registered over the REST API, a message framed by hand."""
    topic = f"jsonschema-other-{unique_name}"
    schema = {"type": "object", "properties": {"sku": {"type": "string"}, "qty": {"type": "integer"},
                                               "price": {"type": "number"}, "note": {"type": ["string", "null"]}}}
    body = json.dumps({"schemaType": "JSON", "schema": json.dumps(schema)}).encode()
    request = urllib.request.Request(f"{schema_registry.url}/subjects/{topic}-value/versions", data=body,
                                     headers={"Content-Type": "application/vnd.schemaregistry.v1+json"})
    with urllib.request.urlopen(request, timeout=10) as resp:
        schema_id = json.loads(resp.read())["id"]
    payload = struct.pack(">bI", 0, schema_id) + b'{"sku":"A-1","qty":3,"price":2,"note":null}'
    assert at_topic(_converter(schema_registry.url), topic).from_bytes(payload) == {
        "sku": "A-1", "qty": 3, "price": 2.0, "note": None}


def test_record_name_strategy_names_the_subject_by_the_structs_name(schema_registry, unique_name):
    named = T.StructType([T.StructField("n", T.IntegerType(), False)])
    named.connect_name = f"com.example.Named{unique_name.replace('-', '_')}"
    conv = _converter(schema_registry.url, value_subject_name_strategy="io.confluent.kafka.serializers.subject."
                                                                        "TopicRecordNameStrategy")
    topic = f"jsonschema-named-{unique_name}"
    payload = at_topic(conv, topic).to_bytes(Row(n=5), named)
    latest = schema_registry.get(f"/subjects/{topic}-{named.connect_name}/versions/latest")
    assert json.loads(latest["schema"])["title"] == named.connect_name and _framed(payload)[1] == {"n": 5}


def test_a_dead_first_registry_url_fails_over_to_the_next(schema_registry, unique_name):
    topic = f"jsonschema-failover-{unique_name}"
    urls = f"http://127.0.0.1:{free_port()},{schema_registry.url}"
    conv = at_topic(_converter(urls, max_retries="0"), topic)
    payload = conv.to_bytes(Row(id=9, name="x", amount=None, day=None, tags=None), ROW)
    assert conv._client.current == 1
    assert at_topic(_converter(urls, max_retries="0"), topic).from_bytes(payload)["id"] == 9
