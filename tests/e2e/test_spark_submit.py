"""./spark-submit.sh as a user runs it: no broker, the pipelines/ examples, stopped with SIGTERM."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.broker import free_port
from tests.kafka_helpers import wait_until

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]


def test_default_run_executes_the_example_pipelines_and_stops_cleanly(tmp_path):
    state = tmp_path / "state"
    log_path = tmp_path / "driver.log"
    pid_file = tmp_path / "driver.pid"  # the driver runs in a session of its own (spark-submit.sh's setsid)
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "SPARKCAT_PID_FILE": str(pid_file)}
    with log_path.open("w") as log_file:
        proc = subprocess.Popen(
            ["./spark-submit.sh", "--master", "local[2]", "--state-dir", str(state),
             "--rest-port", str(free_port())],
            cwd=REPO, stdout=log_file, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        copy = state / "out" / "sample-copy.txt"
        expected = (REPO / "pipelines" / "data" / "sample.txt").read_text().splitlines()
        wait_until(lambda: copy.exists() and copy.read_text().splitlines() == expected, timeout_s=240,
                   message="file-copy pipeline output")
        increments = state / "out" / "increment.jsonl"
        wait_until(lambda: increments.exists() and len(increments.read_text().splitlines()) >= 10,
                   timeout_s=120, message="increment pipeline output")
        assert "Connector increment-demo is RUNNING" in log_path.read_text()
        # The sink writes a batch's records before the driver logs the batch as committed.
        wait_until(lambda: re.search(r"batch \d+ committed with \d+ record", log_path.read_text()), timeout_s=60,
                   message="a committed batch in the driver's log")
        os.kill(int(pid_file.read_text()), signal.SIGQUIT)  # as documented: every thread's stack, and it goes on
        wait_until(lambda: "(most recent call first)" in log_path.read_text(), timeout_s=30,
                   message="the Python threads' stacks after kill -QUIT")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=120) == 0
    finally:
        if proc.poll() is None:
            print(_stacks(pid_file, log_path))  # shown with the failure: where a hung driver waits
            os.killpg(proc.pid, signal.SIGKILL)
        _kill_left_driver(pid_file)
    log_text = log_path.read_text()
    assert "stopped" in log_text
    # Spark's routine warnings stay off the default console (conf/log4j2.properties): each query start
    # logs the first, a cold first batch the second, the stop the third.
    for routine in ("adaptive.enabled is not supported in streaming", "Current batch is falling behind",
                    "Failed to cancel job group"):
        assert routine not in log_text
    # Positions are contiguous per increment: nothing lost or written twice across the stop.
    records = [json.loads(line) for line in increments.read_text().splitlines()]
    for k in (1, 100):
        positions = [r["position"] for r in records if r["increment"] == k]
        assert positions == list(range(1, len(positions) + 1))
    # The status command reads the same state directory without the driver.
    out = subprocess.run([str(REPO / ".venv" / "bin" / "sparkcat"), "status", "--state-dir", str(state),
                          "-o", "json"], capture_output=True, text=True, check=True, cwd=REPO)
    report = {c["name"]: c for c in json.loads(out.stdout)}
    assert set(report) == {"increment-demo", "file-copy"}
    assert report["increment-demo"]["offsets"], "offsets were committed"


def _stacks(pid_file: Path, log_path: Path) -> str:
    """The driver's log with its Python threads' stacks (SIGQUIT) and its JVM's (``jcmd Thread.print``) at the end."""
    try:
        pid = int(pid_file.read_text())
        os.kill(pid, signal.SIGQUIT)
    except (FileNotFoundError, ValueError, ProcessLookupError):
        return log_path.read_text()
    time.sleep(2)
    jvm = _parent(pid)  # spark-submit's JVM starts the Python driver
    dump = subprocess.run(["jcmd", str(jvm), "Thread.print"], capture_output=True, text=True, timeout=60).stdout \
        if jvm and shutil.which("jcmd") else ""
    return "\n".join([log_path.read_text(), dump])


def _parent(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat[stat.rindex(")") + 2:].split()[1])


def _kill_left_driver(pid_file: Path) -> None:
    """A failed test must not leave the driver running through the rest of the suite."""
    try:
        os.killpg(os.getpgid(int(pid_file.read_text())), signal.SIGKILL)  # its JVM and Python workers too
    except (FileNotFoundError, ValueError, ProcessLookupError):
        pass
