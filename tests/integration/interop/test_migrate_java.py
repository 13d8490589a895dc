"""``sparkcat migrate --from-connect`` to a sparkcat driver with Apache's connect-file 4.1.1 on its ``plugin.path``.

The FileStreamSourceConnector moves as a Java connector (never sparkcat's Python port of the name): stopped in
Connect, created in sparkcat with the offset Connect committed, resumed there, so every line of the file reaches
the topic once. The FileStreamSinkConnector moves the same way, from the offsets Connect's sink committed to its
``connect-fsink`` group: its file ends with every line once.
"""

from __future__ import annotations

import os

import pytest

from sparkcat.bootstrap import Driver
from sparkcat.cli import main
from sparkcat.config.worker import WorkerConfig
from sparkcat.plugins import HostedJavaConnector
from tests.broker import free_port
from tests.connect_worker import ConnectWorker
from tests.integration.interop.test_connect_topics import STRING, file_source, values, write_lines
from tests.java_plugins import connect_file_plugin
from tests.kafka_helpers import create_topic, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

FILE_SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"


def test_migrate_moves_a_java_file_source_and_sink_with_connects_offsets(broker, spark, tmp_path, unique_name,
                                                                        capsys):
    source, out, topic = tmp_path / "in.txt", tmp_path / "out.txt", f"{unique_name}-lines"
    create_topic(broker.bootstrap, topic)
    lines = [f"line {i}" for i in range(300)]
    write_lines(source, lines)
    worker = WorkerConfig(state_dir=str(tmp_path / "state"), bootstrap_servers=broker.bootstrap,
                          config_topic=f"{unique_name}-sc-configs", offset_topic=f"{unique_name}-sc-offsets",
                          status_topic=f"{unique_name}-sc-status", rest_host="127.0.0.1", rest_port=free_port(),
                          plugin_path=[str(connect_file_plugin(tmp_path / "plugins"))],
                          plugin_discovery="service_load")
    with ConnectWorker(broker.bootstrap, unique_name, log_dir=tmp_path / "connect") as connect, \
            Driver(spark, worker, rest=True, watch_pipelines=False) as driver:
        ours = f"http://127.0.0.1:{worker.rest_port}"
        connect.request("POST", "/connectors", {"name": "fs", "config": file_source(source, topic)})
        connect.request("POST", "/connectors", {"name": "fsink", "config": {
            "connector.class": FILE_SINK, "topics": topic, "file": str(out),
            "key.converter": STRING, "value.converter": STRING}})
        connect.wait_for(lambda: values(broker.bootstrap, topic) == lines, "Connect to copy the file")
        more = [f"more {i}" for i in range(100)]
        write_lines(source, more)  # Connect may or may not have read these before it stops
        lines += more

        capsys.readouterr()
        assert main(["migrate", "--from-connect", connect.url, "--url", ours]) == 0
        said = capsys.readouterr().out
        assert "fs: moved: 1 offset(s) carried over" in said, said
        assert "fsink: moved: 1 offset(s) carried over" in said, said  # its one topic-partition
        for name in ("fs", "fsink"):
            assert connect.request("GET", f"/connectors/{name}/status")["connector"]["state"] == "STOPPED"

        wait_until(lambda: values(broker.bootstrap, topic) == lines, timeout_s=120,
                   message="sparkcat to go on from Connect's position")
        later = [f"later {i}" for i in range(50)]
        write_lines(source, later)
        lines += later
        wait_until(lambda: values(broker.bootstrap, topic) == lines, timeout_s=120, message="sparkcat's lines")
        # Connect's own connector ran in sparkcat (in the driver's JVM), and its offsets are Connect's
        for name in ("fs", "fsink"):
            assert isinstance(driver.herder.reconciler.lifecycles[name].instance, HostedJavaConnector)
        wait_until(lambda: driver.herder.connector_offsets("fs") == [
            ({"filename": str(source)}, {"position": os.path.getsize(source)})], timeout_s=60,
            message="the file's size as sparkcat's stored position")
        # Connect's sink wrote the first lines, sparkcat's went on where its group's offset was: each line once
        wait_until(lambda: out.exists() and out.read_text().splitlines() == lines, timeout_s=120,
                   message="the file sink to hold every line once")
