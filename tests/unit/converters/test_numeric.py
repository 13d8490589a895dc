"""Connect's number and boolean converters: big-endian bytes, nulls as nulls, other types and sizes refused.

The bytes are compared with connect-runtime 4.1.1's own converters in
tests/integration/interop/test_numeric_converters.py; here, what a connector config sees.
"""

from __future__ import annotations

import pytest

from sparkcat.config.validation import validate_connector_config
from sparkcat.converters import converter_for, is_builtin_converter

PACKAGE = "org.apache.kafka.connect.converters."


def _value_converter(name: str):
    return converter_for({"value.converter": name}, is_key=False)


@pytest.mark.parametrize("name, value, data", [
    ("LongConverter", 1, b"\x00" * 7 + b"\x01"),
    ("IntegerConverter", -2, b"\xff\xff\xff\xfe"),
    ("ShortConverter", 258, b"\x01\x02"),
    ("DoubleConverter", 1.0, b"\x3f\xf0" + b"\x00" * 6),
    ("FloatConverter", -2.0, b"\xc0\x00\x00\x00"),
    ("BooleanConverter", True, b"\x01"),
])
def test_connects_class_names_give_its_byte_layouts_both_ways(name, value, data):
    assert is_builtin_converter(PACKAGE + name)
    converter = _value_converter(PACKAGE + name)
    assert converter.to_bytes(value, None) == data and converter.from_bytes(data) == value
    assert converter.to_bytes(None, None) is None and converter.from_bytes(None) is None


@pytest.mark.parametrize("name, value", [
    ("long", "1"), ("long", True), ("long", 2**63), ("int", 2**31), ("short", -2**15 - 1), ("double", "1.0"),
    ("boolean", 1),
])
def test_a_value_the_converter_cannot_write_fails_its_record(name, value):
    with pytest.raises((TypeError, ValueError)):
        _value_converter(name).to_bytes(value, None)


def test_bytes_of_another_length_fail_with_connects_message():
    with pytest.raises(ValueError, match="Size of data received by LongDeserializer is not 8"):
        _value_converter("long").from_bytes(b"\x00\x01")


def test_a_connector_may_name_them_and_so_may_the_worker(tmp_path):
    from sparkcat.config.worker import WorkerConfig

    config = {"name": "n", "connector.class": "file-source", "file": "state/in.txt", "topic": "t",
              "key.converter": PACKAGE + "IntegerConverter", "value.converter": "boolean"}
    assert validate_connector_config(config).errors == {}
    assert WorkerConfig(value_converter="double").converters == {"value.converter": PACKAGE + "DoubleConverter"}
