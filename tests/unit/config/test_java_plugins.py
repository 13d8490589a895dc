"""Java connectors on plugin.path, as validation and the worker config see them (a fake catalog: pure logic).

The catalog itself (Connect's classes in the driver JVM) is tested against a real Connect worker in
tests/integration/interop/test_plugin_path.py.
"""

from __future__ import annotations

import pytest

from sparkcat.config.validation import java_connector_refusal, validate_connector_config
from sparkcat.config.worker import load_worker_config
from sparkcat.errors import ConfigError
from sparkcat.policy.input_policy import InputPolicy
from sparkcat.config.worker import WorkerConfig

FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"


class FakeCatalog:
    """Answers as ConnectHost would for one Java source connector; records what it was asked to validate."""

    def __init__(self) -> None:
        self.validated: list[dict] = []

    def connector_type(self, name: str) -> str | None:
        return "source" if name in (FILE_SOURCE, "FileStreamSource") else None

    def validate(self, config, exactly_once=False):
        self.validated.append(dict(config))
        topic_errors = [] if config.get("topic") else ["Invalid value  for configuration topic: String must be non-empty"]
        return {"name": FILE_SOURCE, "error_count": len(topic_errors), "groups": ["Common"], "configs": [
            {"definition": {"name": "file"}, "value": {"name": "file", "value": config.get("file"), "errors": []}},
            {"definition": {"name": "topic"}, "value": {"name": "topic", "value": config.get("topic"),
                                                        "errors": topic_errors}}]}


def policy(tmp_path, catalog, **worker) -> InputPolicy:
    return InputPolicy.of(WorkerConfig(state_dir=str(tmp_path / "state"), **worker), catalog)


def test_a_java_connector_is_validated_by_its_catalog_never_as_the_python_port_of_its_name(tmp_path):
    catalog = FakeCatalog()
    result = validate_connector_config({"connector.class": FILE_SOURCE, "file": "/x", "topic": ""},
                                       policy(tmp_path, catalog))
    assert result.connector_type == "source" and result.errors == {"topic": [
        "Invalid value  for configuration topic: String must be non-empty"]}
    assert catalog.validated == [{"connector.class": FILE_SOURCE, "file": "/x", "topic": ""}]
    # without plugin.path the same name is sparkcat's built-in port, validated by its own ConfigDef
    assert validate_connector_config({"connector.class": FILE_SOURCE, "file": "/x", "topic": ""},
                                     policy(tmp_path, None)).connector_class == "FileStreamSourceConnector"


def test_placeholders_reach_the_java_connector_resolved_and_the_response_unresolved(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARKCAT_TEST_TOPIC", "lines")
    catalog = FakeCatalog()
    providers = {"config.providers": "env",
                 "config.providers.env.class": "org.apache.kafka.common.config.provider.EnvVarConfigProvider"}
    result = validate_connector_config({"connector.class": FILE_SOURCE, "topic": "${env:SPARKCAT_TEST_TOPIC}"},
                                       policy(tmp_path, catalog, config_providers=providers))
    assert catalog.validated[0]["topic"] == "lines" and result.errors == {}
    assert [c["value"]["value"] for c in result.response["configs"] if c["value"]["name"] == "topic"] == [
        "${env:SPARKCAT_TEST_TOPIC}"]


def test_what_sparkcat_cannot_run_of_a_java_connector_is_refused_with_the_reason(tmp_path):
    class WithSink(FakeCatalog):
        def connector_type(self, name):
            return "sink" if name == "FileStreamSink" else super().connector_type(name)

    at_least_once = policy(tmp_path, WithSink(), exactly_once_source_support="disabled", bootstrap_servers="b:9092")
    assert java_connector_refusal({"connector.class": "FileStreamSource"}, at_least_once) is None
    assert java_connector_refusal({"connector.class": "FileStreamSink"}, at_least_once) is None
    embedded = java_connector_refusal({"connector.class": FILE_SOURCE, "sink.connector.class": "file-sink"},
                                      at_least_once)
    assert embedded is not None and "sink.* keys" in embedded
    boundaries = java_connector_refusal({"connector.class": FILE_SOURCE, "transaction.boundary": "Connector"},
                                        policy(tmp_path, WithSink(), bootstrap_servers="b:9092"))
    assert boundaries is not None and "transaction.boundary=connector is refused" in boundaries
    assert java_connector_refusal({"connector.class": FILE_SOURCE, "transaction.boundary": "interval"},
                                  policy(tmp_path, WithSink(), bootstrap_servers="b:9092")) is None
    own_offsets = java_connector_refusal({"connector.class": FILE_SOURCE, "topic.creation.default.partitions": "3",
                                          "offsets.storage.topic": "mine"}, at_least_once)
    assert own_offsets is not None and "so offsets.storage.topic is refused" in own_offsets
    assert "topic.creation" not in own_offsets
    # KIP-158: a Java source's tasks create their topics (Connect's TopicCreation in the Kafka Connect host)
    assert java_connector_refusal({"connector.class": FILE_SOURCE, "topic.creation.default.partitions": "3",
                                   "topic.creation.default.replication.factor": "1"}, at_least_once) is None
    assert java_connector_refusal({"connector.class": "increment"}, at_least_once) is None
    assert java_connector_refusal({"connector.class": FILE_SOURCE}, policy(tmp_path, None)) is None


def test_topic_creation_keys_connect_would_ignore_are_refused_for_a_java_source_too(tmp_path):
    creation = {"connector.class": FILE_SOURCE, "file": "/x", "topic": "t",
                "topic.creation.default.partitions": "3", "topic.creation.default.replication.factor": "1",
                "topic.creation.default.include": "t.*", "topic.creation.unlisted.partitions": "2"}
    result = validate_connector_config(creation, policy(tmp_path, FakeCatalog()))
    assert sorted(result.errors) == ["topic.creation.default.include", "topic.creation.unlisted.partitions"]
    assert "which topic.creation.groups does not list" in result.errors["topic.creation.unlisted.partitions"][0]
    assert result.response["error_count"] == 2
    shown = {c["value"]["name"]: c for c in result.response["configs"]}
    assert shown["topic.creation.unlisted.partitions"]["definition"] is None  # Connect's response has no such key
    disabled = validate_connector_config(creation, policy(tmp_path, FakeCatalog(), topic_creation_enable=False))
    assert "topic.creation.enable=false on this worker" in disabled.errors["topic.creation.default.partitions"][0]


def test_plugin_path_and_discovery_are_connects_worker_keys(tmp_path):
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    conf = tmp_path / "worker.yaml"
    conf.write_text(f"plugin.path: [{plugins}]\nplugin.discovery: SERVICE_LOAD\n")
    worker = load_worker_config(conf)
    assert worker.plugin_path == [str(plugins)] and worker.plugin_discovery == "service_load"
    conf.write_text(f"plugin.path: {tmp_path / 'missing'}\n")
    with pytest.raises(ConfigError, match="plugin.path entry .*missing.* is not a directory or a jar"):
        load_worker_config(conf)
    conf.write_text("plugin.discovery: sometimes\n")
    with pytest.raises(ConfigError, match="plugin.discovery"):
        load_worker_config(conf)


def test_the_offline_check_says_it_does_not_look_at_plugin_path(tmp_path, capsys):
    from sparkcat.cli.main import main

    plugins = tmp_path / "plugins"
    plugins.mkdir()
    conf = tmp_path / "worker.yaml"
    conf.write_text(f"plugin.path: [{plugins}]\nstate.dir: {tmp_path / 'state'}\n")
    spec = tmp_path / "inc.yaml"
    spec.write_text("name: inc\nconfig:\n  connector.class: increment\n  increments: '1'\n"
                    "  sink.connector.class: file-sink\n  sink.file: out.txt\n")
    main(["validate", "--worker-config", str(conf), str(spec)])
    assert "plugin.path is not looked at offline" in capsys.readouterr().err
