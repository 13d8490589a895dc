"""A real Spark standalone cluster for tests: one master and one worker from pyspark's own ``spark-class``.

Nothing is downloaded: ``SPARK_HOME`` is the pyspark package directory of this interpreter. Both
daemons bind to 127.0.0.1 on free ports, keep their logs and work dirs in a temp dir, and get a
small share of the machine (``cores`` and ``memory``). ``stop`` kills both process groups.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pyspark

from tests.broker import free_port

SPARK_HOME = Path(pyspark.__file__).resolve().parent


@dataclass
class SparkStandalone:
    """``start`` a master and a worker; ``master_url`` is what ``--master`` takes."""

    root: Path
    cores: int = 2
    memory: str = "2g"
    port: int = field(default_factory=free_port)
    ui_port: int = field(default_factory=free_port)
    worker_ui_port: int = field(default_factory=free_port)
    procs: list[subprocess.Popen] = field(default_factory=list)

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        return {**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1",
                "SPARK_LOG_DIR": str(self.root / "logs"), "SPARK_WORKER_DIR": str(self.root / "work"),
                "SPARK_NO_DAEMONIZE": "1", "SPARK_DAEMON_MEMORY": "256m"}

    def _daemon(self, name: str, cls: str, *args: str) -> None:
        (self.root / "logs").mkdir(parents=True, exist_ok=True)
        log = open(self.root / "logs" / f"{name}.log", "wb")
        self.procs.append(subprocess.Popen([str(SPARK_HOME / "bin" / "spark-class"), cls, *args], env=self.env(),
                                           stdout=log, stderr=subprocess.STDOUT, start_new_session=True))

    def start(self, timeout_s: float = 90) -> SparkStandalone:
        self._daemon("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                     "--port", str(self.port), "--webui-port", str(self.ui_port))
        self._daemon("worker", "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                     "--cores", str(self.cores), "--memory", self.memory, "--webui-port", str(self.worker_ui_port),
                     "--work-dir", str(self.root / "work"), self.master_url)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.alive_workers() >= 1:
                return self
            if any(p.poll() is not None for p in self.procs):
                break
            time.sleep(0.5)
        self.stop()
        logs = "\n".join(p.read_text()[-2000:] for p in (self.root / "logs").glob("*.log"))
        raise RuntimeError(f"Spark standalone cluster did not come up within {timeout_s} s:\n{logs}")

    def master_state(self) -> dict:
        """The master's ``/json`` page: workers, active and completed apps."""
        import json

        with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json", timeout=5) as r:
            return json.load(r)

    def alive_workers(self) -> int:
        try:
            return sum(1 for w in self.master_state().get("workers", []) if w.get("state") == "ALIVE")
        except OSError:
            return 0

    def stop(self) -> None:
        for p in reversed(self.procs):
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for p in self.procs:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(10)
        self.procs.clear()


def kill_driver(proc: subprocess.Popen, pid_file: Path) -> None:
    """After a failed test: SIGKILL ``./spark-submit.sh`` (``proc``, started in a session of its own), the Python
    driver named in ``pid_file`` (its ``SPARKCAT_PID_FILE``) and spark-submit's JVM above that driver, which the
    script runs in yet another session; a driver left running would hold the worker's cores from the next test."""
    text = pid_file.read_text().strip() if pid_file.exists() else ""
    if text:
        try:
            with open(f"/proc/{text}/stat") as f:
                parent = int(f.read().rsplit(")", 1)[1].split()[1])
            for pid in (int(text), parent):
                os.kill(pid, signal.SIGKILL)
        except (OSError, ValueError):
            pass
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
