"""Shared pytest fixtures: a real Apache Kafka broker, a local Spark session and unique names."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from tests.broker import KafkaBroker


@pytest.fixture(scope="session")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaBroker]:
    """One Apache Kafka broker (KRaft) for the whole test session; its log is under the session tmp dir."""
    with KafkaBroker(log_dir=tmp_path_factory.mktemp("kafka")) as running:
        yield running


@pytest.fixture
def unique_name() -> str:
    """A fresh name (for a topic, group or connector) no other test uses."""
    return f"t-{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="session")
def spark():
    """One local[2] Spark session for all integration tests (each test uses its own query names)."""
    from tests.spark_fixture import make_spark

    session = make_spark()
    yield session
    for query in session.streams.active:
        query.stop()


@pytest.fixture(scope="session")
def kafka_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaBroker]:
    """Three Apache Kafka nodes (KRaft), for the tests that need replication; started on first use."""
    with KafkaBroker(log_dir=tmp_path_factory.mktemp("kafka3"), nodes=3) as running:
        yield running


@pytest.fixture(scope="session")
def postgres():
    """One real PostgreSQL server (Debian's binaries, initdb + pg_ctl in a temp dir) for the session."""
    from tests.postgres import PostgresServer

    with PostgresServer() as server:
        yield server


@pytest.fixture
def pg_database(postgres) -> str:
    """A fresh, empty database on the session's PostgreSQL server, for one test."""
    return postgres.create_database()


@pytest.fixture(scope="session")
def spark_standalone(tmp_path_factory: pytest.TempPathFactory):
    """A real Spark standalone cluster (master + one 2-core worker) from pyspark's own ``spark-class``."""
    from tests.spark_cluster import SparkStandalone

    cluster = SparkStandalone(tmp_path_factory.mktemp("spark-standalone"), cores=2, memory="2g").start()
    yield cluster
    cluster.stop()


@pytest.fixture(scope="session")
def mini_hadoop(tmp_path_factory: pytest.TempPathFactory):
    """A real YARN (ResourceManager + NodeManager) and HDFS (NameNode + DataNode): Hadoop's own mini clusters in
    a JVM of their own (tests/yarn_cluster.py), with the HADOOP_CONF_DIR of a gateway host in ``conf_dir``."""
    from tests.yarn_cluster import MiniHadoop

    cluster = MiniHadoop(tmp_path_factory.mktemp("hadoop")).start()
    yield cluster
    cluster.stop()


@pytest.fixture
def connect_worker(broker: KafkaBroker, unique_name: str, tmp_path) -> Iterator:
    """A real Kafka Connect worker (distributed mode) on the session broker, with its own group and topics."""
    from tests.connect_worker import ConnectWorker

    with ConnectWorker(broker.bootstrap, unique_name, log_dir=tmp_path / "connect") as worker:
        yield worker


@pytest.fixture(scope="session")
def schema_registry() -> Iterator:
    """A real Schema Registry (Apicurio Registry, Confluent-compatible API) for the session."""
    from tests.schema_registry import SchemaRegistry

    registry = SchemaRegistry().start()
    yield registry
    registry.stop()
