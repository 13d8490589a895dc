"""KIP-891's ``*.plugin.version`` keys: accepted when the one installed version satisfies them, refused naming the
key otherwise (``config/plugin_versions.py``, through ``validate_connector_config``)."""

from __future__ import annotations

import pytest

from sparkcat import __version__
from sparkcat.config.plugin_versions import requirement
from sparkcat.config.validation import validate_connector_config
from sparkcat.config.worker import WorkerConfig
from sparkcat.errors import ConfigError
from sparkcat.policy.input_policy import InputPolicy

INCREMENT = {"name": "inc", "connector.class": "increment", "increments": "1", "topic.prefix": "seq_"}
ROUTER = {"transforms": "r", "transforms.r.type": "org.apache.kafka.connect.transforms.RegexRouter",
          "transforms.r.regex": "(.*)", "transforms.r.replacement": "copy-$1"}
FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
STRING_CONVERTER = "org.apache.kafka.connect.storage.StringConverter"
NOT_FOUND = "Plugin {plugin} not found that matches the version range {range}, available versions: [{version}]"


def test_a_bare_version_is_a_hard_requirement_as_on_connect():
    assert str(requirement("3.6.1.Final")) == "[3.6.1.Final,3.6.1.Final]"
    assert requirement(" 4.1.1 ").contains("4.1.1") and not requirement("4.1.1").contains("4.1.2")
    assert requirement("latest") is None and requirement(None) is None
    assert str(requirement("[1.0,2.0)")) == "[1.0,2.0)"


@pytest.mark.parametrize("spec", [__version__, f"[{__version__}]", "[0.1,)", "(,99]", "latest"])
def test_a_spec_the_installed_version_satisfies_is_accepted_for_every_versioned_key(spec):
    config = {**INCREMENT, **ROUTER, "value.converter": "string", "connector.plugin.version": spec,
              "key.converter.plugin.version": spec, "value.converter.plugin.version": spec,
              "header.converter.plugin.version": spec, "transforms.r.plugin.version": spec,
              "predicates": "p", "predicates.p.type": "TopicNameMatches", "predicates.p.pattern": "s.*",
              "predicates.p.plugin.version": spec}
    assert validate_connector_config(config).errors == {}


def test_the_connectors_version_refused_on_the_key_and_the_class_with_connects_message():
    result = validate_connector_config({**INCREMENT, "connector.plugin.version": "[5.0,)"})
    message = NOT_FOUND.format(plugin="increment", range="[5.0,)", version=__version__)
    assert result.errors == {"connector.plugin.version": [message], "connector.class": [message]}
    assert result.error_count == 2
    with pytest.raises(ConfigError, match=r"connector.plugin.version: Plugin increment not found"):
        result.raise_if_invalid()


def test_a_soft_version_that_is_not_the_installed_one_is_refused_as_an_exact_one():
    result = validate_connector_config({**INCREMENT, "connector.plugin.version": "0.0.9"})
    assert result.errors["connector.plugin.version"] == [
        NOT_FOUND.format(plugin="increment", range="[0.0.9,0.0.9]", version=__version__)]


def test_an_invalid_spec_is_refused_naming_the_key():
    result = validate_connector_config({**INCREMENT, "connector.plugin.version": "[1.0",
                                        **ROUTER, "transforms.r.plugin.version": "(1.0)"})
    assert result.errors == {
        "connector.plugin.version": ["Invalid value [1.0 for configuration connector.plugin.version: "
                                     "Unbounded range: [1.0"],
        "transforms.r.plugin.version": ["Invalid value (1.0) for configuration transforms.r.plugin.version: "
                                        "Single version must be surrounded by []: (1.0)"]}


def test_converter_versions_are_checked_against_the_converter_in_effect():
    errors = validate_connector_config({**INCREMENT, "key.converter.plugin.version": "[9,)"}).errors
    message = NOT_FOUND.format(plugin="org.apache.kafka.connect.json.JsonConverter", range="[9,)", version=__version__)
    assert errors == {"key.converter.plugin.version": [message], "key.converter": [message]}
    errors = validate_connector_config({**INCREMENT, "header.converter.plugin.version": "[9,)"}).errors
    header = errors["header.converter.plugin.version"][0]
    assert "org.apache.kafka.connect.storage.SimpleHeaderConverter not found" in header


def test_a_plugin_converter_is_checked_against_its_own_plugin_version():
    policy = InputPolicy.of(WorkerConfig(plugin_packages=["sparkcat.connectors", "tests.unit.config"]))
    upper = {**INCREMENT, "value.converter": "tests.unit.config.declaring_converter:UpperConverter"}
    assert validate_connector_config({**upper, "value.converter.plugin.version": "2.3.0"}, policy).errors == {}
    errors = validate_connector_config({**upper, "value.converter.plugin.version": "[3.0,)"}, policy).errors
    assert errors["value.converter.plugin.version"] == [NOT_FOUND.format(
        plugin="tests.unit.config.declaring_converter:UpperConverter", range="[3.0,)", version="2.3.0")]


def test_transform_and_predicate_versions_are_refused_on_their_key_and_type_as_on_connect():
    config = {**INCREMENT, **ROUTER, "transforms.r.plugin.version": "[2,3)", "transforms.r.predicate": "p",
              "predicates": "p", "predicates.p.type": "TopicNameMatches", "predicates.p.pattern": "s.*",
              "predicates.p.plugin.version": "(,0.0.1]"}
    errors = validate_connector_config(config).errors
    assert set(errors) == {"transforms.r.plugin.version", "transforms.r.type", "predicates.p.plugin.version",
                           "predicates.p.type"}
    message = NOT_FOUND.format(plugin="TopicNameMatches", range="(,0.0.1]", version=__version__)
    assert errors["predicates.p.plugin.version"] == errors["predicates.p.type"] == [message]


class VersionedCatalog:
    """Answers as ConnectHost does for connect-file 4.1.1: its definition shows the version, validation parses specs."""

    def connector_type(self, name):
        return "source" if name == FILE_SOURCE else None

    def plugin_config(self, name):
        return [{"name": "connector.plugin.version", "default_value": "4.1.1"}]

    def plugin_infos(self, connectors_only=True):
        converter = {"class": STRING_CONVERTER, "type": "converter", "version": "4.1.1"}
        return [{"class": FILE_SOURCE, "type": "source", "version": "4.1.1"}] + ([] if connectors_only else
                                                                                 [converter, converter])

    def validate(self, config, exactly_once=False):
        keys = ("connector.class", "connector.plugin.version", "topic", "key.converter", "key.converter.plugin.version")
        return {"name": FILE_SOURCE, "error_count": 0, "groups": ["Common"], "configs": [
            {"definition": {"name": k}, "value": {"name": k, "value": config.get(k), "errors": []}} for k in keys]}


def test_a_java_connectors_version_is_its_own_as_connects_classes_report_it(tmp_path):
    policy = InputPolicy.of(WorkerConfig(state_dir=str(tmp_path / "state")), VersionedCatalog())
    config = {"connector.class": FILE_SOURCE, "topic": "t"}
    assert validate_connector_config({**config, "connector.plugin.version": "4.1.1"}, policy).errors == {}
    result = validate_connector_config({**config, "connector.plugin.version": "[5.0,)"}, policy)
    message = NOT_FOUND.format(plugin=FILE_SOURCE, range="[5.0,)", version="4.1.1")
    assert result.errors == {"connector.class": [message], "connector.plugin.version": [message]}
    assert result.response["error_count"] == 2


def test_a_java_connectors_converter_version_is_the_java_converters_as_connect_lists_it(tmp_path):
    policy = InputPolicy.of(WorkerConfig(state_dir=str(tmp_path / "state")), VersionedCatalog())
    config = {"connector.class": FILE_SOURCE, "topic": "t", "key.converter": STRING_CONVERTER}
    assert validate_connector_config({**config, "key.converter.plugin.version": "4.1.1"}, policy).errors == {}
    errors = validate_connector_config({**config, "key.converter.plugin.version": "[9,)"}, policy).errors
    message = NOT_FOUND.format(plugin=STRING_CONVERTER, range="[9,)", version="4.1.1, 4.1.1")  # two copies found
    assert errors == {"key.converter": [message], "key.converter.plugin.version": [message]}


def test_converters_and_transforms_get_no_plugin_version_setting():
    from sparkcat.converters.registry import converter_for
    from sparkcat.transforms import parse_chain

    converter = converter_for({"value.converter": "org.apache.kafka.connect.json.JsonConverter",
                               "value.converter.plugin.version": __version__,
                               "value.converter.schemas.enable": "false"}, is_key=False)
    assert converter is not None
    assert parse_chain({**ROUTER, "transforms.r.plugin.version": __version__})


def test_the_workers_converter_versions_stop_the_worker_naming_its_key(tmp_path):
    from sparkcat.config.worker import load_worker_config

    path = tmp_path / "worker.yaml"
    path.write_text('key.converter: string\nkey.converter.plugin.version: "[9,)"\n')
    with pytest.raises(ConfigError) as e:
        load_worker_config(path)
    assert e.value.errors["key.converter.plugin.version"] == [NOT_FOUND.format(
        plugin="org.apache.kafka.connect.storage.StringConverter", range="[9,)", version=__version__)]
    path.write_text('value.converter.plugin.version: "(1"\n')
    with pytest.raises(ConfigError, match=r"value.converter.plugin.version: Unbounded range: \(1"):
        load_worker_config(path)
    path.write_text(f'header.converter.plugin.version: "{__version__}"\nvalue.converter.plugin.version: latest\n')
    worker = load_worker_config(path)
    policy = InputPolicy.of(worker)
    assert validate_connector_config(INCREMENT, policy).errors == {}  # inherited by the connector, satisfied
