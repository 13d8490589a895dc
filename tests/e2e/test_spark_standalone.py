"""./spark-submit.sh on a real Spark standalone cluster: tasks run on its executor, a killed driver comes back.

The cluster (tests/spark_cluster.py) is a master and a worker from pyspark's own ``spark-class``; the
driver runs in client mode (Spark refuses cluster mode for Python on standalone) under
``--supervise``, with its checkpoints under a ``file:`` URI (``checkpoint.dir``).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import urllib.request
from pathlib import Path

import pytest

from tests.broker import free_port
from tests.kafka_helpers import wait_until
from tests.spark_cluster import kill_driver

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]


def get(port: int, path: str):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
        return json.load(r)


def positions(path: Path) -> list[int]:
    if not path.exists():
        return []
    return [json.loads(line)["position"] for line in path.read_text().splitlines() if line.strip()
            and json.loads(line)["increment"] == 1]


def executor_ids(port: int) -> set[str]:
    tasks = get(port, "/connectors/increment-demo/status")["tasks"]
    return {t["worker_id"].rsplit(":", 1)[1] for t in tasks} if len(tasks) == 2 else set()


def after_restart(log: Path) -> str:
    """The driver log after spark-submit.sh's first restart message ("" before it)."""
    text = log.read_text()
    mark = "restarting it (restart 1)"
    return text.split(mark, 1)[1] if mark in text else ""


def driver_pid(pid_file: Path) -> int | None:
    text = pid_file.read_text().strip() if pid_file.exists() else ""
    return int(text) if text else None


def test_standalone_cluster_runs_tasks_on_executors_and_supervise_restarts_a_killed_driver(spark_standalone, tmp_path):
    state, rest_port, pid_file = tmp_path / "state", free_port(), tmp_path / "driver.pid"
    done_before = len(spark_standalone.master_state()["completedapps"])  # the cluster is the session's
    (tmp_path / "pipelines").mkdir()
    (tmp_path / "pipelines" / "increment.yaml").write_text((REPO / "pipelines" / "increment.yaml").read_text())
    worker = tmp_path / "worker.yaml"
    worker.write_text(f"state.dir: {state}\ncheckpoint.dir: {(tmp_path / 'ck').as_uri()}\n"
                      f"pipelines.dir: {tmp_path / 'pipelines'}\nrest.port: {rest_port}\n")
    log_path = tmp_path / "driver.log"
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "SPARKCAT_PID_FILE": str(pid_file)}
    with log_path.open("w") as log_file:
        proc = subprocess.Popen(
            ["./spark-submit.sh", "--master", spark_standalone.master_url, "--supervise",
             "--executor-python", str(REPO / ".venv" / "bin" / "python"),
             "--conf", "spark.executor.memory=1g", "--conf", "spark.driver.host=127.0.0.1",
             "--worker-config", str(worker)],
            cwd=REPO, stdout=log_file, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    out = state / "out" / "increment.jsonl"
    try:
        wait_until(lambda: len(positions(out)) >= 10, timeout_s=240, message="increment output from the cluster")
        # Tasks are RUNNING on the standalone executor ("HOST:0") from their first batch (UNASSIGNED before it).
        wait_until(lambda: executor_ids(rest_port) == {"0"}, timeout_s=60,
                   message=lambda: f"executor ids as worker_id: {get(rest_port, '/connectors/increment-demo/status')}")
        apps = spark_standalone.master_state()["activeapps"]
        assert [a["name"] for a in apps] == ["sparkcat"]
        assert (tmp_path / "ck" / "increment-demo" / "commits").is_dir(), "the checkpoint is under checkpoint.dir"

        first = driver_pid(pid_file)
        os.kill(first, signal.SIGKILL)
        wait_until(lambda: driver_pid(pid_file) not in (None, first), timeout_s=180, message="a restarted driver")
        at_restart = max(positions(out))
        # Executors may still finish the killed driver's last batch; what counts is a batch the new one commits.
        wait_until(lambda: "committed with" in after_restart(log_path), timeout_s=240,
                   message="a batch committed by the restarted driver")
        wait_until(lambda: max(positions(out)) >= at_restart + 10, timeout_s=120, message="output goes on")
        got = positions(out)
        assert sorted(set(got)) == list(range(1, max(got) + 1)), "nothing lost across the kill"
        master = spark_standalone.master_state()
        assert [a["name"] for a in master["activeapps"]] == ["sparkcat"], "the restarted driver is a new application"
        assert len(master["completedapps"]) == done_before + 1, "the killed driver's application ended"

        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=120) == 0
    finally:
        kill_driver(proc, pid_file)
    assert "restarting it (restart 2)" not in log_path.read_text(), "a SIGTERM stop is not restarted"
    # every RUNNING status either driver wrote named the executor, never the driver's HOST:REST_PORT first
    running_on = re.findall(r"Task increment-demo-\d+ is RUNNING on (\S+)", log_path.read_text())
    assert running_on and {w.rsplit(":", 1)[1] for w in running_on} == {"0"}, running_on


def test_the_documented_standalone_command_ships_the_packed_venv_and_runs_tasks_on_the_executor(spark_standalone,
                                                                                               tmp_path):
    """As docs/running.md says: ``./spark-submit.sh --master spark://...`` with nothing else; the packed venv
    goes to the executors (``./environment/bin/python``) while the driver keeps its own Python."""
    state, rest_port, pid_file = tmp_path / "state", free_port(), tmp_path / "driver.pid"
    (tmp_path / "pipelines").mkdir()
    (tmp_path / "pipelines" / "increment.yaml").write_text((REPO / "pipelines" / "increment.yaml").read_text())
    worker = tmp_path / "worker.yaml"
    worker.write_text(f"state.dir: {state}\npipelines.dir: {tmp_path / 'pipelines'}\nrest.port: {rest_port}\n")
    log_path = tmp_path / "driver.log"
    with log_path.open("w") as log_file:
        proc = subprocess.Popen(
            ["./spark-submit.sh", "--master", spark_standalone.master_url, "--conf", "spark.executor.memory=1g",
             "--conf", "spark.driver.host=127.0.0.1", "--worker-config", str(worker)],
            cwd=REPO, stdout=log_file, stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1", "SPARKCAT_PID_FILE": str(pid_file)}, start_new_session=True)
    try:
        wait_until(lambda: len(positions(state / "out" / "increment.jsonl")) >= 10 or proc.poll() is not None,
                   timeout_s=300, message=lambda: "increment output from the cluster: " + log_path.read_text()[-3000:])
        assert proc.poll() is None, log_path.read_text()[-3000:]
        wait_until(lambda: executor_ids(rest_port) == {"0"}, timeout_s=60,
                   message=lambda: f"executor ids as worker_id: {get(rest_port, '/connectors/increment-demo/status')}")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=120) == 0
    finally:
        kill_driver(proc, pid_file)
