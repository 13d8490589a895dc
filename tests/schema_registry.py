"""A real Schema Registry for the registry converters' tests: Apicurio Registry 2.4.2 with in-memory storage.

``jvm/registry/pom.xml`` builds it from Maven Central's jars with Quarkus (``scripts/jars.sh``
``sparkcat_need_jars registry`` -> ``.jars/registry/registry-runner.jar`` + ``lib/``); this starts
it with ``java -jar`` on a free loopback port. Clients use its Confluent-compatible API, whose base
URL is :attr:`SchemaRegistry.url` (``.../apis/ccompat/v7``), as ``schema.registry.url``.

The Avro, JSON Schema and Protobuf tests share it. For ``PROTOBUF`` it stores a schema as given and gives it back
as stored, whatever ``format`` asks: a base64 FileDescriptorProto (what confluent-kafka and sparkcat register)
comes back as such, as Confluent's registry gives it for ``format=serialized``; references (an imported file under
its own subject) are kept. It cannot parse .proto text importing google/protobuf files (HTTP 500).
"""

from __future__ import annotations

import json
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from tests.broker import REPO, free_port, java

RUNNER = REPO / ".jars" / "registry" / "registry-runner.jar"


class SchemaRegistry:
    """One registry JVM; ``stop()`` ends it (SIGTERM, then SIGKILL)."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/apis/ccompat/v7"
        self._log = Path(tempfile.mkdtemp(prefix="sparkcat-registry-")) / "registry.log"
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout_s: float = 120.0) -> SchemaRegistry:
        if not RUNNER.exists():
            raise RuntimeError(f"{RUNNER} is missing: run tests through tests/run.sh (it builds it)")
        cmd = [java(), "-Xms64m", "-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
               f"-Dquarkus.http.port={self.port}", "-Dquarkus.http.host=127.0.0.1",
               "-jar", str(RUNNER)]
        with open(self._log, "wb") as out:
            self._proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                          stdin=subprocess.DEVNULL)
        self._wait_ready(timeout_s)
        return self

    def _wait_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._proc is not None and self._proc.poll() is not None:
                raise RuntimeError(f"schema registry exited: {self.tail()}")
            try:
                self.get("/subjects")
                return
            except (urllib.error.URLError, ConnectionError, OSError):
                time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"schema registry not ready after {timeout_s}s: {self.tail()}")

    def get(self, path: str) -> object:
        with urllib.request.urlopen(self.url + path, timeout=10) as resp:
            return json.loads(resp.read())

    def tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self._log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self) -> None:
        if self._proc is None:
            return
        self._proc.terminate()
        try:
            self._proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._proc = None
