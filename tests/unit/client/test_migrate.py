"""migrate's checks before it stops anything (pure logic; the round trip runs against real runtimes in
tests/integration/interop)."""

from __future__ import annotations

from sparkcat.client.migrate import JAVA_REFUSAL, move
from sparkcat.client.rest import ApiError
from sparkcat.config.validation import JAVA_CONNECTOR_BOUNDARIES, JAVA_EMBEDDED_SINK, JAVA_UNSUPPORTED_KEYS


class FakeRuntime:
    """Only what move() reads before deciding; records every call that would change the runtime."""

    def __init__(self, config: dict[str, str]):
        self._config = config
        self.changes: list[str] = []

    def config(self, name: str) -> dict[str, str]:
        return dict(self._config)

    def validate(self, cls: str, config: dict[str, str]) -> dict:
        return {"error_count": 0, "configs": []}

    def __getattr__(self, name: str):
        def change(*args, **kwargs):
            self.changes.append(name)
        return change


def test_a_connector_whose_secret_reads_back_hidden_is_not_moved_and_keeps_running():
    source = FakeRuntime({"connector.class": "jdbc-sink", "connection.password": "[hidden]", "topics": "t"})
    target = FakeRuntime({})
    result = move(source, target, "pg")
    assert result.outcome == "secrets" and "connection.password" in result.detail
    assert source.changes == [] and target.changes == []  # not stopped in the source, nothing created


class RefusingTarget(FakeRuntime):
    """A target that validates the config but answers creation with the 400 sparkcat gives a Java source with
    ``transaction.boundary=connector``."""

    def connector(self, name: str) -> dict:
        raise ApiError(404, f"Connector {name} not found")

    def create(self, name: str, config: dict[str, str], initial_state: str | None = None) -> dict:
        raise ApiError(400, f"Connector {name}: " + JAVA_CONNECTOR_BOUNDARIES.format(cls=config["connector.class"]))


def test_a_java_connector_the_target_will_not_run_is_java_only_with_its_reason_and_keeps_running_in_the_source():
    cls = "org.example.TransactionalSource"
    source = FakeRuntime({"connector.class": cls, "transaction.boundary": "connector"})
    result = move(source, RefusingTarget({}), "txn")
    assert result.outcome == "java-only" and not result.ok
    assert f"Connector txn: {cls} is a Java source connector found on plugin.path" in result.detail
    assert "transaction.boundary=connector is refused" in result.detail
    assert source.changes == []  # never stopped


def test_every_refusal_of_a_java_connector_on_plugin_path_is_recognised_as_java_only():
    for message in (JAVA_EMBEDDED_SINK, JAVA_CONNECTOR_BOUNDARIES, JAVA_UNSUPPORTED_KEYS):
        assert JAVA_REFUSAL in message.format(cls="org.example.Connector", keys="k")


class MovingSource(FakeRuntime):
    """A source that stops at once and has no offsets."""

    def status(self, name: str) -> dict:
        return {"connector": {"state": "STOPPED"}, "tasks": []}

    def offsets(self, name: str) -> dict:
        return {"offsets": []}


class CreatingTarget(FakeRuntime):
    """A target without the connector that keeps the config it was created with."""

    created: dict[str, str] | None = None

    def connector(self, name: str) -> dict:
        raise ApiError(404, f"Connector {name} not found")

    def create(self, name: str, config: dict[str, str], initial_state: str | None = None) -> dict:
        self.created = dict(config)
        return {}


AVRO = "io.confluent.connect.avro.AvroConverter"
STRING = "org.apache.kafka.connect.storage.StringConverter"
CONNECT_WORKER = {"bootstrap.servers": "b:9092", "group.id": "connect", "key.converter": STRING,
                  "value.converter": AVRO, "value.converter.schema.registry.url": "http://registry:8081"}


def test_the_source_workers_converters_go_into_a_moved_connector_that_names_none():
    source, target, lines = MovingSource({"connector.class": "file-source", "topic": "t"}), CreatingTarget({}), []
    result = move(source, target, "lines", CONNECT_WORKER, lines.append)
    assert result.ok and lines == []
    assert target.created == {"connector.class": "file-source", "topic": "t", "key.converter": STRING,
                              "value.converter": AVRO, "value.converter.schema.registry.url": "http://registry:8081"}


def test_a_connectors_own_converter_keeps_only_its_own_settings_when_moved():
    own = {"connector.class": "file-source", "topic": "t", "value.converter": STRING}
    target = CreatingTarget({})
    move(MovingSource(own), target, "lines", CONNECT_WORKER, [].append)
    assert target.created == {**own, "key.converter": STRING}  # no registry URL: its own StringConverter


def test_a_worker_setting_its_converter_never_reads_is_left_out_with_a_warning_not_carried_to_a_refusal():
    worker = {**CONNECT_WORKER, "key.converter.schemas.enable": "false"}  # Connect's StringConverter ignores it
    source, target, lines = MovingSource({"connector.class": "file-source", "topic": "t"}), CreatingTarget({}), []
    assert move(source, target, "lines", worker, lines.append).ok
    assert lines == ["lines: warning: the source worker's key.converter.schemas.enable is not a setting of its "
                     f"{STRING}; Kafka Connect ignores it, so it is left out (sparkcat refuses a key it would "
                     "ignore)"]
    assert "key.converter.schemas.enable" not in target.created and target.created["key.converter"] == STRING


def test_without_the_source_workers_config_a_connector_naming_none_moves_with_a_warning_naming_it():
    source, target, lines = MovingSource({"connector.class": "file-source", "key.converter": STRING}), \
        CreatingTarget({}), []
    assert move(source, target, "lines", None, lines.append).ok
    assert len(lines) == 1 and lines[0].startswith("lines: warning:") and "value.converter" in lines[0]
    assert "key.converter" not in lines[0] and "--connect-worker-config" in lines[0]
    assert target.created == {"connector.class": "file-source", "key.converter": STRING}


def test_the_connect_workers_properties_file_gives_its_converters_to_the_cli(tmp_path):
    import argparse

    from sparkcat.cli.migrate import _source_converters

    path = tmp_path / "connect-distributed.properties"
    path.write_text("bootstrap.servers=b:9092\nkey.converter=org.apache.kafka.connect.storage.StringConverter\n"
                    "value.converter: io.confluent.connect.avro.AvroConverter\n"
                    "value.converter.schema.registry.url=http\\://registry\\:8081\n")
    args = argparse.Namespace(to_connect=None, connect_worker_config=str(path), worker_config=None)
    converters = _source_converters(args)
    assert {k: converters[k] for k in ("key.converter", "value.converter", "value.converter.schema.registry.url")} \
        == {"key.converter": STRING, "value.converter": AVRO, "value.converter.schema.registry.url": "http://registry:8081"}
    assert _source_converters(argparse.Namespace(to_connect=None, connect_worker_config=None)) is None


def test_moving_back_to_connect_carries_sparkcats_worker_converters_and_its_json_default(tmp_path):
    import argparse

    from sparkcat.cli.migrate import _source_converters

    path = tmp_path / "worker.yaml"
    path.write_text("value.converter: string\n")
    args = argparse.Namespace(to_connect="http://connect:8083", connect_worker_config=None, worker_config=str(path))
    assert _source_converters(args) == {"key.converter": "org.apache.kafka.connect.json.JsonConverter",
                                        "value.converter": STRING}
