"""Connect's number and boolean converters: sparkcat's bytes are connect-runtime 4.1.1's, both ways (issue 43).

Connect's own converter classes run in a JVM (a single-file Java program on Connect's jars): every value
sparkcat writes is the bytes Connect's ``fromConnectData`` gives, and Connect's ``toConnectData`` of those
bytes is the value sparkcat reads back; bytes of a wrong length fail in both. A Connect worker then reads
what a sparkcat source wrote with LongConverter, and sparkcat reads what a Connect source wrote with it.
"""

from __future__ import annotations

import math
import subprocess

import pytest

from sparkcat.bootstrap import Driver
from sparkcat.config.worker import WorkerConfig
from sparkcat.converters import converter_for
from tests.broker import java
from tests.connect_worker import CONNECT_JARS, ConnectWorker
from tests.integration.interop.test_connect_topics import write_lines
from tests.integration.runtime.test_driver import file_lines
from tests.kafka_helpers import create_topic, read_topic, wait_until

pytestmark = pytest.mark.integration

PROBE = r"""
import java.io.*;
import java.util.*;
import org.apache.kafka.connect.storage.Converter;

public class ConverterProbe {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        for (String line; (line = in.readLine()) != null; ) {
            String[] p = line.split(" ");
            Converter c = (Converter) Class.forName("org.apache.kafka.connect.converters." + p[1])
                    .getDeclaredConstructor().newInstance();
            c.configure(Map.of(), false);
            try {
                if (p[0].equals("ENC")) {
                    byte[] b = c.fromConnectData("t", null, p[2].equals("null") ? null : parse(p[1], p[2]));
                    System.out.println(b == null ? "null" : HexFormat.of().formatHex(b));
                } else {
                    Object v = c.toConnectData("t", p[2].equals("null") ? null : HexFormat.of().parseHex(p[2])).value();
                    System.out.println(v instanceof Float f ? Double.toString(f.doubleValue()) : String.valueOf(v));
                }
            } catch (Exception e) {
                System.out.println("ERR");
            }
        }
    }

    static Object parse(String cls, String s) {
        switch (cls) {
            case "LongConverter": return Long.parseLong(s);
            case "IntegerConverter": return Integer.parseInt(s);
            case "ShortConverter": return Short.parseShort(s);
            case "FloatConverter": return Float.parseFloat(s);
            case "DoubleConverter": return Double.parseDouble(s);
            default: return Boolean.parseBoolean(s);
        }
    }
}
"""

VALUES = {
    "LongConverter": [0, 1, -1, 256, 2**63 - 1, -2**63, 1732800000000],
    "IntegerConverter": [0, 1, -1, 65536, 2**31 - 1, -2**31],
    "ShortConverter": [0, 1, -1, 300, 2**15 - 1, -2**15],
    "DoubleConverter": [0.0, -0.0, 1.5, -2.25, 0.1, 1e308, 5e-324, math.inf, -math.inf],
    "FloatConverter": [0.0, 1.5, -2.25, 0.1, 3.4028234663852886e38, math.inf],
    "BooleanConverter": [True, False],
}
#: Bytes of a wrong length (and a boolean byte other than 0 and 1) for each.
BAD_BYTES = {"LongConverter": ["00", "0000000000000000ff"], "IntegerConverter": ["000000"],
             "ShortConverter": ["000000"], "DoubleConverter": ["00000000"], "FloatConverter": ["0000000000"],
             "BooleanConverter": ["", "0000", "02"]}


def _connect(lines: list[str], tmp_path) -> list[str]:
    """Each request line answered by Connect's own converter classes (connect-runtime 4.1.1)."""
    source = tmp_path / "ConverterProbe.java"
    source.write_text(PROBE)
    done = subprocess.run([java(), "-cp", str(CONNECT_JARS / "*"), str(source)], input="\n".join(lines) + "\n",
                          capture_output=True, text=True, timeout=120, check=True)
    return done.stdout.splitlines()


def _converter(name: str):
    return converter_for({"value.converter": f"org.apache.kafka.connect.converters.{name}"}, False)


def _java_text(value) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return repr(value)


def test_sparkcats_bytes_are_connects_and_each_reads_the_others(tmp_path):
    cases = [(name, v) for name, values in VALUES.items() for v in values]
    encoded = _connect([f"ENC {name} {_java_text(v)}" for name, v in cases] + ["ENC LongConverter null"], tmp_path)
    ours = [_converter(name).to_bytes(v, None).hex() for name, v in cases]
    assert encoded[:-1] == ours  # byte for byte, big-endian
    assert encoded[-1] == "null" and _converter("LongConverter").to_bytes(None, None) is None
    decoded = _connect([f"DEC {name} {hexed}" for (name, _), hexed in zip(cases, ours)] + ["DEC LongConverter null"],
                       tmp_path)
    for (name, value), hexed, text in zip(cases, ours, decoded):
        parse = {"BooleanConverter": lambda t: t == "true", "DoubleConverter": float, "FloatConverter": float}
        back = _converter(name).from_bytes(bytes.fromhex(hexed))
        assert back == parse.get(name, int)(text), (name, value, text)  # Connect's value of the same bytes
    assert decoded[-1] == "null" and _converter("LongConverter").from_bytes(None) is None


def test_bytes_connect_refuses_are_refused_by_sparkcat_too(tmp_path):
    cases = [(name, hexed) for name, bad in BAD_BYTES.items() for hexed in bad]
    answers = _connect([f"DEC {name} {hexed}" for name, hexed in cases], tmp_path)
    assert answers == ["ERR"] * len(cases)
    for name, hexed in cases:
        with pytest.raises(ValueError, match="Failed to deserialize"):
            _converter(name).from_bytes(bytes.fromhex(hexed))


LONG = "org.apache.kafka.connect.converters.LongConverter"
NUMBERS = [-3, 0, 1, 255, 1732800000000, 2**63 - 1]


def test_longs_a_connect_worker_writes_sparkcat_reads_and_the_other_way(broker, spark, tmp_path, unique_name):
    """Connect's FileStreamSource casts lines to int64 and writes them with LongConverter; sparkcat's file sink
    reads them with its LongConverter. sparkcat's increment source writes its values with LongConverter; Connect's
    FileStreamSink reads them with Connect's."""
    numbers, from_connect, prefix = tmp_path / "numbers.txt", f"{unique_name}-longs", f"{unique_name}-inc"
    create_topic(broker.bootstrap, from_connect)
    write_lines(numbers, [str(n) for n in NUMBERS])
    worker = WorkerConfig(state_dir=str(tmp_path / "state"), bootstrap_servers=broker.bootstrap,
                          config_topic=f"{unique_name}-sc-configs", offset_topic=f"{unique_name}-sc-offsets",
                          status_topic=f"{unique_name}-sc-status", file_allowed_dirs=[str(tmp_path)])
    read_by_us, read_by_connect = tmp_path / "ours.txt", tmp_path / "connects.txt"
    with ConnectWorker(broker.bootstrap, unique_name, log_dir=tmp_path / "connect") as connect, \
            Driver(spark, worker, rest=False, watch_pipelines=False) as driver:
        connect.request("POST", "/connectors", {"name": "longs", "config": {
            "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "file": str(numbers),
            "topic": from_connect, "value.converter": LONG, "transforms": "cast",
            "transforms.cast.type": "org.apache.kafka.connect.transforms.Cast$Value", "transforms.cast.spec": "int64"}})
        put = driver.herder.put_connector_config
        put("read-longs", {"connector.class": "file-sink", "file": str(read_by_us), "topics": from_connect,
                           "value.converter": LONG, "trigger.interval.ms": "300"})
        put("write-longs", {"connector.class": "increment", "increments": "1", "topic.prefix": prefix,
                            "records.per.poll": "10", "trigger.interval.ms": "300", "value.converter": LONG,
                            "transforms": "v", "transforms.v.field": "value",
                            "transforms.v.type": "org.apache.kafka.connect.transforms.ExtractField$Value"})
        connect.request("POST", "/connectors", {"name": "read-longs", "config": {
            "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector", "file": str(read_by_connect),
            "topics": f"{prefix}1", "value.converter": LONG}})
        wait_until(lambda: len(file_lines(read_by_us)) >= len(NUMBERS), timeout_s=120, message="sparkcat's file")
        assert [int(line) for line in file_lines(read_by_us)] == NUMBERS
        assert [len(v) for _, _, _, v in read_topic(broker.bootstrap, from_connect)] == [8] * len(NUMBERS)
        connect.wait_for(lambda: len(file_lines(read_by_connect)) >= 20, "Connect's sink to read sparkcat's longs",
                         timeout_s=120)
        assert file_lines(read_by_connect)[:20] == [str(n) for n in range(1, 21)]
