"""The ``jdbc-source`` connector against a real PostgreSQL: every mode over live inserts and updates.

The first tests drive the connector and its task the way the runtime does (driver side:
``latest_offsets``/``advance``; executor side: ``poll`` over a range) without Spark, so each mode's
rows and offsets are checked exactly. The last runs the connector in a Driver with Kafka stores:
tables into topics, a ``tasks.max`` change, and offsets in Connect JDBC's format.
"""

from __future__ import annotations

import datetime as dt
import json

import pytest

from sparkcat.api import partition_key
from sparkcat.connectors.jdbc_source import JdbcSourceConnector, JdbcSourceTask
from sparkcat.errors import ConnectorError
from tests.integration.connectors.test_kafka_sink import kafka_worker
from sparkcat.model.config_state import TargetState
from tests.integration.runtime.test_driver import start_driver, states, status_of
from tests.kafka_helpers import read_json_values, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

UTC = dt.timezone.utc


def make_tasks(config: dict[str, str], max_tasks: int = 1) -> list[JdbcSourceTask]:
    connector = JdbcSourceConnector()
    connector.start(config)
    tasks = []
    for task_config in connector.task_configs(max_tasks):
        task = JdbcSourceTask()
        task.start(task_config)
        tasks.append(task)
    return tasks


class Reader:
    """One task read as the runtime reads it: plan ``(committed, latest]``, poll it, commit the end."""

    def __init__(self, task: JdbcSourceTask) -> None:
        self.task = task
        self.committed = {partition_key(p): None for p in task.partitions()}

    def batch(self, budget: int | None = None) -> list[dict]:
        latest = self.task.latest_offsets(dict(self.committed))
        values = []
        for partition in self.task.partitions():
            key = partition_key(partition)
            start, end = self.committed[key], latest[key]
            if budget is not None:
                end = self.task.advance(partition, start, end, budget)
            if end == start:
                continue
            values += [r.value for r in self.task.poll(partition, start, end)]
            self.committed[key] = end
        return values


@pytest.fixture
def db(postgres, pg_database):
    with postgres.connect(pg_database) as conn:
        yield conn


def base(postgres, pg_database, **extra) -> dict[str, str]:
    return {**postgres.connection_config(pg_database), "topic.prefix": "pg-", "poll.interval.ms": "0", **extra}


def test_incrementing_mode_reads_new_rows_once_in_order_with_connect_offsets(postgres, pg_database, db):
    db.execute("CREATE TABLE orders (id SERIAL PRIMARY KEY, item TEXT, qty INT, price NUMERIC(10,2), "
               "ok BOOLEAN, day DATE, at TIMESTAMP, raw BYTEA)")
    db.execute("INSERT INTO orders (item, qty, price, ok, day, at, raw) SELECT 'item-' || g, g, g * 1.5, g % 2 = 0,"
               " DATE '2024-01-01' + g, TIMESTAMP '2024-01-01 00:00:00' + g * INTERVAL '1 second', '\\x0102'"
               " FROM generate_series(1, 25) g")
    (task,) = make_tasks(base(postgres, pg_database, mode="incrementing", **{"incrementing.column.name": "id"}))
    assert task.value_schema() == ("`id` INT, `item` STRING, `qty` INT, `price` DECIMAL(10,2), `ok` BOOLEAN, "
                                   "`day` DATE, `at` TIMESTAMP, `raw` BINARY")
    reader = Reader(task)
    first = reader.batch(budget=10)  # admission control: at most 10 rows
    assert [v["id"] for v in first] == list(range(1, 11))
    assert first[2]["price"] == __import__("decimal").Decimal("4.50") and first[2]["raw"] == b"\x01\x02"
    assert first[0]["at"] == dt.datetime(2024, 1, 1, 0, 0, 1, tzinfo=UTC)
    assert [v["id"] for v in reader.batch()] == list(range(11, 26))
    assert reader.batch() == []
    db.execute("INSERT INTO orders (item, qty) VALUES ('late', 1), ('later', 2)")
    assert [v["item"] for v in reader.batch()] == ["late", "later"]
    (partition,) = task.partitions()
    assert partition == {"protocol": "1", "table": f"{pg_database}.public.orders"}
    assert reader.committed[partition_key(partition)] == {"incrementing": 27}
    task.stop()


def test_timestamp_mode_reads_late_rows_committed_within_the_delay(postgres, pg_database, db):
    db.execute("CREATE TABLE events (id INT, updated TIMESTAMP NOT NULL)")
    (task,) = make_tasks(base(postgres, pg_database, mode="timestamp",
                              **{"timestamp.column.name": "updated", "timestamp.delay.interval.ms": "3000"}))
    reader = Reader(task)
    db.execute("INSERT INTO events VALUES (1, now() - INTERVAL '1 hour'), (2, now())")
    assert [v["id"] for v in reader.batch()] == [1]  # row 2 is younger than the delay: it waits
    # A transaction that began earlier commits now: its row's timestamp is older than row 2's.
    db.execute("INSERT INTO events VALUES (3, now() - INTERVAL '1 second')")
    assert reader.batch() == []
    db.execute("UPDATE events SET updated = now() WHERE id = 1")  # an update moves row 1 past the offset
    # until the database's clock has passed every row by the delay (the task's own condition)
    wait_until(lambda: db.execute("SELECT bool_and(updated < CURRENT_TIMESTAMP - INTERVAL '3 seconds') "
                                  "FROM events").fetchone()[0], timeout_s=30, interval_s=0.1,
               message="every row to be older than timestamp.delay.interval.ms")
    # In timestamp order: the late row 3 is not skipped, and the updated row 1 is read again.
    assert [v["id"] for v in reader.batch()] == [3, 2, 1]
    assert reader.batch() == []
    offset = next(iter(reader.committed.values()))
    assert set(offset) == {"timestamp", "timestamp_nanos"}
    task.stop()


def test_timestamp_incrementing_mode_reads_updates_and_ties(postgres, pg_database, db):
    db.execute("CREATE TABLE users (id INT PRIMARY KEY, name TEXT, modified TIMESTAMPTZ NOT NULL)")
    db.execute("INSERT INTO users VALUES (1, 'a', '2024-05-01T00:00:00Z'), (2, 'b', '2024-05-01T00:00:00Z'),"
               " (3, 'c', '2024-05-02T00:00:00Z')")
    (task,) = make_tasks(base(postgres, pg_database, mode="timestamp+incrementing",
                              **{"timestamp.column.name": "modified", "incrementing.column.name": "id"}))
    reader = Reader(task)
    assert [v["id"] for v in reader.batch(budget=1)] == [1]  # the tie at one timestamp is split by id
    assert [v["id"] for v in reader.batch()] == [2, 3]
    db.execute("UPDATE users SET name = 'b2', modified = '2024-06-01T00:00:00Z' WHERE id = 2")
    assert [(v["id"], v["name"]) for v in reader.batch()] == [(2, "b2")]
    assert next(iter(reader.committed.values())) == {
        "timestamp": int(dt.datetime(2024, 6, 1, tzinfo=UTC).timestamp() * 1000), "timestamp_nanos": 0,
        "incrementing": 2}
    task.stop()


def test_bulk_mode_and_query_mode(postgres, pg_database, db):
    db.execute("CREATE TABLE prices (sku TEXT, cents BIGINT)")
    db.execute("INSERT INTO prices VALUES ('a', 100), ('b', 250)")
    (bulk,) = make_tasks(base(postgres, pg_database, mode="bulk", **{"poll.interval.ms": "300"}))
    reader = Reader(bulk)
    assert sorted(v["sku"] for v in reader.batch()) == ["a", "b"]
    assert reader.batch() == []  # within poll.interval.ms
    db.execute("INSERT INTO prices VALUES ('c', 1)")
    again = wait_until(reader.batch, timeout_s=30, interval_s=0.05, message="the next bulk poll")
    assert sorted(v["sku"] for v in again) == ["a", "b", "c"]  # the whole table again
    (query,) = make_tasks(base(postgres, pg_database, mode="incrementing", query="SELECT cents AS n, sku FROM "
                               "prices WHERE cents > 50", **{"incrementing.column.name": "n"}))
    assert query.partitions() == [{"query": "query"}]  # Connect JDBC's constant partition for query mode
    assert [v["sku"] for v in Reader(query).batch()] == ["a", "b"]
    bulk.stop()
    query.stop()


def test_tables_with_different_columns_are_refused_by_name(postgres, pg_database, db):
    db.execute("CREATE TABLE a (id INT)")
    db.execute("CREATE TABLE b (id INT, extra TEXT)")
    with pytest.raises(ConnectorError, match="public.b have other columns than public.a"):
        make_tasks(base(postgres, pg_database, mode="bulk"))


def test_tables_into_topics_through_the_driver_keep_offsets_across_tasks_max(spark, broker, postgres, pg_database,
                                                                             db, tmp_path, unique_name):
    for t in ("t1", "t2"):
        db.execute(f"CREATE TABLE {t} (id BIGSERIAL PRIMARY KEY, name TEXT)")
        db.execute(f"INSERT INTO {t} (name) SELECT '{t}-' || g FROM generate_series(1, 50) g")
    prefix = f"{unique_name}-"
    config = {"connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector", "tasks.max": "2",
              **base(postgres, pg_database, mode="incrementing"), "incrementing.column.name": "id",
              "topic.prefix": prefix, "poll.interval.ms": "200", "trigger.interval.ms": "200",
              "value.converter.schemas.enable": "false"}
    driver = start_driver(spark, kafka_worker(broker, tmp_path, unique_name))
    try:
        driver.herder.put_connector_config("pg", config)
        wait_until(lambda: all(len(read_json_values(broker.bootstrap, prefix + t)) >= 50 for t in ("t1", "t2")),
                   timeout_s=120, message="both tables in their topics")
        assert states(driver, "pg") == ("RUNNING", ["RUNNING", "RUNNING"])
        driver.herder.put_connector_config("pg", {**config, "tasks.max": "1"})
        for t in ("t1", "t2"):
            db.execute(f"INSERT INTO {t} (name) SELECT '{t}-' || g FROM generate_series(51, 60) g")
        wait_until(lambda: all(len(read_json_values(broker.bootstrap, prefix + t)) >= 60 for t in ("t1", "t2")),
                   timeout_s=120, message="the new rows after tasks.max changed")

        def stored() -> dict:
            return {json.dumps(p, sort_keys=True): o for p, o in driver.herder.connector_offsets("pg")}
        # the batch that wrote each table's last row committed: nothing more can arrive until the offsets change
        wait_until(lambda: sorted(o.get("incrementing") for o in stored().values()) == [60, 60],
                   message=lambda: f"both tables' offsets at 60: {stored()}")
        offsets = stored()
        # Offsets written in Connect JDBC's format (as `PATCH /connectors/pg/offsets` takes them) are honoured.
        driver.herder.set_target_state("pg", TargetState.STOPPED)
        wait_until(lambda: status_of(driver, "pg")["connector"]["state"] == "STOPPED", timeout_s=60,
                   message="STOPPED")
        t1 = {"protocol": "1", "table": f"{pg_database}.public.t1"}
        driver.herder.alter_connector_offsets("pg", [(t1, {"incrementing": 55})])
        driver.herder.set_target_state("pg", TargetState.STARTED)
        wait_until(lambda: len(read_json_values(broker.bootstrap, prefix + "t1")) >= 65, timeout_s=120,
                   message="t1 again from id 56")
        wait_until(lambda: stored().get(json.dumps(t1, sort_keys=True)) == {"incrementing": 60},
                   message=lambda: f"t1's offset back at 60: {stored()}")
    finally:
        driver.stop()
    assert [v["id"] for v in read_json_values(broker.bootstrap, prefix + "t1")][60:] == [56, 57, 58, 59, 60]
    for t in ("t1", "t2"):
        values = read_json_values(broker.bootstrap, prefix + t)[:60]
        assert [v["id"] for v in values] == list(range(1, 61))  # each row once, in order: offsets were kept
        assert values[0] == {"id": 1, "name": f"{t}-1"}
    assert offsets == {json.dumps({"protocol": "1", "table": f"{pg_database}.public.{t}"}, sort_keys=True):
                       {"incrementing": 60} for t in ("t1", "t2")}


def test_table_to_table_without_kafka_through_a_sink_connector(spark, broker, postgres, pg_database, db, tmp_path,
                                                               unique_name):
    """``sink.*`` keys: the source's rows go straight into the JDBC sink, each row once."""
    db.execute("CREATE TABLE src (id BIGSERIAL PRIMARY KEY, name TEXT, amount NUMERIC(8,2))")
    db.execute("INSERT INTO src (name, amount) SELECT 'n' || g, g / 4.0 FROM generate_series(1, 300) g")
    target = postgres.create_database("target")
    sink = {f"sink.{k}": v for k, v in postgres.connection_config(target).items()}
    config = {"connector.class": "jdbc-source", **base(postgres, pg_database, mode="incrementing"),
              "incrementing.column.name": "id", "topic.prefix": "copy_", "table.whitelist": "src",
              "batch.max.records": "100", "trigger.interval.ms": "200", "sink.connector.class": "jdbc-sink",
              **sink, "sink.auto.create": "true", "sink.insert.mode": "upsert", "sink.pk.mode": "record_value",
              "sink.pk.fields": "id"}
    driver = start_driver(spark, kafka_worker(broker, tmp_path, unique_name))
    with postgres.connect(target) as out:
        def copied() -> int:
            try:
                return out.execute("SELECT count(*) FROM copy_src").fetchone()[0]
            except Exception:
                return 0
        try:
            driver.herder.put_connector_config("pg-copy", config)
            wait_until(lambda: copied() >= 300, timeout_s=120, message="the table copied")
            db.execute("INSERT INTO src (name, amount) VALUES ('late', 1.25)")
            wait_until(lambda: copied() >= 301, timeout_s=60, message="the new row copied")
            # its batch committed: nothing more can arrive (a duplicate would come from a replay, before this)
            wait_until(lambda: [o for _, o in driver.herder.connector_offsets("pg-copy")] == [{"incrementing": 301}],
                       message=lambda: f"pg-copy's offset at 301: {driver.herder.connector_offsets('pg-copy')}")
        finally:
            driver.stop()
        assert out.execute("SELECT count(*), count(DISTINCT id), sum(amount) FROM copy_src").fetchone() == (
            301, 301, db.execute("SELECT sum(amount) FROM src").fetchone()[0])
