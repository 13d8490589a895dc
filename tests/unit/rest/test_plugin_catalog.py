"""GET /connector-plugins?connectorsOnly=false lists transformations, predicates and converters, with their keys;
GET /connector-plugins/CLASS/config describes a converter of plugin.packages too."""

from __future__ import annotations

import pytest

from sparkcat import __version__
from sparkcat.config.worker import WorkerConfig
from sparkcat.errors import BadRequestError, NotFoundError
from sparkcat.policy.input_policy import InputPolicy
from sparkcat.rest.views import plugin_config

T = "org.apache.kafka.connect.transforms."


def test_connectors_only_false_lists_every_kind_of_plugin_as_connect_does(client):
    only = client.get("/connector-plugins").json()
    assert {p["type"] for p in only} == {"source", "sink"}
    everything = client.get("/connector-plugins", params={"connectorsOnly": "false"}).json()
    by_class = {p["class"]: p for p in everything}
    assert everything[:len(only)] == only
    assert by_class[T + "RegexRouter"] == {"class": T + "RegexRouter", "type": "transformation",
                                           "version": __version__}
    assert by_class[T + "Cast$Key"]["type"] == "transformation"
    assert by_class[T + "predicates.TopicNameMatches"]["type"] == "predicate"
    assert by_class["org.apache.kafka.connect.json.JsonConverter"]["type"] == "converter"
    assert by_class["io.confluent.connect.avro.AvroConverter"]["type"] == "converter"
    assert by_class["io.confluent.connect.json.JsonSchemaConverter"]["type"] == "converter"
    assert by_class["org.apache.kafka.connect.storage.SimpleHeaderConverter"]["type"] == "header_converter"
    assert "RegexRouter" not in by_class and "sql" not in by_class  # aliases are not plugins of their own
    assert all(set(p) == {"class", "type", "version"} for p in everything)


def test_a_transformations_config_is_the_keys_it_declares(client):
    keys = client.get(f"/connector-plugins/{T}TimestampConverter$Value/config").json()
    assert [k["name"] for k in keys] == ["field", "target.type", "format", "unix.precision",
                                         "replace.null.with.default"]
    assert keys[4]["type"] == "BOOLEAN" and keys[4]["default_value"] == "true"
    target = keys[1]
    assert target["required"] is True and target["type"] == "STRING"
    assert keys[3]["default_value"] == "milliseconds"
    assert [k["name"] for k in client.get("/connector-plugins/TopicNameMatches/config").json()] == ["pattern"]
    assert client.get(f"/connector-plugins/{T}Filter/config").json() == []


def test_a_converters_config_is_the_settings_it_takes(client):
    keys = client.get("/connector-plugins/org.apache.kafka.connect.json.JsonConverter/config").json()
    assert [k["name"] for k in keys] == ["schemas.enable", "schemas.cache.size", "decimal.format",
                                         "replace.null.with.default"]
    assert keys[0]["type"] == "BOOLEAN" and keys[0]["default_value"] == "true"


def test_json_schema_converters_config_is_the_registry_keys_and_its_own(client):
    keys = client.get("/connector-plugins/io.confluent.connect.json.JsonSchemaConverter/config").json()
    names = [k["name"] for k in keys]
    assert {"schema.registry.url", "max.retries", "decimal.format", "object.additional.properties"} <= set(names)


def test_protobuf_converters_config_is_the_registry_keys_and_its_own(client):
    keys = client.get("/connector-plugins/io.confluent.connect.protobuf.ProtobufConverter/config").json()
    names = [k["name"] for k in keys]
    assert {"schema.registry.url", "use.latest.version", "optional.for.nullables", "schemas.cache.size"} <= set(names)
    assert "enhanced.protobuf.schema.support" not in names


def test_a_plugins_config_answers_for_the_installed_version_only_kip_891(client):
    path = "/connector-plugins/increment/config"
    keys = client.get(path, params={"version": __version__}).json()
    assert {k["name"]: k for k in keys}["connector.plugin.version"]["default_value"] == __version__
    assert client.get(path, params={"version": "latest"}).json() == keys == client.get(path).json()
    wrong = client.get(path, params={"version": "[5.0,)"})
    assert wrong.status_code == 400
    assert wrong.json()["message"] == ("Plugin increment not found that matches the version range [5.0,), available "
                                       f"versions: [{__version__}]")
    bad = client.get(path, params={"version": "[1.0"})
    assert bad.status_code == 400 and bad.json()["message"] == "Invalid version specification: [1.0"
    assert client.get("/connector-plugins/nope/config", params={"version": "1.0"}).status_code == 404
    router = f"/connector-plugins/{T}RegexRouter/config"
    assert client.get(router, params={"version": f"[{__version__}]"}).status_code == 200
    assert client.get(router, params={"version": "[9,)"}).status_code == 400


def test_a_plugin_packages_converters_config_is_the_keys_it_declares_at_its_version(tmp_path):
    upper = "tests.unit.config.declaring_converter:UpperConverter"
    worker = WorkerConfig(state_dir=str(tmp_path), plugin_packages=["sparkcat", "tests.unit.config"])
    policy = InputPolicy.of(worker, None)
    keys = plugin_config(upper, policy)
    assert [(k["name"], k["type"], k["default_value"]) for k in keys] == [("strip", "BOOLEAN", "false")]
    assert plugin_config(upper, policy, version="[2.0,3.0)") == keys  # its plugin_version, 2.3.0
    with pytest.raises(BadRequestError, match=r"available versions: \[2.3.0\]"):
        plugin_config(upper, policy, version="[3.0,)")
    with pytest.raises(NotFoundError, match="Unknown plugin"):  # outside plugin.packages: not imported
        plugin_config(upper, InputPolicy.of(WorkerConfig(state_dir=str(tmp_path)), None))
    with pytest.raises(NotFoundError, match="Unknown plugin"):  # in the packages, but no converter
        plugin_config("tests.unit.config.declaring_converter:ConfigDef", policy)
