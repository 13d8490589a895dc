"""A connector config names a converter by Connect's class name, an alias, or a Python path, old or new."""

from __future__ import annotations

import pytest

from sparkcat.converters import JsonConverter, StringConverter, converter_for, is_builtin_converter


@pytest.mark.parametrize("name", [
    "org.apache.kafka.connect.storage.StringConverter", "string", "StringConverter",
    "sparkcat.converters.builtins:StringConverter",
    "sparkcat.connectors.converters:StringConverter",  # where built-ins lived before: configs in a log may say so
    "sparkcat.connectors.converters.StringConverter",
])
def test_each_name_of_a_builtin_gives_it_without_importing_a_plugin(name):
    assert is_builtin_converter(name)
    assert isinstance(converter_for({"value.converter": name}, is_key=False), StringConverter)


def test_no_converter_named_is_connects_default_json():
    converter = converter_for({}, is_key=True)
    assert isinstance(converter, JsonConverter) and converter.schemas_enable


def test_a_name_that_is_no_converter_is_refused():
    assert not is_builtin_converter("sparkcat.connectors.converters:NoSuch")
    with pytest.raises(TypeError, match="not a converter"):
        converter_for({"value.converter": "sparkcat.api.records:SinkRecord"}, is_key=False)
