"""Java connectors from plugin.path on a real Spark standalone cluster, as a Connect user brings them.

``./spark-submit.sh --master spark://...`` with a worker config naming a plugin.path (Apache's connect-file 4.1.1 in a
plugin directory) and Kafka stores on the test broker; the connectors are created over the REST API as on Connect.
Their tasks run in the standalone executor's JVM (worker id ``HOST:0``), which finds the plugins itself: nothing is
copied by hand. The worker is exactly-once by default, so the source's records and offsets commit in transactions.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest

from tests.broker import free_port
from tests.spark_cluster import kill_driver
from tests.java_plugins import connect_file_plugin
from tests.kafka_helpers import create_topic, wait_until

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
STRINGS = "org.apache.kafka.connect.storage.StringConverter"


def call(port: int, method: str, path: str, body: dict | None = None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as r:
        return json.load(r) if r.status != 204 else None


def worker_ids(port: int, name: str) -> set[str]:
    try:
        tasks = call(port, "GET", f"/connectors/{name}/status")["tasks"]
    except OSError:
        return set()
    return {t["worker_id"].rsplit(":", 1)[1] for t in tasks if t["state"] == "RUNNING"}


def test_java_file_source_and_sink_run_on_the_standalone_executor(spark_standalone, broker, tmp_path):
    name, rest_port = f"js-{uuid.uuid4().hex[:8]}", free_port()
    plugins = connect_file_plugin(tmp_path / "plugins")
    topic, source, out = f"{name}-lines", tmp_path / "in.txt", tmp_path / "out.txt"
    create_topic(broker.bootstrap, topic)
    source.write_text("".join(f"line {i}\n" for i in range(300)), encoding="utf-8")
    worker = tmp_path / "worker.yaml"
    (tmp_path / "pipelines").mkdir()  # none of the repository's sample pipelines
    worker.write_text(f"state.dir: {tmp_path / 'state'}\nrest.port: {rest_port}\nbootstrap.servers: {broker.bootstrap}\n"
                      f"pipelines.dir: {tmp_path / 'pipelines'}\n"
                      f"group.id: {name}\nconfig.storage.topic: {name}-configs\noffset.storage.topic: {name}-offsets\n"
                      f"status.storage.topic: {name}-status\nplugin.path: [{plugins}]\nplugin.discovery: service_load\n")
    log_path, pid_file = tmp_path / "driver.log", tmp_path / "driver.pid"
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "SPARKCAT_PID_FILE": str(pid_file)}
    with log_path.open("w") as log_file:
        proc = subprocess.Popen(
            ["./spark-submit.sh", "--master", spark_standalone.master_url, "--conf", "spark.executor.memory=1g",
             "--conf", "spark.driver.host=127.0.0.1", "--worker-config", str(worker)],
            cwd=REPO, stdout=log_file, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        wait_until(lambda: _ready(rest_port) or proc.poll() is not None, timeout_s=300,
                   message=lambda: "the driver's REST API: " + log_path.read_text()[-3000:])
        assert proc.poll() is None, log_path.read_text()[-3000:]
        create(rest_port, "java-src", {"connector.class": "FileStreamSource", "file": str(source), "topic": topic,
                                       "value.converter": STRINGS})
        create(rest_port, "java-sink", {"connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
                                        "file": str(out), "topics": topic, "value.converter": STRINGS})
        wait_until(lambda: out.exists() and len(out.read_text().splitlines()) >= 300, timeout_s=240,
                   message=lambda: "the lines through Kafka into the sink's file: " + log_path.read_text()[-3000:])
        assert out.read_text().splitlines() == [f"line {i}" for i in range(300)]
        for connector in ("java-src", "java-sink"):  # the standalone executor ran them, not the driver
            wait_until(lambda c=connector: worker_ids(rest_port, c) == {"0"}, timeout_s=60,
                       message=lambda c=connector: f"{c}'s task on executor 0: "
                                                   f"{call(rest_port, 'GET', f'/connectors/{c}/status')}")
        offsets = call(rest_port, "GET", "/connectors/java-src/offsets")["offsets"]
        assert offsets == [{"partition": {"filename": str(source)}, "offset": {"position": source.stat().st_size}}]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=120) == 0
    finally:
        kill_driver(proc, pid_file)


def create(port: int, name: str, config: dict) -> None:
    """POST /connectors, again while the driver answers 409 (it is still becoming the leader, as Connect answers)."""
    def created() -> bool:
        try:
            call(port, "POST", "/connectors", {"name": name, "config": config})
            return True
        except urllib.error.HTTPError as e:
            if e.code != 409:
                raise
            return False
    wait_until(created, timeout_s=120, message=f"{name} created")


def _ready(port: int) -> bool:
    try:
        call(port, "GET", "/connectors")
        return True
    except OSError:
        return False
