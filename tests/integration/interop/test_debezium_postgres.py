"""Debezium's PostgreSQL connector (3.6.1.Final, from a plugin.path as a Connect user unpacks it) on sparkcat:
change data capture from a real PostgreSQL (``wal_level=logical``, ``plugin.name=pgoutput``) through a real broker
into a Delta table, the lakehouse pipeline a data engineer builds with Debezium.

The Debezium task runs on an executor as any Java source task; its connector (and Debezium's own SMT
``ExtractNewRecordState``, from the same plugin) on the Java side. Each test has its own database, replication slot,
publication and topics. The worker writes sources exactly once (KIP-618, sparkcat's default with Kafka stores):
``PostgresConnector.exactlyOnceSupport`` answers SUPPORTED, so ``exactly.once.support=required`` is accepted, and a
driver SIGKILLed while Debezium streams leaves every change in the topic once. (A snapshot cut short is redone from
its start, by Debezium's design, so the kill lands once streaming began.)
"""

from __future__ import annotations

import collections
import json
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sparkcat.bootstrap import Driver
from sparkcat.config.stores import offsets_store_spec
from sparkcat.config.worker import WorkerConfig
from sparkcat.model.config_state import TargetState
from sparkcat.storage.factory import open_offsets_store
from tests.broker import REPO
from tests.driver_process import end_sessions, kill_while, seeded_random, start_driver_process
from tests.integration.runtime.test_driver import kafka_worker_fields, states
from tests.kafka_helpers import create_topic, read_topic, wait_until
from tests.postgres import PASSWORD, USER, PostgresServer

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

POSTGRES_CONNECTOR = "io.debezium.connector.postgresql.PostgresConnector"
#: Debezium's SMT: the row's new state as the value, with Debezium's op as ``__op``; a delete becomes a null value
#: (with the row's schema), which the Delta sink's ``delete.enabled`` turns into a delete
UNWRAP = {"transforms": "unwrap", "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState",
          "transforms.unwrap.add.fields": "op"}


@pytest.fixture(scope="module")
def cdc_postgres() -> Iterator[PostgresServer]:
    """A PostgreSQL server of this module's own that decodes its WAL for logical replication."""
    with PostgresServer(logical_replication=True) as server:
        yield server


@pytest.fixture(scope="module")
def plugins(tmp_path_factory) -> Path:
    """A plugin.path with Debezium's PostgreSQL connector in a directory of its own, as its tarball unpacks."""
    jars = REPO / ".jars" / "debezium"
    assert any(jars.glob("debezium-connector-postgres-*.jar")), "tests/run.sh resolves Debezium into .jars/debezium"
    path = tmp_path_factory.mktemp("plugins")
    shutil.copytree(jars, path / "debezium-connector-postgres", ignore=shutil.ignore_patterns(".stamp"))
    return path


def debezium_config(pg: PostgresServer, database: str, prefix: str, tables: str) -> dict[str, str]:
    """Debezium's own keys, as a Connect user writes them; slot and publication named after the topic prefix."""
    return {"connector.class": POSTGRES_CONNECTOR, "plugin.name": "pgoutput", "tasks.max": "1",
            "database.hostname": "127.0.0.1", "database.port": str(pg.port), "database.user": USER,
            "database.password": PASSWORD, "database.dbname": database, "topic.prefix": prefix,
            "slot.name": prefix, "publication.name": prefix, "publication.autocreate.mode": "filtered",
            "table.include.list": tables, "poll.interval.ms": "100", "exactly.once.support": "required",
            "trigger.interval.ms": "300"}


def events(bootstrap: str, topic: str) -> list[tuple[int, str | None]]:
    """The topic's committed records as (row id, Debezium's op), op None for a deleted row: ExtractNewRecordState
    makes a delete a null value with the row's schema, which JsonConverter writes as ``{"schema": ..., "payload":
    null}``; a Kafka tombstone (a null value) would be None too."""
    out = []
    for _, _, key, value in read_topic(bootstrap, topic, timeout_s=30):
        row = json.loads(value)["payload"] if value is not None else None
        out.append((json.loads(key)["payload"]["id"], None if row is None else row["__op"]))
    return out


def by_key(changes: list[tuple[int, str | None]]) -> dict[int, list[str | None]]:
    """Each row's ops in the order the topic holds them (one key is in one partition, in order)."""
    out: dict[int, list[str | None]] = collections.defaultdict(list)
    for row_id, op in changes:
        out[row_id].append(op)
    return dict(out)


ITEMS = "id INT, name STRING, qty INT, price DOUBLE, active BOOLEAN"


def test_snapshot_inserts_updates_and_deletes_reach_kafka_and_a_delta_table_equal_to_postgres(
        spark, broker, cdc_postgres, plugins, tmp_path, unique_name):
    prefix, db, table = unique_name.replace("-", "_"), cdc_postgres.create_database(), tmp_path / "items"
    topic = f"{prefix}.public.items"
    with cdc_postgres.connect(db) as conn:
        conn.execute("CREATE TABLE items (id INT PRIMARY KEY, name TEXT NOT NULL, qty INT, price DOUBLE PRECISION, "
                     "active BOOLEAN)")
        conn.execute("INSERT INTO items SELECT i, 'item-' || i, i * 10, i * 1.25, i % 3 = 0 "
                     "FROM generate_series(1, 40) i")
        conn.execute("CREATE TABLE other (id INT PRIMARY KEY)")  # not in table.include.list: never captured
        conn.execute("INSERT INTO other VALUES (1)")
    create_topic(broker.bootstrap, topic, partitions=2)
    worker = WorkerConfig(**kafka_worker_fields(broker.bootstrap, tmp_path, unique_name), plugin_path=[str(plugins)],
                          plugin_discovery="service_load")
    driver = Driver(spark, worker, rest=False, watch_pipelines=False)
    driver.start()
    try:
        driver.herder.put_connector_config("pg-items", {
            **debezium_config(cdc_postgres, db, prefix, "public.items"), **UNWRAP})
        driver.herder.put_connector_config("items-delta", {
            "connector.class": "delta", "topics": topic, "table.path": str(table), "write.mode": "merge",
            "delete.enabled": "true", "key.schema": "id INT", "value.schema": ITEMS, "trigger.interval.ms": "300"})
        wait_until(lambda: len(events(broker.bootstrap, topic)) >= 40, timeout_s=120, message="the snapshot in Kafka")
        assert states(driver, "pg-items") == ("RUNNING", ["RUNNING"])

        # While the connector streams: several transactions, a row deleted and inserted again in one of them,
        # a primary key changed (Debezium: the old key deleted, the new one created)
        with cdc_postgres.connect(db) as conn:
            conn.execute("INSERT INTO items SELECT i, 'new-' || i, i, i * 0.5, true FROM generate_series(41, 50) i")
            conn.execute("UPDATE items SET qty = qty + 1, active = NOT active WHERE id % 4 = 0")
            conn.execute("DELETE FROM items WHERE id IN (3, 5, 45)")
            conn.execute("UPDATE items SET name = 'renamed' WHERE id = 42")
            with conn.transaction():
                conn.execute("DELETE FROM items WHERE id = 7")
                conn.execute("INSERT INTO items VALUES (7, 'seven again', 77, 7.5, false)")
            conn.execute("UPDATE items SET id = 100 WHERE id = 9")
            conn.execute("INSERT INTO other VALUES (2)")
            expected = sorted(conn.execute("SELECT id, name, qty, price, active FROM items").fetchall())

        def delta_rows() -> list[tuple]:
            if not any(table.glob("_delta_log/*.json")):
                return []
            return sorted(tuple(r) for r in spark.read.format("delta").load(str(table))
                          .select("id", "name", "qty", "price", "active").collect())
        wait_until(lambda: delta_rows() == expected, timeout_s=180,
                   message=lambda: f"the Delta table equal to PostgreSQL's: {len(delta_rows())} rows, not "
                                   f"{len(expected)}")
        assert states(driver, "items-delta") == ("RUNNING", ["RUNNING"])
        # Connect's offsets, Debezium's: {"server": topic.prefix} -> the last LSN it streamed, past the snapshot
        [(partition, stored)] = driver.herder.connector_offsets("pg-items")
        assert partition == {"server": prefix} and "snapshot" not in stored and stored["lsn"] > 0
        # Debezium confirms the committed offsets to its replication slot (after commit(), through the task's
        # OffsetStorageReader), so PostgreSQL can drop the WAL behind them
        committed = stored.get("lsn_commit", stored["lsn"])

        def confirmed() -> int:
            with cdc_postgres.connect(db) as conn:
                row = conn.execute("SELECT (confirmed_flush_lsn - '0/0'::pg_lsn)::bigint FROM pg_replication_slots "
                                   "WHERE slot_name = %s", (prefix,)).fetchone()
            return int(row[0] or 0)
        wait_until(lambda: confirmed() >= committed, timeout_s=60,
                   message=lambda: f"the slot confirmed up to the committed LSN {committed}: {confirmed()}")
    finally:
        driver.stop()

    changes = by_key(events(broker.bootstrap, topic))
    assert all(changes[i][0] == "r" for i in range(1, 41))  # the snapshot: every row read once, then its changes
    assert changes == {
        **{i: ["r"] for i in range(1, 41) if i % 4 and i not in (3, 5, 7, 9)},
        **{i: ["r", "u"] for i in range(4, 41, 4)},
        3: ["r", None], 5: ["r", None], 7: ["r", None, "c"], 9: ["r", None], 100: ["c"],
        **{i: ["c"] for i in range(41, 51) if i % 4 and i not in (42, 45)},
        **{i: ["c", "u"] for i in (44, 48)}, 42: ["c", "u"], 45: ["c", None]}


CONNECTOR = "pg-events"


class Inserts:
    """Rows of ``events`` inserted one transaction at a time on a thread of its own, from ``first`` on, while a
    driver runs; bounded in count and time (``stop`` ends it). ``last`` is the last id committed."""

    def __init__(self, pg: PostgresServer, database: str, first: int) -> None:
        self.pg, self.database, self.last = pg, database, first - 1
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="events-inserts", daemon=True)

    def _run(self) -> None:
        with self.pg.connect(self.database) as conn:
            deadline = time.monotonic() + 300
            while not self._stop.is_set() and self.last < 20_000 and time.monotonic() < deadline:
                conn.execute("INSERT INTO events VALUES (%s, %s)", (self.last + 1, f"event {self.last + 1}"))
                self.last += 1
                self._stop.wait(0.02)

    def __enter__(self) -> Inserts:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> int:
        self._stop.set()
        self._thread.join(30)
        return self.last


def stored_offset(worker: WorkerConfig, prefix: str) -> dict:
    """Debezium's committed offset in the worker's offsets topic (read_committed), {} before the first."""
    store = open_offsets_store(offsets_store_spec(worker))
    try:
        return store.get(CONNECTOR, stable=True).get(json.dumps({"server": prefix}, separators=(",", ":")), {})
    finally:
        store.close()


@pytest.mark.timeout(600)
def test_a_sigkilled_driver_resumes_debezium_with_every_change_exactly_once(spark, broker, cdc_postgres, plugins,
                                                                            tmp_path, unique_name):
    """The driver process is SIGKILLed at a random moment while Debezium streams inserts; the next driver resumes
    from the offset committed with the last transaction, and the topic (read_committed) holds each row once."""
    prefix, db = unique_name.replace("-", "_"), cdc_postgres.create_database()
    topic = f"{prefix}.public.events"
    with cdc_postgres.connect(db) as conn:
        conn.execute("CREATE TABLE events (id INT PRIMARY KEY, note TEXT)")
        conn.execute("INSERT INTO events SELECT i, 'event ' || i FROM generate_series(1, 20) i")
    create_topic(broker.bootstrap, topic)
    fields = {**kafka_worker_fields(broker.bootstrap, tmp_path, unique_name), "plugin_path": [str(plugins)],
              "plugin_discovery": "service_load"}
    worker = WorkerConfig(**fields)
    config = {**debezium_config(cdc_postgres, db, prefix, "public.events"), **UNWRAP}
    rng, seed = seeded_random()
    children = []
    with Inserts(cdc_postgres, db, first=21) as inserts:
        try:
            child = start_driver_process(fields, {CONNECTOR: config}, tmp_path / "driver.log", {})
            children.append(child)
            # streaming: the snapshot is committed and streamed changes follow (a snapshot cut short is redone)
            delay = kill_while(child, tmp_path / "driver.log",
                               lambda: stored_offset(worker, prefix).get("lsn_proc", 0) > 0, rng, timeout_s=240)
        finally:
            end_sessions(children)

        def newest() -> int:
            return max((i for i, _ in events(broker.bootstrap, topic)), default=0)
        driver = Driver(spark, worker, rest=False, watch_pipelines=False)
        driver.start()
        try:
            restart = inserts.last  # inserted while no driver ran
            wait_until(lambda: newest() >= restart + 50, timeout_s=180,
                       message=lambda: f"rows inserted after the restart in Kafka, past {restart}: {newest()}")
            last = inserts.stop()
            wait_until(lambda: newest() >= last, timeout_s=180, message=f"row {last} in Kafka")
            assert states(driver, CONNECTOR) == ("RUNNING", ["RUNNING"])
            driver.herder.set_target_state(CONNECTOR, TargetState.STOPPED)
            wait_until(lambda: CONNECTOR not in driver.herder.running_connectors(), timeout_s=120,
                       message="the query to stop")
        finally:
            driver.stop()

    got = events(broker.bootstrap, topic)
    duplicated = sorted(i for i, n in collections.Counter(i for i, _ in got).items() if n > 1)
    snapshot = sum(1 for _, op in got if op == "r")  # the rows there when the snapshot ran (inserts had begun)
    assert snapshot >= 20 and got == [(i, "r" if i <= snapshot else "c") for i in range(1, last + 1)], (
        f"seed {seed}, killed {delay:.2f}s after streaming began, restarted at row {restart}: {len(got)} records for "
        f"{last} rows, "
        f"duplicated {duplicated[:20]}, missing {sorted(set(range(1, last + 1)) - {i for i, _ in got})[:20]}")
