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
