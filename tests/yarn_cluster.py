"""A real YARN and HDFS for tests: Hadoop's own MiniYARNCluster and MiniDFSCluster in a JVM of their own.

The jars are ``org.apache.hadoop:hadoop-client-minicluster`` (the Hadoop of pyspark's own jars), resolved by
scripts/jars.sh into ``.jars/hadoop``; ``jvm/hadoop/MiniHadoop.java`` runs as a single-file Java program.
Every server binds to 127.0.0.1 on ports picked here; the ResourceManager's, NodeManager's and NameNode's
state, logs and containers' working directories live under ``root``. ``conf_dir`` is the ``HADOOP_CONF_DIR``
a gateway host would have: ``core-site.xml`` with ``fs.defaultFS`` on this HDFS, ``yarn-site.xml`` with the
ResourceManager's addresses. ``stop`` sends SIGTERM: the JVM stops YARN, then HDFS.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import signal
import subprocess
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from tests.broker import free_port, java

REPO = Path(__file__).resolve().parents[1]
JARS = REPO / ".jars" / "hadoop"

# One NodeManager with room for a client-mode application master (512 MB + overhead), a cluster-mode one
# (the driver, 1 GB + overhead) and a few 1 GB executors. Containers are not held to their memory (the
# machine is shared with the test process), and vcores are YARN's bookkeeping only: 8 on a 2-core machine.
NODE_MEMORY_MB = 8192
NODE_VCORES = 8


def java_home() -> str:
    """$JAVA_HOME, else the JDK of the ``java`` on PATH: the NodeManager starts containers with $JAVA_HOME/bin/java."""
    if os.environ.get("JAVA_HOME"):
        return os.environ["JAVA_HOME"]
    return str(Path(shutil.which(java()) or java()).resolve().parents[1])


@dataclass
class MiniHadoop:
    """``start`` HDFS and YARN; ``conf_dir`` is their client configuration, ``env()`` a gateway's environment."""

    root: Path
    namenode_port: int = field(default_factory=free_port)
    rm_port: int = field(default_factory=free_port)
    rm_web_port: int = field(default_factory=free_port)
    proc: subprocess.Popen | None = None
    ready_line: str = ""

    @property
    def conf_dir(self) -> Path:
        return self.root / "conf"

    @property
    def log_path(self) -> Path:
        return self.root / "minihadoop.log"

    @property
    def default_fs(self) -> str:
        return f"hdfs://127.0.0.1:{self.namenode_port}"

    def settings(self) -> dict[str, str]:
        loopback = "127.0.0.1"
        return {
            "hadoop.tmp.dir": str(self.root / "tmp"),
            "minihadoop.namenode.port": str(self.namenode_port),
            "minihadoop.namenode.http.port": str(free_port()),
            # Every ResourceManager and NodeManager address on loopback, on the ports picked here.
            "yarn.minicluster.fixed.ports": "true",
            "yarn.resourcemanager.hostname": loopback,
            "yarn.resourcemanager.address": f"{loopback}:{self.rm_port}",
            "yarn.resourcemanager.scheduler.address": f"{loopback}:{free_port()}",
            "yarn.resourcemanager.resource-tracker.address": f"{loopback}:{free_port()}",
            "yarn.resourcemanager.admin.address": f"{loopback}:{free_port()}",
            "yarn.resourcemanager.webapp.address": f"{loopback}:{self.rm_web_port}",
            # MiniYARNCluster sets its NodeManager's yarn.nodemanager.resource.memory-mb from this key, and its
            # addresses to ephemeral ports on loopback.
            "yarn.minicluster.yarn.nodemanager.resource.memory-mb": str(NODE_MEMORY_MB),
            "yarn.nodemanager.resource.cpu-vcores": str(NODE_VCORES),
            "yarn.scheduler.minimum-allocation-mb": "256",
            "yarn.scheduler.maximum-allocation-mb": "4096",
            # The capacity scheduler (YARN's default) with one queue, as Hadoop's own capacity-scheduler.xml; its
            # default gives application masters 10% of the cluster, less than one.
            "yarn.scheduler.capacity.maximum-am-resource-percent": "0.8",
            "yarn.scheduler.capacity.root.queues": "default",
            "yarn.scheduler.capacity.root.default.capacity": "100",
            "yarn.scheduler.capacity.root.default.maximum-capacity": "100",
            "yarn.nodemanager.vmem-check-enabled": "false",
            "yarn.nodemanager.pmem-check-enabled": "false",
            # A nearly full disk would mark the only node unhealthy and leave every application waiting.
            "yarn.nodemanager.disk-health-checker.max-disk-utilization-per-disk-percentage": "99.9",
            # Kept for a few minutes after an application ends, for a failed test's post-mortem.
            "yarn.nodemanager.delete.debug-delay-sec": "600",
        }

    def env(self) -> dict[str, str]:
        """The environment of a gateway host: this cluster's ``HADOOP_CONF_DIR``/``YARN_CONF_DIR``."""
        return {**os.environ, "HADOOP_CONF_DIR": str(self.conf_dir), "YARN_CONF_DIR": str(self.conf_dir)}

    def start(self, timeout_s: float = 180) -> MiniHadoop:
        self.root.mkdir(parents=True, exist_ok=True)
        cmd = [java(), "-Xmx768m", "-XX:+UseSerialGC", f"-Dlog4j.configuration=file:{REPO / 'jvm' / 'hadoop' / 'log4j.properties'}", "-cp", f"{JARS}/*", str(REPO / "jvm" / "hadoop" / "MiniHadoop.java"),
               str(self.root / "work"), str(self.conf_dir), *(f"{k}={v}" for k, v in self.settings().items())]
        env = {**os.environ, "JAVA_HOME": java_home()}
        env.pop("HADOOP_CONF_DIR", None)
        env.pop("YARN_CONF_DIR", None)
        log = self.log_path.open("wb")
        self.proc = subprocess.Popen(cmd, cwd=self.root, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=log, start_new_session=True)
        ready = threading.Event()

        def pump() -> None:
            assert self.proc is not None and self.proc.stdout is not None
            with self.log_path.open("ab") as out:
                for line in self.proc.stdout:
                    out.write(line)
                    out.flush()
                    if line.startswith(b"MINIHADOOP READY"):
                        self.ready_line = line.decode().strip()
                        ready.set()

        threading.Thread(target=pump, name="minihadoop-stdout", daemon=True).start()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and not ready.is_set() and self.proc.poll() is None:
            ready.wait(0.5)
        if not ready.is_set():
            self.stop()
            raise RuntimeError(f"the Hadoop mini clusters did not come up within {timeout_s} s:\n"
                               + self.log_path.read_text(errors="replace")[-4000:])
        return self

    # ------------------------------------------------------------------ what a user sees

    def rm(self, path: str) -> dict:
        """The ResourceManager's REST API (``/ws/v1/cluster/...``)."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.rm_web_port}/ws/v1/cluster/{path}", timeout=10) as r:
            return json.load(r)

    def apps(self, states: str = "") -> list[dict]:
        """Applications (all, or those in ``states``, e.g. ``RUNNING``) as the ResourceManager lists them."""
        query = f"apps?states={states}" if states else "apps"
        return (self.rm(query).get("apps") or {}).get("app") or []

    def containers(self, app_id: str) -> list[str]:
        """Ids of the containers of ``app_id``'s current attempt, as the ResourceManager lists them."""
        attempts = self.rm(f"apps/{app_id}/appattempts")["appAttempts"]["appAttempt"]
        attempt = attempts[-1]["appAttemptId"]
        containers = self.rm(f"apps/{app_id}/appattempts/{attempt}/containers").get("container") or []
        return [c["containerId"] for c in containers]

    def container_dirs(self, app_id: str) -> list[Path]:
        """The working directories of ``app_id``'s containers on the NodeManager (the AM's is ``..._000001``)."""
        pattern = self.root / "work" / "yarn" / "*" / "*" / "*" / "usercache" / "*" / "appcache" / app_id / "container_*"
        return sorted(Path(p) for p in glob.glob(str(pattern)))

    def kill(self, app_id: str) -> None:
        """``yarn application -kill APP_ID``, through the ResourceManager's REST API."""
        request = urllib.request.Request(f"http://127.0.0.1:{self.rm_web_port}/ws/v1/cluster/apps/{app_id}/state",
                                         data=json.dumps({"state": "KILLED"}).encode(), method="PUT",
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30):
            pass

    def executors(self, app_id: str, ui: str | None = None) -> list[dict]:
        """Spark's executors of ``app_id``: its REST API at ``ui`` (the driver's UI), else through the
        ResourceManager's proxy, as the YARN UI links an application master's."""
        base = ui or f"http://127.0.0.1:{self.rm_web_port}/proxy/{app_id}"
        with urllib.request.urlopen(f"{base}/api/v1/applications/{app_id}/executors", timeout=30) as r:
            return json.load(r)

    def hdfs(self, *args: str, timeout_s: float = 60) -> subprocess.CompletedProcess:
        """``hadoop fs ARGS`` against this HDFS (Hadoop's FsShell from the same jars)."""
        return subprocess.run([java(), "-cp", f"{self.conf_dir}:{JARS}/*", "org.apache.hadoop.fs.FsShell", *args], capture_output=True, text=True, timeout=timeout_s, cwd=self.root)

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
            except ProcessLookupError:
                pass
        self.proc = None
        # What the NodeManager localised (the unpacked venv of each application: over a GB); its logs stay.
        for cache in glob.glob(str(self.root / "work" / "yarn" / "*" / "*" / "*" / "usercache")):
            shutil.rmtree(cache, ignore_errors=True)
