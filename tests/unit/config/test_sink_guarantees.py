"""exactly.once.support on sink connectors (a sparkcat extension): required only where the connector says so."""

from __future__ import annotations

import pytest

from sparkcat.api.connector import ExactlyOnceSupport, SinkConnector, SinkTask
from sparkcat.policy.input_policy import InputPolicy
from sparkcat.config.sink_guarantees import NO_PREFLIGHT, UNSUPPORTED, sink_exactly_once_errors
from sparkcat.config.validation import validate_connector_config


def errors(config: dict) -> list[str]:
    return validate_connector_config({"name": "c", "topics": "t", **config}).errors.get("exactly.once.support", [])


@pytest.mark.parametrize("value", ["required", "REQUIRED", "requested"])
def test_kafka_copy_accepts_required_on_its_own_cluster(value):
    assert errors({"connector.class": "kafka", "exactly.once.support": value}) == []


def test_kafka_copy_to_another_cluster_refuses_required_with_connects_message():
    found = errors({"connector.class": "kafka", "exactly.once.support": "required",
                    "target.bootstrap.servers": "elsewhere:9092"})
    assert found == [f"{UNSUPPORTED} (connector class KafkaSinkConnector)"]


def test_delta_always_and_file_sink_with_one_task_accept_required(tmp_path):
    assert errors({"connector.class": "delta", "table.path": str(tmp_path / "t"), "exactly.once.support": "required",
                   "tasks.max": "3"}) == []
    file_sink = {"connector.class": "file-sink", "file": str(tmp_path / "out.txt"), "exactly.once.support": "required"}
    policy = InputPolicy.build(["sparkcat.connectors"], [str(tmp_path)], {}, str(tmp_path))
    assert validate_connector_config({"name": "c", "topics": "t", **file_sink}, policy).errors == {}
    found = validate_connector_config({"name": "c", "topics": "t", **file_sink, "tasks.max": "2"}, policy).errors
    assert found["exactly.once.support"] == [f"{UNSUPPORTED} (connector class FileStreamSinkConnector)"]


def test_an_unknown_value_is_refused():
    assert errors({"connector.class": "kafka", "exactly.once.support": "always"})


class _Silent(SinkConnector):
    def start(self, config): ...
    def task_class(self): return SinkTask
    def task_configs(self, max_tasks): return [{}]


class _Broken(_Silent):
    def exactly_once_support(self, config):
        raise ValueError("cannot tell")


class _Sure(_Silent):
    def exactly_once_support(self, config):
        return ExactlyOnceSupport.SUPPORTED


def test_a_sink_without_the_hook_or_whose_hook_fails_refuses_required():
    required = {"exactly.once.support": "required"}
    [silent] = sink_exactly_once_errors(_Silent, required)
    assert silent.errors == [f"{NO_PREFLIGHT} (connector class _Silent)"]
    [broken] = sink_exactly_once_errors(_Broken, required)
    assert broken.errors == ["An unexpected error occurred during validation: cannot tell"]
    assert sink_exactly_once_errors(_Sure, required) == []
    assert sink_exactly_once_errors(_Silent, {"exactly.once.support": "requested"}) == []


