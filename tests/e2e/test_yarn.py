"""./spark-submit.sh on a real YARN cluster with HDFS as its default file system, as docs/running.md says.

The cluster (tests/yarn_cluster.py) is Hadoop's own MiniYARNCluster and MiniDFSCluster; the script gets only the
``HADOOP_CONF_DIR``/``YARN_CONF_DIR`` a gateway host has, so every path without a scheme means HDFS, as on a real
cluster. The pipelines are the repository's increment demo into a file sink, and an increment source into Kafka
with a ``kafka`` copy of its topic; the stores are on the test broker and ``checkpoint.dir`` is on HDFS.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
import urllib.request
import uuid
from pathlib import Path

import pytest

from sparkcat.config.stores import offsets_store_spec
from sparkcat.config.worker import load_worker_config
from sparkcat.storage.factory import open_offsets_store
from tests.broker import free_port
from tests.kafka_helpers import read_json_values, wait_until
from tests.spark_cluster import kill_driver

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
JSON_NO_SCHEMA = {"value.converter": "org.apache.kafka.connect.json.JsonConverter",
                  "value.converter.schemas.enable": "false"}


def get(url: str):
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.load(r)


def file_positions(path: Path, increment: int = 1) -> list[int]:
    if not path.exists():
        return []
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [r["position"] for r in rows if r["increment"] == increment]


def contiguous(positions: list[int]) -> bool:
    return sorted(set(positions)) == list(range(1, max(positions) + 1)) if positions else False


def task_workers(rest_port: int, name: str) -> list[str]:
    """The ``worker_id`` of each RUNNING task of ``name`` ([] while the REST API is not up)."""
    try:
        tasks = get(f"http://127.0.0.1:{rest_port}/connectors/{name}/status")["tasks"]
    except OSError:
        return []
    return [t["worker_id"] for t in tasks if t["state"] == "RUNNING"]


def stored_positions(worker_file: Path, connector: str, increments: tuple[int, ...]) -> dict[int, int]:
    """The source offsets the driver wrote for ``connector`` (its offsets topic), by increment."""
    store = open_offsets_store(offsets_store_spec(load_worker_config(worker_file)))
    try:
        stored = store.get(connector, stable=True)
    finally:
        store.close()
    return {k: stored.get(f'{{"increment":{k}}}', {}).get("position", 0) for k in increments}


def container_of(executor: dict) -> str:
    """The YARN container an executor of Spark's REST API runs in (its attributes, or its log links' paths)."""
    found = re.search(r"container_[0-9e_]+", json.dumps({k: executor.get(k) for k in ("attributes", "executorLogs")}))
    assert found, executor
    return found.group(0)


def assert_tasks_in_containers(cluster, app_id: str, rest_port: int, connectors: tuple[str, ...],
                               ui: str | None = None) -> None:
    """Each RUNNING task's ``worker_id`` is ``HOST:N`` of an executor N that runs in a container of ``app_id``."""
    executors = {e["id"]: e for e in cluster.executors(app_id, ui)}
    containers = set(cluster.containers(app_id))
    for connector in connectors:
        workers = task_workers(rest_port, connector)
        assert workers, connector
        for worker_id in workers:
            executor = executors[worker_id.rsplit(":", 1)[1]]
            assert container_of(executor) in containers, (worker_id, executor, containers)


def sparkcat_app(cluster, states: str = "") -> dict | None:
    apps = [a for a in cluster.apps(states) if a["name"] == "sparkcat"]
    return max(apps, key=lambda a: a["startedTime"]) if apps else None


def write_pipelines(directory: Path, name: str) -> str:
    """The increment demo (file sink), an increment source into Kafka and a copy of its topic; returns the topic."""
    directory.mkdir()
    (directory / "increment.yaml").write_text((REPO / "pipelines" / "increment.yaml").read_text())
    topic = f"{name}-seq_1"
    numbers = {"connector.class": "increment", "increments": [1], "tasks.max": 1, "throughput": 5,
               "topic.prefix": f"{name}-seq_", **JSON_NO_SCHEMA}
    (directory / "numbers.yaml").write_text(json.dumps({"name": "numbers", "config": numbers}))
    # Exactly once: the copy's tasks then report the executor of their transactions (not the driver).
    (directory / "copy.yaml").write_text(json.dumps({"name": "copy", "config": {
        "connector.class": "kafka", "topics": topic, "tasks.max": 1, "exactly.once.support": "required"}}))
    return topic


def worker_file(tmp_path: Path, cluster, broker, name: str, rest_port: int) -> Path:
    worker = tmp_path / "worker.yaml"
    worker.write_text(
        f"state.dir: {tmp_path / 'state'}\npipelines.dir: {tmp_path / 'pipelines'}\nrest.port: {rest_port}\n"
        f"checkpoint.dir: {cluster.default_fs}/sparkcat/{name}/checkpoints\n"
        f"bootstrap.servers: {broker.bootstrap}\ngroup.id: {name}\nconfig.storage.topic: {name}-configs\n"
        f"offset.storage.topic: {name}-offsets\nstatus.storage.topic: {name}-status\n")
    return worker


@pytest.mark.timeout(600)
def test_client_mode_on_yarn_runs_tasks_in_containers_and_stops_on_sigterm_with_offsets_written(mini_hadoop, broker,
                                                                                                tmp_path):
    """``./spark-submit.sh --master yarn --deploy-mode client --num-executors 2 --supervise`` as the docs say: the
    packed venv and sparkcat ship to the containers, the driver and its REST API stay here."""
    name, rest_port, ui_port, pid_file = f"y{uuid.uuid4().hex[:8]}", free_port(), free_port(), tmp_path / "driver.pid"
    topic = write_pipelines(tmp_path / "pipelines", name)
    worker = worker_file(tmp_path, mini_hadoop, broker, name, rest_port)
    log_path, out = tmp_path / "driver.log", tmp_path / "state" / "out" / "increment.jsonl"
    started = time.monotonic()
    with log_path.open("w") as log_file:
        proc = subprocess.Popen(
            ["./spark-submit.sh", "--master", "yarn", "--deploy-mode", "client", "--num-executors", "2", "--supervise",
             "--conf", "spark.driver.host=127.0.0.1", "--conf", f"spark.ui.port={ui_port}",
             "--worker-config", str(worker)],
            cwd=REPO, stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True,
            env={**mini_hadoop.env(), "PYTHONUNBUFFERED": "1", "SPARKCAT_PID_FILE": str(pid_file)})
    try:
        # The FAIR allocation file is local (a file: URI): read from fs.defaultFS it was "File does not exist".
        wait_until(lambda: len(file_positions(out)) >= 10 or proc.poll() is not None, timeout_s=420,
                   message=lambda: "increment output from YARN: " + log_path.read_text()[-3000:])
        assert proc.poll() is None, log_path.read_text()[-3000:]
        print(f"first output {time.monotonic() - started:.0f} s after ./spark-submit.sh started")
        app = sparkcat_app(mini_hadoop, "RUNNING")
        assert app is not None, mini_hadoop.apps()
        wait_until(lambda: len(read_json_values(broker.bootstrap, f"{topic}.copy")) >= 10, timeout_s=120,
                   message="the kafka copy's output")

        # Tasks report the executor they ran on ("HOST:N"); executor N is a container of this application.
        wait_until(lambda: len(task_workers(rest_port, "increment-demo")) == 2, timeout_s=60,
                   message=lambda: f"tasks running: {task_workers(rest_port, 'increment-demo')}")
        assert_tasks_in_containers(mini_hadoop, app["id"], rest_port, ("increment-demo", "numbers", "copy"),
                                   ui=f"http://127.0.0.1:{ui_port}")

        ls = mini_hadoop.hdfs("-ls", f"/sparkcat/{name}/checkpoints/increment-demo/commits")
        assert ls.returncode == 0 and "/commits/0" in ls.stdout, ls.stderr[-2000:]

        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=120) == 0, log_path.read_text()[-3000:]
    finally:
        kill_driver(proc, pid_file)
    assert "restarting it" not in log_path.read_text(), "a SIGTERM stop is not restarted by --supervise"
    wait_until(lambda: (sparkcat_app(mini_hadoop) or {}).get("state") == "FINISHED", timeout_s=60,
               message=lambda: f"the application FINISHED: {sparkcat_app(mini_hadoop)}")
    assert sparkcat_app(mini_hadoop)["finalStatus"] == "SUCCEEDED"

    got = {k: file_positions(out, k) for k in (1, 100)}
    assert all(contiguous(p) for p in got.values()), "every position written, none lost"
    # The offsets the stopped driver wrote are those of its last batch: a new driver goes on from there.
    assert stored_positions(worker, "increment-demo", (1, 100)) == {k: max(p) for k, p in got.items()}
    copied = sorted(v["position"] for v in read_json_values(broker.bootstrap, f"{topic}.copy"))
    assert contiguous(copied)


@pytest.mark.timeout(600)
def test_cluster_mode_on_yarn_runs_the_driver_in_the_application_master_with_the_shipped_conf_and_pipelines(
        mini_hadoop, broker, tmp_path):
    """``--deploy-mode cluster``: the driver runs in the application master's container with the repository's
    pipelines/ shipped beside it (``--pipelines pipelines``), a worker file of the user's own shipped with
    ``--files``; its REST API answers on the AM's host; ``yarn application -kill`` stops it."""
    name, rest_port = f"y{uuid.uuid4().hex[:8]}", free_port()
    worker = tmp_path / "worker.yaml"  # as conf/worker.yaml would say on a cluster: relative state.dir, HDFS checkpoints
    worker.write_text(
        f"state.dir: state\nrest.host: 127.0.0.1\nrest.port: {rest_port}\n"
        f"checkpoint.dir: /sparkcat/{name}/checkpoints\n"
        f"bootstrap.servers: {broker.bootstrap}\ngroup.id: {name}\nconfig.storage.topic: {name}-configs\n"
        f"offset.storage.topic: {name}-offsets\nstatus.storage.topic: {name}-status\n")
    log_path = tmp_path / "submit.log"
    started = time.monotonic()
    with log_path.open("w") as log_file:
        proc = subprocess.Popen(
            ["./spark-submit.sh", "--master", "yarn", "--deploy-mode", "cluster", "--num-executors", "1",
             "--executor-python", str(REPO / ".venv" / "bin" / "python"), "--conf", "spark.yarn.maxAppAttempts=1",
             "--files", str(worker), "--worker-config", "worker.yaml"],
            cwd=REPO, stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True,
            env={**mini_hadoop.env(), "PYTHONUNBUFFERED": "1"})
    app, out = None, Path("/nonexistent")
    try:
        app = wait_until(lambda: sparkcat_app(mini_hadoop, "RUNNING") or proc.poll() is not None, timeout_s=300,
                         message=lambda: "a RUNNING application: " + log_path.read_text()[-3000:])
        assert proc.poll() is None, log_path.read_text()[-3000:]
        am_host = app["amHostHttpAddress"].rsplit(":", 1)[0]
        assert am_host in ("localhost", "127.0.0.1"), app
        # The REST API is on the AM's host; the demo's tasks run and report their executors' containers.
        wait_until(lambda: len(task_workers(rest_port, "increment-demo")) == 2, timeout_s=300,
                   message=lambda: f"increment-demo RUNNING: {task_workers(rest_port, 'increment-demo')}")
        print(f"tasks running {time.monotonic() - started:.0f} s after ./spark-submit.sh started")
        # state.dir "state" is in the AM's working directory, where the demo's file sink writes.
        out = mini_hadoop.container_dirs(app["id"])[0] / "state" / "out" / "increment.jsonl"
        wait_until(lambda: len(file_positions(out)) >= 10, timeout_s=120,
                   message=lambda: f"the demo's output in the AM's working directory {out}: "
                                   f"{list(out.parent.parent.glob('*/*'))}")
        assert_tasks_in_containers(mini_hadoop, app["id"], rest_port, ("increment-demo",))
        ls = mini_hadoop.hdfs("-ls", f"/sparkcat/{name}/checkpoints/increment-demo/commits")
        assert ls.returncode == 0 and "/commits/0" in ls.stdout, "checkpoint.dir without a scheme is on HDFS"

        mini_hadoop.kill(app["id"])
        wait_until(lambda: sparkcat_app(mini_hadoop)["state"] == "KILLED", timeout_s=60, message="the app KILLED")
        assert proc.wait(timeout=60) is not None
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        if app is not None and (sparkcat_app(mini_hadoop) or {}).get("state") == "RUNNING":
            mini_hadoop.kill(app["id"])
    got = {k: file_positions(out, k) for k in (1, 100)}
    assert all(contiguous(p) for p in got.values())
    # Killed, not stopped: the offsets stored are those of a committed batch, never beyond the output.
    stored = stored_positions(worker, "increment-demo", (1, 100))
    assert all(0 < stored[k] <= max(p) for k, p in got.items()), (stored, {k: max(p) for k, p in got.items()})
