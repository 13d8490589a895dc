"""The worker's converters reach every connector that names none, on the executors that convert records (issue 43).

A worker file sets ``value.converter`` JsonConverter with ``value.converter.schemas.enable: false``, as a
Connect worker's connect-distributed.properties would. Sparkcat's own default is JsonConverter with the
schema envelope, so what reaches Kafka tells which converter ran: a source naming none writes bare JSON
objects, a source naming its own JsonConverter (without settings) writes the envelope, and a sink naming
none decodes the bare objects (with sparkcat's default it would fail each record: no envelope).
"""

from __future__ import annotations

import json

import pytest
import yaml

from sparkcat.config.worker import WorkerConfig, load_worker_config
from tests.integration.runtime.test_driver import file_lines, kafka_worker_fields, start_driver, states
from tests.java_plugins import connect_file_plugin
from tests.kafka_helpers import create_topic, read_topic, wait_until

pytestmark = pytest.mark.integration

JSON = "org.apache.kafka.connect.json.JsonConverter"
RECORDS = 20


def test_connectors_naming_no_converter_run_with_the_workers(spark, broker, tmp_path, unique_name):
    fields = kafka_worker_fields(broker.bootstrap, tmp_path, unique_name)
    path = tmp_path / "worker.yaml"
    path.write_text(yaml.safe_dump({
        "bootstrap.servers": broker.bootstrap, "state.dir": fields["state_dir"],
        "config.storage.topic": fields["config_topic"], "offset.storage.topic": fields["offset_topic"],
        "status.storage.topic": fields["status_topic"], "file.allowed.dirs": str(tmp_path),
        "value.converter": JSON, "value.converter.schemas.enable": False}))
    worker = load_worker_config(path)
    inherit, own, out = f"{unique_name}-i", f"{unique_name}-o", tmp_path / "out.txt"
    driver = start_driver(spark, worker)
    try:
        put = driver.herder.put_connector_config
        common = {"connector.class": "increment", "increments": "1", "records.per.poll": "10",
                  "trigger.interval.ms": "300"}
        put("inherits", {**common, "topic.prefix": inherit})
        put("own", {**common, "topic.prefix": own, "value.converter": JSON})
        put("to-file", {"connector.class": "file-sink", "file": str(out), "topics": f"{inherit}1",
                        "trigger.interval.ms": "300"})
        wait_until(lambda: len(read_topic(broker.bootstrap, f"{inherit}1")) >= RECORDS, timeout_s=180,
                   message="the inheriting source's records")
        wait_until(lambda: len(read_topic(broker.bootstrap, f"{own}1")) >= RECORDS, timeout_s=180,
                   message="the own-converter source's records")
        bare = json.loads(read_topic(broker.bootstrap, f"{inherit}1")[0][3])
        assert set(bare) == {"position", "value", "increment"}  # the worker's schemas.enable=false
        enveloped = json.loads(read_topic(broker.bootstrap, f"{own}1")[0][3])
        assert set(enveloped) == {"schema", "payload"}  # its own class: only its own settings (none)
        wait_until(lambda: len(file_lines(out)) >= RECORDS, timeout_s=180, message="the sink's file")
        assert "position" in file_lines(out)[0]
        assert states(driver, "to-file") == ("RUNNING", ["RUNNING"])
        assert "value.converter" not in driver.herder.connector_config("inherits")  # stored as written
    finally:
        driver.stop()


def test_a_java_connector_naming_none_runs_with_the_workers_converters(spark, broker, tmp_path, unique_name):
    """Apache's FileStreamSource from plugin.path under a worker whose value.converter is StringConverter: the lines
    reach Kafka as they are (the JVM host's own default, JsonConverter, would quote each one)."""
    plugins = connect_file_plugin(tmp_path / "plugins")
    worker = WorkerConfig(**kafka_worker_fields(broker.bootstrap, tmp_path, unique_name),
                          exactly_once_source_support="disabled", plugin_path=[str(plugins)],
                          plugin_discovery="service_load", key_converter="string", value_converter="string")
    topic, source = f"{unique_name}-lines", tmp_path / "lines.txt"
    create_topic(broker.bootstrap, topic)
    lines = [f"line {i}" for i in range(30)]
    source.write_text("".join(f"{line}\n" for line in lines))
    driver = start_driver(spark, worker)
    try:
        driver.herder.put_connector_config("java-file", {
            "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "file": str(source),
            "topic": topic, "tasks.max": "1", "trigger.interval.ms": "300"})
        wait_until(lambda: len(read_topic(broker.bootstrap, topic)) >= len(lines), timeout_s=180,
                   message="the Java source's lines")
        assert [v.decode() for _, _, _, v in read_topic(broker.bootstrap, topic)] == lines
    finally:
        driver.stop()
