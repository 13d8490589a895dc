"""exactly.once.support and transaction.boundary: Kafka Connect's preflight checks and messages."""

from __future__ import annotations

import dataclasses

import pytest

from sparkcat.api.config import ConfigDef, Type

from sparkcat.api.connector import ExactlyOnceSupport, SinkConnector, SinkTask, SourceConnector, SourceTask
from sparkcat.policy.input_policy import InputPolicy
from sparkcat.config import exactly_once
from sparkcat.config.validation import validate_connector_config
from sparkcat.config.worker import WorkerConfig

KAFKA_WORKER = InputPolicy.of(WorkerConfig(bootstrap_servers="broker:9092", plugin_packages=[
    "sparkcat.connectors", "tests.unit.config"]))
INCREMENT = {"name": "inc", "connector.class": "increment", "increments": "1"}


class Silent(SourceConnector):
    """A source that does not say whether it is exactly-once (Connect's default: null)."""

    def start(self, config): ...
    def task_class(self): return SourceTask
    def task_configs(self, max_tasks): return [{}]


class Broken(Silent):
    def exactly_once_support(self, config):
        raise ValueError("  cannot tell  ")


class Refusing(Silent):
    def exactly_once_support(self, config):
        return ExactlyOnceSupport.UNSUPPORTED if config.get("mode") == "live" else ExactlyOnceSupport.SUPPORTED


def errors(config, policy=KAFKA_WORKER):
    return validate_connector_config(config, policy).errors


def test_required_is_accepted_for_the_built_in_sources_on_an_enabled_kafka_worker():
    assert errors({**INCREMENT, "exactly.once.support": "REQUIRED"}) == {}
    assert errors({"name": "f", "connector.class": "file-source", "file": "state/in.txt", "topic": "t",
                   "exactly.once.support": "required"}) == {}


def test_required_on_a_disabled_worker_gets_connects_message():
    disabled = dataclasses.replace(KAFKA_WORKER, exactly_once_source=False)
    assert errors({**INCREMENT, "exactly.once.support": "required"}, disabled) == {
        "exactly.once.support": ["This worker does not have exactly-once source support enabled."]}
    assert errors({**INCREMENT, "exactly.once.support": "requested"}, disabled) == {}


@pytest.mark.parametrize("cls, config, message", [
    (Silent, {}, exactly_once.NOT_DECLARED),
    (Refusing, {"mode": "live"}, "The connector does not support exactly-once semantics with the provided "
                                  "configuration."),
    (Broken, {}, "An unexpected error occurred during validation: cannot tell"),
])
def test_required_asks_the_connector_and_reports_connects_messages(cls, config, message):
    assert exactly_once.source_errors(cls, {"exactly.once.support": "required", **config}, None, KAFKA_WORKER)[0] \
        .errors == [message]
    assert exactly_once.source_errors(cls, {"exactly.once.support": "requested", **config}, None, KAFKA_WORKER) == []
    assert exactly_once.NOT_DECLARED.startswith("The connector does not implement the API required for preflight "
                                                "validation of exactly-once source support.")


def test_a_file_source_without_a_file_does_not_support_exactly_once_as_in_connect():
    from sparkcat.connectors.file_source import FileStreamSourceConnector
    assert FileStreamSourceConnector().exactly_once_support({"file": ""}) == ExactlyOnceSupport.UNSUPPORTED
    assert FileStreamSourceConnector().exactly_once_support({"file": "a.txt"}) == ExactlyOnceSupport.SUPPORTED


def test_connector_defined_transaction_boundaries_are_refused_with_connects_message():
    assert errors({**INCREMENT, "transaction.boundary": "Connector"}) == {"transaction.boundary": [
        "The connector does not support connector-defined transaction boundaries with the given configuration. "
        "Please reconfigure it to use a different transaction boundary definition."]}
    assert errors({**INCREMENT, "transaction.boundary": "interval", "transaction.boundary.interval.ms": "5000"}) == {}
    assert "transaction.boundary.interval.ms" in errors({**INCREMENT, "transaction.boundary.interval.ms": "-1"})


def test_required_without_kafka_stores_is_refused_saying_why():
    local = InputPolicy.of(WorkerConfig())
    messages = errors({**INCREMENT, "exactly.once.support": "required"}, local)["exactly.once.support"]
    assert messages == [exactly_once.NO_KAFKA_STORES]
    assert "no bootstrap.servers" in messages[0] and "at-least-once" in messages[0]


class SilentSink(SinkConnector):
    def config_def(self): return ConfigDef().define("file", Type.STRING, None)
    def start(self, config): ...
    def task_class(self): return SinkTask
    def task_configs(self, max_tasks): return [{}]


class OnceSink(SilentSink):
    def exactly_once_support(self, config):
        return ExactlyOnceSupport.SUPPORTED if config.get("file") else ExactlyOnceSupport.UNSUPPORTED


def test_required_into_an_embedded_sink_asks_the_sink_with_its_config():
    here = "tests.unit.config.test_exactly_once"
    required = {**INCREMENT, "exactly.once.support": "required"}
    assert errors({**required, "sink.connector.class": f"{here}:OnceSink", "sink.file": "x"}) == {}
    assert errors({**required, "sink.connector.class": f"{here}:OnceSink"}) == {"exactly.once.support": [
        exactly_once.SINK_UNSUPPORTED.format(name=f"{here}:OnceSink")]}
    assert errors({**required, "sink.connector.class": f"{here}:SilentSink"}) == {"exactly.once.support": [
        exactly_once.SINK_NOT_DECLARED.format(name=f"{here}:SilentSink")]}
    # no Kafka needed: the sink's own idempotence carries the guarantee
    local = dataclasses.replace(KAFKA_WORKER, kafka_stores=False)
    assert errors({**required, "sink.connector.class": f"{here}:OnceSink", "sink.file": "x"}, local) == {}
