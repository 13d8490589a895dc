"""``sparkcat migrate`` between a real Kafka Connect worker and a sparkcat driver, each on its own topics.

A FileStreamSource moves to sparkcat with Connect's committed offset and back to Connect with
sparkcat's: the topic holds every line of the file exactly once. A connector whose class exists
only in Java is reported and left running in Connect.
"""

from __future__ import annotations

import os

import pytest

from sparkcat.bootstrap import Driver
from sparkcat.cli import main
from sparkcat.config.worker import WorkerConfig
from tests.broker import free_port
from tests.connect_worker import ConnectWorker
from tests.integration.interop.test_connect_topics import STRING, file_source, values, write_lines
from tests.kafka_helpers import create_topic, wait_until

pytestmark = pytest.mark.integration


def test_migrate_a_file_source_to_sparkcat_and_back_with_no_gap_or_duplicate(broker, spark, tmp_path, unique_name,
                                                                             capsys):
    source, topic = tmp_path / "in.txt", f"{unique_name}-lines"
    create_topic(broker.bootstrap, topic)
    lines = [f"line {i}" for i in range(300)]
    write_lines(source, lines)
    worker = WorkerConfig(state_dir=str(tmp_path / "state"), bootstrap_servers=broker.bootstrap,
                          config_topic=f"{unique_name}-sc-configs", offset_topic=f"{unique_name}-sc-offsets",
                          status_topic=f"{unique_name}-sc-status", file_allowed_dirs=[str(tmp_path)],
                          rest_host="127.0.0.1", rest_port=free_port())
    with ConnectWorker(broker.bootstrap, unique_name, log_dir=tmp_path / "connect") as connect, \
            Driver(spark, worker, rest=True, watch_pipelines=False) as driver:
        ours = f"http://127.0.0.1:{worker.rest_port}"
        connect.request("POST", "/connectors", {"name": "fs", "config": file_source(source, topic)})
        connect.request("POST", "/connectors", {"name": "heartbeats", "config": {
            "connector.class": "org.apache.kafka.connect.mirror.MirrorHeartbeatConnector",
            "source.cluster.alias": "a", "target.cluster.alias": "b", "emit.heartbeats.enabled": "false",
            "source.cluster.bootstrap.servers": broker.bootstrap, "target.cluster.bootstrap.servers": broker.bootstrap,
            "key.converter": STRING, "value.converter": STRING}})
        connect.wait_for(lambda: values(broker.bootstrap, topic) == lines, "Connect to copy the file")
        more = [f"more {i}" for i in range(100)]
        write_lines(source, more)
        lines += more

        capsys.readouterr()
        assert main(["migrate", "--from-connect", connect.url, "--url", ours]) == 1  # heartbeats stays
        out = capsys.readouterr().out
        assert "fs: moved" in out and "heartbeats: java-only" in out, out
        assert connect.request("GET", "/connectors/fs/status")["connector"]["state"] == "STOPPED"
        assert connect.request("GET", "/connectors/heartbeats/status")["connector"]["state"] == "RUNNING"
        wait_until(lambda: values(broker.bootstrap, topic) == lines, timeout_s=120,
                   message="sparkcat to go on from Connect's offset")
        wait_until(lambda: [o for _, o in driver.herder.connector_offsets("fs")] == [
            {"position": os.path.getsize(source)}], timeout_s=60, message="sparkcat's offset at the end")

        later = [f"later {i}" for i in range(50)]
        write_lines(source, later)
        lines += later
        wait_until(lambda: values(broker.bootstrap, topic) == lines, timeout_s=60, message="sparkcat's lines")
        assert main(["migrate", "--to-connect", connect.url, "--url", ours, "fs"]) == 0
        assert driver.herder.connector_status("fs")["connector"]["state"] == "STOPPED"
        last = [f"last {i}" for i in range(20)]
        write_lines(source, last)
        lines += last
        connect.wait_for(lambda: values(broker.bootstrap, topic) == lines, "Connect to go on from sparkcat's offset")


def test_a_connector_naming_no_converter_moves_with_the_connect_workers(broker, spark, tmp_path, unique_name,
                                                                       capsys):
    """The Connect worker's StringConverter, given by its properties file, goes on writing the lines as they are:
    without it, sparkcat's JsonConverter default would write each line as a JSON envelope."""
    source, topic = tmp_path / "in.txt", f"{unique_name}-plain"
    create_topic(broker.bootstrap, topic)
    lines = [f"line {i}" for i in range(30)]
    write_lines(source, lines)
    worker = WorkerConfig(state_dir=str(tmp_path / "state"), bootstrap_servers=broker.bootstrap,
                          config_topic=f"{unique_name}-sc-configs", offset_topic=f"{unique_name}-sc-offsets",
                          status_topic=f"{unique_name}-sc-status", file_allowed_dirs=[str(tmp_path)],
                          rest_host="127.0.0.1", rest_port=free_port())
    plain = {"key.converter": STRING, "value.converter": STRING}
    with ConnectWorker(broker.bootstrap, unique_name, settings=plain, log_dir=tmp_path / "connect") as connect, \
            Driver(spark, worker, rest=True, watch_pipelines=False) as driver:
        config = {k: v for k, v in file_source(source, topic).items() if "converter" not in k}
        connect.request("POST", "/connectors", {"name": "fs", "config": config})
        connect.wait_for(lambda: values(broker.bootstrap, topic) == lines, "Connect to copy the file")
        more = [f"more {i}" for i in range(20)]
        write_lines(source, more)
        lines += more
        properties = tmp_path / "connect" / f"worker-{unique_name}.properties"
        capsys.readouterr()
        assert main(["migrate", "--from-connect", connect.url, "--url", f"http://127.0.0.1:{worker.rest_port}",
                     "--connect-worker-config", str(properties), "fs"]) == 0
        # the worker's leftover JsonConverter settings, which Connect's StringConverter never reads, are left out
        warnings = [line for line in capsys.readouterr().out.splitlines() if "warning" in line]
        assert [w.split("'s ", 1)[1].split(" ", 1)[0] for w in warnings] == \
            ["key.converter.schemas.enable", "value.converter.schemas.enable"], warnings
        assert driver.herder.connector_config("fs")["value.converter"] == STRING
        wait_until(lambda: values(broker.bootstrap, topic) == lines, timeout_s=120,
                   message="sparkcat to go on writing the lines as Connect's StringConverter did")
