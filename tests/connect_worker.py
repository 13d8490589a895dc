"""A real Apache Kafka Connect worker (distributed mode) for the interop tests and benchmarks.

It runs ``org.apache.kafka.connect.cli.ConnectDistributed`` from Maven Central's jars
(``jvm/connect/pom.xml``, resolved by ``scripts/jars.sh`` into ``.jars/connect``: connect-runtime,
connect-json, connect-file and connect-mirror, found on the classpath) as one JVM process with a
worker.properties of its own: REST on a free loopback port, its own group id and internal topics
unless the caller names them (to share sparkcat's).
"""

from __future__ import annotations

import json
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from tests.broker import REPO, free_port, java, log4j_properties

CONNECT_JARS = REPO / ".jars" / "connect"


class ConnectWorker:
    """One Kafka Connect worker in distributed mode; ``stop()`` ends the JVM (SIGTERM, then SIGKILL).

    ``name`` prefixes the group id and the internal topics (``NAME-configs``, ``NAME-offsets``,
    ``NAME-status``); ``settings`` override any worker property (e.g. the topic names of a
    sparkcat cluster to share them).
    """

    #: JVM options of a quick one-node test worker; benchmarks pass Connect's own (``connect-distributed.sh``'s heap).
    TEST_JVM = ("-Xms128m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")

    def __init__(self, bootstrap: str, name: str, settings: dict[str, str] | None = None,
                 log_dir: Path | None = None, start_timeout_s: float = 90.0,
                 jvm_options: tuple[str, ...] = TEST_JVM) -> None:
        self.bootstrap = bootstrap
        self.name = name
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_dir = log_dir or Path(tempfile.mkdtemp(prefix="sparkcat-connect-"))
        self.log_path = self.log_dir / f"connect-{name}.log"
        self.settings = settings or {}
        self.start_timeout_s = start_timeout_s
        self.jvm_options = jvm_options
        self._proc: subprocess.Popen[bytes] | None = None

    def properties(self) -> dict[str, str]:
        """worker.properties: Connect's defaults except what makes a one-node test worker quick."""
        props = {
            "bootstrap.servers": self.bootstrap,
            "group.id": f"{self.name}-group",
            "config.storage.topic": f"{self.name}-configs",
            "offset.storage.topic": f"{self.name}-offsets",
            "status.storage.topic": f"{self.name}-status",
            "config.storage.replication.factor": "1",
            "offset.storage.replication.factor": "1",
            "status.storage.replication.factor": "1",
            "key.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "key.converter.schemas.enable": "false",
            "value.converter.schemas.enable": "false",
            "listeners": self.url,
            "rest.advertised.host.name": "127.0.0.1",
            "rest.advertised.port": str(self.port),
            "offset.flush.interval.ms": "500",
            "scheduled.rebalance.max.delay.ms": "0",
            "plugin.discovery": "only_scan",
        }
        props.update(self.settings)
        return props

    def start(self) -> ConnectWorker:
        """Write the worker's files, launch the JVM and wait until its REST API lists connectors."""
        if not CONNECT_JARS.is_dir() or not any(CONNECT_JARS.glob("*.jar")):
            raise RuntimeError(f"no Connect jars in {CONNECT_JARS}: run tests/run.sh (it resolves them with Maven)")
        self.log_dir.mkdir(parents=True, exist_ok=True)
        worker = self.log_dir / f"worker-{self.name}.properties"
        worker.write_text("".join(f"{k}={v}\n" for k, v in self.properties().items()))
        log4j = self.log_dir / f"log4j2-connect-{self.name}.properties"
        log4j.write_text(log4j_properties(self.log_path, "info", {"org.reflections": "error"}))
        cmd = [java(), *self.jvm_options, f"-Dlog4j2.configurationFile={log4j}", "-cp", str(CONNECT_JARS / "*"),
               "org.apache.kafka.connect.cli.ConnectDistributed", str(worker)]
        with open(self.log_dir / f"connect-{self.name}.out", "ab") as out:
            self._proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self) -> None:
        """Poll GET /connectors until it answers 200 (the worker joined its group and read the config topic)."""
        deadline = time.monotonic() + self.start_timeout_s
        while True:
            if self._proc is not None and self._proc.poll() is not None:
                raise RuntimeError(f"Kafka Connect exited with {self._proc.returncode}; {self.tail()}")
            try:
                self.request("GET", "/connectors")
                return
            except (OSError, ConnectError) as exc:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"Kafka Connect not ready at {self.url}: {exc}; {self.tail()}") from exc
            time.sleep(0.25)

    def request(self, method: str, path: str, body: Any = None) -> Any:
        """One REST call; the decoded JSON body (None when empty). Raises ConnectError on 4xx/5xx."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json", "Accept": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                text = resp.read()
        except urllib.error.HTTPError as exc:
            raise ConnectError(exc.code, exc.read().decode(errors="replace")) from exc
        return json.loads(text) if text else None

    def wait_for(self, predicate: Any, what: str, timeout_s: float = 60.0) -> Any:
        """Call ``predicate()`` until it returns something truthy (ConnectError counts as not yet)."""
        deadline = time.monotonic() + timeout_s
        last: Any = None
        while time.monotonic() < deadline:
            try:
                last = predicate()
                if last:
                    return last
            except ConnectError as exc:
                last = exc
            time.sleep(0.25)
        raise AssertionError(f"Kafka Connect: {what} not seen within {timeout_s}s (last: {last!r}); {self.tail()}")

    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    def tail(self, lines: int = 30) -> str:
        text: list[str] = []
        for path in (self.log_path, self.log_dir / f"connect-{self.name}.out"):
            if path.exists():
                text += [l for l in path.read_text(errors="replace").splitlines() if " ERROR " in l or " WARN " in l][-lines:]
        return "\n".join(text) or "(no warnings in the log)"

    def stop(self, timeout_s: float = 30.0) -> None:
        """SIGTERM (Connect stops its connectors and commits their offsets), SIGKILL after ``timeout_s``."""
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=timeout_s)

    def __enter__(self) -> ConnectWorker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class ConnectError(Exception):
    """A 4xx/5xx answer of Connect's REST API."""

    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"HTTP {status}: {body}")
        self.status = status
        self.body = body
