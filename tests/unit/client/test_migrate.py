"""migrate's checks before it stops anything (pure logic; the round trip runs against real runtimes in
tests/integration/interop)."""

from __future__ import annotations

from sparkcat.client.migrate import move


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
