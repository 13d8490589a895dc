"""The ``type`` that ``GET /connectors/NAME`` and ``/status`` report for a Java connector on plugin.path."""

from __future__ import annotations

from sparkcat.config.worker import WorkerConfig
from sparkcat.policy.input_policy import InputPolicy
from sparkcat.runtime.control.status_view import connector_type

MIRROR_SOURCE = "org.apache.kafka.connect.mirror.MirrorSourceConnector"


class Catalog:
    """plugin.path as Connect's Plugins answers: MirrorMaker's source connector only."""

    def connector_type(self, name: str) -> str | None:
        return "source" if name == MIRROR_SOURCE else None


def test_a_java_source_with_no_python_twin_is_a_source_as_connect_reports_it(tmp_path):
    policy = InputPolicy.of(WorkerConfig(state_dir=str(tmp_path / "state")), Catalog())
    assert connector_type({"connector.class": MIRROR_SOURCE}, policy) == "source"
    assert connector_type({"connector.class": MIRROR_SOURCE}) == "unknown"  # no plugin.path: a class it cannot load
    assert connector_type({"connector.class": "file-sink"}, policy) == "sink"  # sparkcat's own, as before
