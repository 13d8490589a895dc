"""A throw-away Apache Kafka broker (KRaft, single node) for integration tests and benchmarks.

It runs Apache Kafka's own jars from Maven Central (``jvm/kafka/pom.xml``, resolved by
``scripts/jars.sh`` into ``.jars/kafka``) as one JVM process that is both controller and
broker, with its log directory in a temporary folder and its listeners on free loopback ports.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

REPO = Path(__file__).resolve().parent.parent
KAFKA_JARS = REPO / ".jars" / "kafka"

_LOG4J = """\
rootLogger.level = {level}
rootLogger.appenderRef.file.ref = file
appender.file.type = File
appender.file.name = file
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = %d %p %c{{1}}: %m%n
"""


def log4j_properties(log: Path, level: str = "warn", loggers: dict[str, str] | None = None) -> str:
    """A log4j2 properties file sending a JVM's log to ``log`` at ``level``; ``loggers``: {name: level}."""
    text = _LOG4J.format(log=log, level=level)
    for i, (name, logger_level) in enumerate((loggers or {}).items()):
        text += f"logger.l{i}.name = {name}\nlogger.l{i}.level = {logger_level}\n"
    return text


def free_port() -> int:
    """A loopback TCP port nobody listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def java() -> str:
    """The ``java`` executable ($JAVA_HOME/bin/java, else the one on PATH)."""
    home = os.environ.get("JAVA_HOME")
    candidate = Path(home, "bin", "java") if home else None
    return str(candidate) if candidate and candidate.exists() else (shutil.which("java") or "java")


def classpath() -> str:
    """The broker's classpath; tests/run.sh and bench/run.py resolve the jars before Python starts."""
    if not KAFKA_JARS.is_dir() or not any(KAFKA_JARS.glob("*.jar")):
        raise RuntimeError(f"no Kafka jars in {KAFKA_JARS}: run tests/run.sh (it resolves them with Maven)")
    return str(KAFKA_JARS / "*")


class KafkaBroker:
    """Apache Kafka in KRaft mode on free loopback ports; ``stop()`` ends it and deletes its data.

    ``stop(keep_data=True)`` then ``start()`` brings the same broker back (same data, cluster id
    and ports, so clients reconnect to the same bootstrap address): a broker outage.
    ``pause()``/``resume()`` freeze it with SIGSTOP/SIGCONT instead: connections hang, not refused.

    ``nodes=3`` starts three processes, each broker and controller, for tests that need
    replication (the internal topics' default replication factor is then the broker's 3).
    """

    def __init__(self, log_dir: Path | None = None, start_timeout_s: float = 60.0,
                 settings: dict[str, str] | None = None, nodes: int = 1,
                 extra_listener: tuple[str, int, int] | None = None) -> None:
        self.ports = [free_port() for _ in range(nodes)]
        self.controller_ports = [free_port() for _ in range(nodes)]
        self.port = self.ports[0]
        self.bootstrap = ",".join(f"127.0.0.1:{port}" for port in self.ports)
        self.log_dir = log_dir or Path(tempfile.mkdtemp(prefix="sparkcat-kafka-"))
        self.log_path = self.log_dir / "kafka-1.log"
        self.start_timeout_s = start_timeout_s
        self.settings = settings or {}
        # (name, port, advertised port) of a second listener, e.g. behind tests.tcp_proxy (one node only)
        self.extra_listener = extra_listener
        self.cluster_id = ""
        self._procs: list[subprocess.Popen[bytes]] = []

    @property
    def nodes(self) -> int:
        return len(self.ports)

    def data_dir(self, node: int) -> Path:
        return self.log_dir / f"data-{node}"

    def properties(self, node: int = 1) -> dict[str, str]:
        """server.properties of node ``node`` (1-based), fast to start and quick to rebalance."""
        port, controller = self.ports[node - 1], self.controller_ports[node - 1]
        voters = ",".join(f"{i}@127.0.0.1:{p}" for i, p in enumerate(self.controller_ports, start=1))
        replicas = str(min(self.nodes, 3))
        props = {
            "process.roles": "broker,controller",
            "node.id": str(node),
            "controller.quorum.voters": voters,
            "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.data_dir(node)),
            "num.partitions": "1",
            "default.replication.factor": replicas,
            "offsets.topic.replication.factor": replicas,
            "offsets.topic.num.partitions": "4",
            "transaction.state.log.replication.factor": replicas,
            "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "4",
            "group.initial.rebalance.delay.ms": "0",
            # sparkcat's failover tests run drivers with session.timeout.ms=3000 (docs/running.md "Several drivers")
            "group.min.session.timeout.ms": "2000",
            "share.coordinator.state.topic.replication.factor": replicas,
            "auto.create.topics.enable": "true",
            "log.cleaner.backoff.ms": "1000",
            # Tests write records with fixed timestamps (e.g. 2023): time-based retention (7 days by
            # default) would delete them at the first retention check, 30 s after the start.
            "log.retention.ms": "-1",
        }
        if self.extra_listener is not None:
            name, extra, advertised = self.extra_listener
            props["listeners"] += f",{name}://127.0.0.1:{extra}"
            props["advertised.listeners"] += f",{name}://127.0.0.1:{advertised}"
            props["listener.security.protocol.map"] += f",{name}:PLAINTEXT"
            props["inter.broker.listener.name"] = "PLAINTEXT"
        if self.nodes > 1:  # a node starved of CPU on a loaded 2-core machine must not be fenced (default 9 s)
            props["broker.session.timeout.ms"] = "30000"
        props.update(self.settings)
        return props

    def _write_config(self, node: int) -> tuple[Path, Path]:
        self.data_dir(node).mkdir(parents=True, exist_ok=True)
        server = self.log_dir / f"server-{node}.properties"
        server.write_text("".join(f"{k}={v}\n" for k, v in self.properties(node).items()))
        log4j = self.log_dir / f"log4j2-{node}.properties"
        log4j.write_text(log4j_properties(self.log_dir / f"kafka-{node}.log"))
        return server, log4j

    def _jvm(self, log4j: Path, *args: str) -> list[str]:
        return [java(), "-Xms128m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                f"-Dlog4j2.configurationFile={log4j}", "-cp", classpath(), *args]

    def start(self) -> KafkaBroker:
        """Format each node's storage (kept as it is after ``stop(keep_data=True)``), launch the nodes and
        wait until they all answer."""
        if not self.cluster_id or not (self.data_dir(1) / "meta.properties").exists():
            self.cluster_id = _random_cluster_id()
        try:
            for node in range(1, self.nodes + 1):
                server, log4j = self._write_config(node)
                fmt = subprocess.run(self._jvm(log4j, "kafka.tools.StorageTool", "format", f"--cluster-id={self.cluster_id}",
                                               "-c", str(server), "--ignore-formatted"),
                                     capture_output=True, text=True, timeout=120)
                if fmt.returncode != 0:
                    raise RuntimeError(f"formatting Kafka's storage failed: {fmt.stdout}{fmt.stderr}")
                self._procs.append(self._launch(node))
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self) -> None:
        """Poll each node until every one of them lists all nodes as live brokers (a node still fenced is
        not listed, and a topic asking for 3 replicas would be refused), a node exits, or the start
        timeout passes."""
        admins = [AdminClient({"bootstrap.servers": f"127.0.0.1:{port}", "log_level": 0}) for port in self.ports]
        deadline = time.monotonic() + self.start_timeout_s
        waiting = list(admins)
        while waiting:
            exited = [p for p in self._procs if p.poll() is not None]
            if exited:
                raise RuntimeError(f"kafka exited with {exited[0].returncode}; {self.tail()}")
            try:
                if len(waiting[0].list_topics(timeout=1.0).brokers) == self.nodes:
                    waiting.pop(0)
                    continue
                problem = "not every node is a live broker yet"
            except KafkaException as exc:
                problem = str(exc)
            if time.monotonic() > deadline:
                raise RuntimeError(f"kafka not ready at {self.bootstrap}: {problem}; {self.tail()}")
            time.sleep(0.1)

    def tail(self, lines: int = 20) -> str:
        """The last lines of the first node's log and console output, for error messages."""
        text = []
        for path in (self.log_path, self.log_dir / "kafka-1.out"):
            if path.exists():
                text += path.read_text(errors="replace").splitlines()[-lines:]
        return "\n".join(text) or "(no log)"

    def stop(self, timeout_s: float = 20.0, keep_data: bool = False) -> None:
        """Stop every node (SIGTERM, then SIGKILL after ``timeout_s``) and delete their data unless ``keep_data``."""
        self.resume()  # a paused JVM cannot handle SIGTERM
        procs, self._procs = self._procs, []
        for proc in procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=timeout_s)
        if not keep_data:
            for node in range(1, self.nodes + 1):
                shutil.rmtree(self.data_dir(node), ignore_errors=True)

    def restart(self) -> KafkaBroker:
        """Stop the nodes keeping their data, then start them again on the same ports."""
        self.stop(keep_data=True)
        return self.start()

    def stop_node(self, node: int, kill: bool = False) -> None:
        """Stop one node (1-based) keeping its data: SIGTERM (a rolling restart) or SIGKILL (a crash)."""
        proc = self._procs[node - 1]
        if proc.poll() is None:
            proc.send_signal(signal.SIGCONT)
            proc.kill() if kill else proc.terminate()
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=20)

    def start_node(self, node: int) -> None:
        """Start a stopped node again on its ports with its data (the others keep running)."""
        self._procs[node - 1] = self._launch(node)

    def _launch(self, node: int) -> subprocess.Popen[bytes]:
        """Node ``node``'s JVM on the config files ``_write_config`` wrote, its console appended to kafka-N.out."""
        server, log4j = self.log_dir / f"server-{node}.properties", self.log_dir / f"log4j2-{node}.properties"
        with open(self.log_dir / f"kafka-{node}.out", "ab") as out:
            return subprocess.Popen(self._jvm(log4j, "kafka.Kafka", str(server)), stdout=out,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def pause(self) -> None:
        """Freeze every node (SIGSTOP): clients' connections hang until ``resume``."""
        for proc in self._procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        """Let frozen nodes run again (SIGCONT); harmless when none is frozen."""
        for proc in self._procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGCONT)

    def __enter__(self) -> KafkaBroker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _random_cluster_id() -> str:
    """A KRaft cluster id: 16 random bytes, URL-safe base64 without padding (as StorageTool makes it).

    Like Kafka's ``Uuid.randomUuid`` it never starts with ``-``, which a command line would take for
    an option.
    """
    import base64
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text
