"""Validation of the error handling keys: accepted where records are converted, Connect's DLQ topic rules."""

from __future__ import annotations

import pytest

from sparkcat.policy.input_policy import InputPolicy
from sparkcat.config.validation import validate_connector_config

ALL = {"errors.tolerance": "all", "errors.log.enable": "true", "errors.log.include.messages": "true",
       "errors.deadletterqueue.topic.name": "bad-records", "errors.deadletterqueue.topic.replication.factor": "1",
       "errors.deadletterqueue.context.headers.enable": "true"}
SOURCE = {"name": "src", "connector.class": "increment", "increments": "1"}


OUT = "/tmp/sparkcat-unit/out.txt"
POLICY = InputPolicy.build(InputPolicy.default().plugin_packages, ("/tmp/sparkcat-unit",), {},
                           "/tmp/sparkcat-unit/state")


def errors_of(config: dict) -> dict[str, list[str]]:
    return validate_connector_config(config, POLICY).errors


def test_a_source_connector_writing_to_kafka_accepts_every_error_handling_key():
    assert errors_of({**SOURCE, **ALL}) == {}


def test_a_sink_task_driven_through_put_accepts_every_error_handling_key():
    config = {"name": "fs", "connector.class": "file-sink", "file": OUT, "topics": "in",
              **ALL}
    assert errors_of(config) == {}


def test_the_dlq_topic_may_not_be_one_the_sink_consumes():
    config = {"name": "fs", "connector.class": "file-sink", "file": OUT,
              "topics": "in, bad-records", **ALL}
    assert errors_of(config) == {"topics": [
        "The DLQ topic 'bad-records' may not be included in the list of topics ('topics=[in, bad-records]') "
        "consumed by the connector"]}
    config = {**config, "topics": "", "topics.regex": "bad-.*"}
    assert errors_of(config) == {"topics.regex": [
        "The DLQ topic 'bad-records' may not be matched by the regex for the topics ('topics.regex=bad-.*') "
        "consumed by the connector"]}
    assert errors_of({**config, "topics.regex": "bad"}) == {}  # Connect matches whole names


@pytest.mark.parametrize("config, why", [
    ({"name": "d", "connector.class": "delta", "topics": "t", "table.path": "/tmp/x", "value.schema": "a INT"},
     "DeltaSinkConnector writes whole micro-batches with Spark"),
    ({"name": "k", "connector.class": "kafka", "topics": "t"}, "KafkaSinkConnector writes whole micro-batches"),
    ({**SOURCE, "sink.connector.class": "file-sink", "sink.file": OUT},
     "a source connector with sink.* keys hands its records to that sink without converting them"),
])
@pytest.mark.parametrize("key, value", [("errors.tolerance", "all"), ("errors.log.enable", "true"),
                                        ("errors.deadletterqueue.topic.name", "bad-records")])
def test_connectors_that_convert_no_record_refuse_tolerance_log_and_dlq(config, why, key, value):
    errors = errors_of({**config, key: value})
    assert list(errors) == [key]
    assert errors[key][0].startswith(why)
    assert "no record can fail conversion and be skipped, logged or sent to a dead letter queue" in errors[key][0]


def test_connect_defaults_are_accepted_by_every_connector():
    defaults = {"errors.tolerance": "none", "errors.log.enable": "false", "errors.log.include.messages": "false",
                "errors.deadletterqueue.topic.name": ""}
    assert errors_of({"name": "k", "connector.class": "kafka", "topics": "t", **defaults}) == {}


def test_an_unknown_tolerance_is_refused_with_connects_values():
    assert "errors.tolerance" in errors_of({**SOURCE, "errors.tolerance": "some"})
