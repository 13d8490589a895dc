"""The kafka copy sink's frame writer: dispatch and the options of Spark's Kafka writer (no Spark, no broker)."""

from __future__ import annotations

import pytest

from sparkcat.errors import ConfigError
from sparkcat.spark.handlers import frame_writer, handler_for
from sparkcat.spark.kafka_copy_writer import INTERCEPTOR, kafka_copy_handler, writer_options
from sparkcat.spark.plan import QueryPlan


def plan(connector_type: str = "sink", **config: str) -> QueryPlan:
    task = "sparkcat.connectors.kafka_sink:KafkaSinkTask"
    conf = {"name": "c", "connector.class": "kafka", "topics": "a", **config}
    return QueryPlan(connector="c", connector_type=connector_type,
                     connector_class="sparkcat.connectors.kafka_sink:KafkaSinkConnector",
                     task_class=task if connector_type == "sink" else "x:Y", connector_config=conf,
                     task_configs=[dict(conf, **{"task.id": "0"})], checkpoint_dir="/tmp/none",
                     bootstrap_servers="w:9092",
                     sink_task_class=None if connector_type == "sink" else task)


def test_a_kafka_sink_plan_dispatches_to_the_copy_writer():
    assert frame_writer(plan()) is kafka_copy_handler
    assert callable(handler_for(plan()))
    other = plan()
    other.task_class = "sparkcat.connectors.file_sink:FileStreamSinkTask"
    assert frame_writer(other) is None


def test_a_source_naming_the_kafka_sink_in_sink_keys_is_refused_clearly():
    with pytest.raises(ConfigError, match="writes to Kafka by default"):
        handler_for(plan("source"))


def test_options_layering_and_the_interceptor():
    opts = writer_options({"producer.override.linger.ms": "7", "producer.override.interceptor.classes": "a.B"},
                          "w:9092", {"producer.acks": "1", "security.protocol": "SSL", "consumer.fetch.min.bytes": "9",
                                     "log_level": "3", "admin.request.timeout.ms": "5"})
    assert opts["kafka.bootstrap.servers"] == "w:9092"
    assert opts["kafka.linger.ms"] == "7"                   # override wins
    assert opts["kafka.acks"] == "1"                        # worker producer setting beats the default
    assert opts["kafka.security.protocol"] == "SSL"         # worker client setting applies on its own cluster
    assert opts["kafka.compression.type"] == "lz4"          # copy default
    assert not {"kafka.fetch.min.bytes", "kafka.log_level", "kafka.request.timeout.ms"} & set(opts)
    assert opts["kafka.interceptor.classes"] == f"a.B,{INTERCEPTOR}"  # the user's first, ours last
    other = writer_options({"target.bootstrap.servers": "t:9092"}, "w:9092", {"security.protocol": "SSL"})
    assert other["kafka.bootstrap.servers"] == "t:9092" and "kafka.security.protocol" not in other
    assert other["kafka.interceptor.classes"] == INTERCEPTOR


def test_options_refuse_what_the_writer_cannot_honour():
    with pytest.raises(ConfigError, match="value.serializer"):
        writer_options({"producer.override.value.serializer": "x"}, "w:9092", {})
    with pytest.raises(ConfigError):
        writer_options({}, "", {})
