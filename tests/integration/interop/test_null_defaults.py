"""``replace.null.with.default`` of JsonConverter and the SMTs (KIP-1040): sparkcat's records are Connect 4.1.1's.

Connect's own classes (connect-runtime 4.1.1's JsonConverter and transforms, in a single-file Java program on
Connect's jars) decode a JsonConverter envelope whose fields have defaults and apply one SMT, as a Connect sink
task's records are made; sparkcat decodes the same bytes as a sink connector's batch (``sink_decode``) and applies
the same SMT config (``apply_chain``). Key, value and headers must be equal, for each SMT with the key true and
false, and with the converter's own key true and false.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from sparkcat.spark.executor.sink_decode import decode_batch, sides_of
from sparkcat.transforms import Records, apply_chain, parse_chain
from tests.broker import java
from tests.connect_worker import CONNECT_JARS

pytestmark = pytest.mark.integration

PROBE = r"""
import java.io.*;
import java.nio.charset.StandardCharsets;
import java.util.*;
import org.apache.kafka.connect.data.*;
import org.apache.kafka.connect.header.Header;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.transforms.Transformation;

public class NullDefaultsProbe {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        JsonConverter out = new JsonConverter();  // schemaless, and nulls written as they are
        out.configure(Map.of("schemas.enable", "false", "replace.null.with.default", "false"), false);
        for (String line; (line = in.readLine()) != null; ) {
            String[] p = line.split("\t");  // converter's key, SMT class, k=v;k=v, envelope
            JsonConverter reader = new JsonConverter();
            reader.configure(Map.of("replace.null.with.default", p[0]), false);
            SchemaAndValue read = reader.toConnectData("t", p[3].getBytes(StandardCharsets.UTF_8));
            SinkRecord record = new SinkRecord("t", 0, null, null, read.schema(), read.value(), 0);
            if (!p[1].equals("-")) {
                @SuppressWarnings("unchecked")
                Transformation<SinkRecord> smt = (Transformation<SinkRecord>) Class.forName(p[1])
                        .getDeclaredConstructor().newInstance();
                Map<String, String> config = new HashMap<>();
                for (String kv : p[2].split(";")) {
                    String[] pair = kv.split("=", 2);
                    config.put(pair[0], pair[1]);
                }
                smt.configure(config);
                record = smt.apply(record);
            }
            byte[] key = out.fromConnectData("t", record.keySchema(), record.key());
            byte[] value = out.fromConnectData("t", record.valueSchema(), record.value());
            StringBuilder headers = new StringBuilder("[");
            for (Header h : record.headers()) {
                headers.append(headers.length() > 1 ? "," : "")
                        .append(h.value() == null ? "null" : "\"" + h.value() + "\"");
            }
            System.out.println((key == null ? "null" : new String(key, StandardCharsets.UTF_8)) + "\t"
                    + new String(value, StandardCharsets.UTF_8) + "\t" + headers + "]");
        }
    }
}
"""

T = "org.apache.kafka.connect.transforms."
SCHEMA = {"type": "struct", "optional": False, "fields": [
    {"field": "a", "type": "int32", "optional": True, "default": 5},
    {"field": "b", "type": "string", "optional": True},
    {"field": "ts", "type": "int64", "optional": True, "default": 1700000000000},
    {"field": "s", "type": "struct", "optional": True, "fields": [
        {"field": "n", "type": "string", "optional": True, "default": "nested"}]}]}
PAYLOAD = {"a": None, "b": None, "ts": None, "s": {"n": None}}
#: (SMT, its settings); each is run with replace.null.with.default true and false.
SMTS = [
    ("InsertField$Value", {"static.field": "src", "static.value": "k"}),
    ("ReplaceField$Value", {"include": "a,b,s", "renames": "a:x"}),
    ("MaskField$Value", {"fields": "a,b"}),
    ("Cast$Value", {"spec": "a:string"}),
    ("ExtractField$Value", {"field": "a"}),
    ("ExtractField$Value", {"field": "s.n", "field.syntax.version": "V2"}),
    ("ValueToKey", {"fields": "a,b"}),
    ("TimestampConverter$Value", {"field": "ts", "target.type": "string", "format": "yyyy-MM-dd"}),
    ("HeaderFrom$Value", {"fields": "a", "headers": "h", "operation": "move"}),
]
CASES = [("false", smt, {**settings, "replace.null.with.default": flag})
         for smt, settings in SMTS for flag in ("true", "false")]
CASES += [("true", "-", {}), ("false", "-", {}), ("true", "ExtractField$Value",
                                                   {"field": "a", "replace.null.with.default": "false"})]


def _connect(tmp_path, cases) -> list[list[Any]]:
    """Key, value and header values of each case's record, as Connect 4.1.1's classes make it."""
    source = tmp_path / "NullDefaultsProbe.java"
    source.write_text(PROBE)
    envelope = json.dumps({"schema": SCHEMA, "payload": PAYLOAD})
    lines = [f"{converter}\t{T + smt if smt != '-' else '-'}\t{';'.join(f'{k}={v}' for k, v in settings.items())}"
             f"\t{envelope}" for converter, smt, settings in cases]
    done = subprocess.run([java(), "-cp", str(CONNECT_JARS / "*"), str(source)], input="\n".join(lines) + "\n",
                          capture_output=True, text=True, timeout=180, check=True)
    return [[json.loads(part) for part in line.split("\t")] for line in done.stdout.splitlines()]


def _sparkcat(spark, converter: str, smt: str, settings: dict[str, str]) -> list[Any]:
    envelope = json.dumps({"schema": SCHEMA, "payload": PAYLOAD}).encode()
    df = spark.createDataFrame([("t", 0, 0, None, envelope, 0, [])],
                               "topic STRING, partition INT, offset BIGINT, key BINARY, value BINARY, "
                               "timestamp BIGINT, headers ARRAY<STRUCT<key: STRING, value: BINARY>>")
    config = {"value.converter": "org.apache.kafka.connect.json.JsonConverter",
              "value.converter.replace.null.with.default": converter,
              "key.converter": "org.apache.kafka.connect.converters.ByteArrayConverter"}
    decoded, _ = decode_batch(df, sides_of(config, raw=False))
    records = Records(decoded, kind="sink", timestamp="timestamp", key_json=False)
    if smt != "-":
        chain = {"transforms": "t", "transforms.t.type": T + smt,
                 **{f"transforms.t.{k}": v for k, v in settings.items()}}
        records = apply_chain(records, parse_chain(chain))
    row = records.df.collect()[0].asDict(recursive=True)
    headers = [None if h["value"] is None else h["value"].decode() for h in row["headers"]]
    return [row["key"], row["value"], headers]


def test_records_with_field_defaults_are_connects_through_each_smt(spark, tmp_path):
    expected = _connect(tmp_path, CASES)
    assert len(expected) == len(CASES)
    for case, connect in zip(CASES, expected):
        assert _sparkcat(spark, *case) == connect, case
