"""The ``jdbc-sink`` connector against a real PostgreSQL: insert modes, pk modes, tables, deletes, replays.

Most tests drive the sink task as the runtime does per micro-batch (``begin_batch``, ``put`` in
chunks, ``flush``), without Spark, and read the table back with psycopg. One runs the connector in
a Driver that reads a real Kafka topic.
"""

from __future__ import annotations

import json

import pytest
from confluent_kafka import Producer

from sparkcat.api.records import SinkRecord
from sparkcat.api.task_context import SinkTaskContext
from sparkcat.connectors.jdbc_sink import JdbcSinkConnector, JdbcSinkTask
from sparkcat.errors import ConflictError, ConnectorError
from sparkcat.model.config_state import TargetState
from tests.integration.connectors.test_kafka_sink import kafka_worker
from tests.integration.runtime.test_driver import start_driver, states
from tests.kafka_helpers import create_topic, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


@pytest.fixture
def db(postgres, pg_database):
    with postgres.connect(pg_database) as conn:
        yield conn


def write_batch(config: dict[str, str], records: list[SinkRecord], connector: str = "sink", task_id: int = 0) -> None:
    """One micro-batch of one task, as ``sparkcat.spark.executor.sink_tasks`` runs it."""
    sink = JdbcSinkConnector()
    sink.start(config)
    task = JdbcSinkTask()
    task.initialize(SinkTaskContext(connector, task_id))
    task.start(sink.task_configs(1)[0])
    try:
        assert task.begin_batch(1)
        for lo in range(0, len(records), 7):  # the runtime puts in chunks
            task.put(records[lo:lo + 7])
        task.flush(1)
    finally:
        task.stop()


def rec(offset: int, value, key=None, topic: str = "orders", partition: int = 0) -> SinkRecord:
    return SinkRecord(topic, partition, offset, value=value, key=key)


def rows(db, sql: str) -> list[tuple]:
    return [tuple(r) for r in db.execute(sql).fetchall()]


def cfg(postgres, pg_database, **extra) -> dict[str, str]:
    return {**postgres.connection_config(pg_database), "topics": "orders", "auto.create": "true", **extra}


def test_insert_with_pk_none_auto_creates_the_table_and_a_replay_writes_nothing_twice(postgres, pg_database, db):
    config = cfg(postgres, pg_database)
    batch = [rec(i, {"id": i, "item": f"item-{i}", "price": i * 0.5, "ok": i % 2 == 0}) for i in range(20)]
    write_batch(config, batch)
    write_batch(config, batch)  # the same batch again: a replay after a crash after the commit
    write_batch(config, batch[10:] + [rec(20, {"id": 20, "item": "new", "price": 1.0, "ok": True})])
    assert rows(db, "SELECT count(*), count(DISTINCT id) FROM orders") == [(21, 21)]
    assert rows(db, "SELECT data_type FROM information_schema.columns WHERE table_name = 'orders' "
                    "ORDER BY ordinal_position") == [("bigint",), ("text",), ("double precision",), ("boolean",)]
    assert rows(db, "SELECT topic, kafka_partition, next_offset FROM sparkcat_jdbc_positions") == [("orders", 0, 21)]


def test_upsert_by_record_key_with_deletes_keeps_the_last_value_per_key(postgres, pg_database, db):
    config = cfg(postgres, pg_database, **{"insert.mode": "upsert", "pk.mode": "record_key", "pk.fields": "id",
                                           "delete.enabled": "true"})
    batch = [rec(0, {"name": "a"}, 1), rec(1, {"name": "b"}, 2), rec(2, {"name": "a2"}, 1), rec(3, None, 2),
             rec(4, {"name": "c"}, 3), rec(5, None, 3), rec(6, {"name": "c2"}, 3)]
    write_batch(config, batch)
    assert rows(db, "SELECT id, name FROM orders ORDER BY id") == [(1, "a2"), (3, "c2")]
    write_batch(config, [rec(7, {"name": "a3"}, 1), rec(8, None, 3), rec(9, {"name": "d"}, 4)])
    assert rows(db, "SELECT id, name FROM orders ORDER BY id") == [(1, "a3"), (4, "d")]
    assert rows(db, "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND "
                    "a.attnum = ANY(i.indkey) WHERE i.indrelid = 'orders'::regclass AND i.indisprimary") == [("id",)]


def test_upsert_with_a_struct_key_and_with_record_value_pk(postgres, pg_database, db):
    keyed = cfg(postgres, pg_database, **{"insert.mode": "upsert", "pk.mode": "record_key"})
    write_batch(keyed, [rec(0, {"qty": 1}, {"shop": "x", "sku": "a"}), rec(1, {"qty": 2}, {"shop": "x", "sku": "b"}),
                        rec(2, {"qty": 5}, {"shop": "x", "sku": "a"})])
    assert rows(db, "SELECT shop, sku, qty FROM orders ORDER BY sku") == [("x", "a", 5), ("x", "b", 2)]
    by_value = cfg(postgres, pg_database, topics="prices", **{"insert.mode": "upsert", "pk.mode": "record_value",
                                                              "pk.fields": "sku", "fields.whitelist": "sku,cents"})
    write_batch(by_value, [rec(0, {"sku": "a", "cents": 1, "note": "dropped"}, topic="prices"),
                           rec(1, {"sku": "a", "cents": 9, "note": "dropped"}, topic="prices")])
    assert rows(db, "SELECT sku, cents FROM prices") == [("a", 9)]
    assert "note" not in [r[0] for r in rows(db, "SELECT column_name FROM information_schema.columns "
                                                 "WHERE table_name = 'prices'")]


def test_kafka_pk_mode_and_update_mode(postgres, pg_database, db):
    write_batch(cfg(postgres, pg_database, **{"pk.mode": "kafka"}),
                [rec(5, {"v": "x"}, partition=2), rec(6, {"v": "y"}, partition=2)])
    assert rows(db, "SELECT __connect_topic, __connect_partition, __connect_offset, v FROM orders ORDER BY 3") == [
        ("orders", 2, 5, "x"), ("orders", 2, 6, "y")]
    db.execute("CREATE TABLE stock (sku TEXT PRIMARY KEY, qty INT)")
    db.execute("INSERT INTO stock VALUES ('a', 1), ('b', 2)")
    update = cfg(postgres, pg_database, topics="stock", **{"insert.mode": "update", "pk.mode": "record_value",
                                                           "pk.fields": "sku", "auto.create": "false"})
    write_batch(update, [rec(0, {"sku": "a", "qty": 10}, topic="stock"), rec(1, {"sku": "zz", "qty": 3},
                                                                             topic="stock")])
    assert rows(db, "SELECT sku, qty FROM stock ORDER BY sku") == [("a", 10), ("b", 2)]  # no row for zz


def test_auto_evolve_adds_columns_and_without_it_the_batch_fails_naming_them(postgres, pg_database, db):
    write_batch(cfg(postgres, pg_database), [rec(0, {"id": 1})])
    with pytest.raises(ConnectorError, match="missing column\\(s\\) extra and auto.evolve is disabled"):
        write_batch(cfg(postgres, pg_database), [rec(1, {"id": 2, "extra": "x"})])
    assert rows(db, "SELECT count(*) FROM orders") == [(1,)]  # the failed batch rolled back
    write_batch(cfg(postgres, pg_database, **{"auto.evolve": "true"}), [rec(1, {"id": 2, "extra": "x"})])
    assert rows(db, "SELECT id, extra FROM orders ORDER BY id") == [(1, None), (2, "x")]
    with pytest.raises(ConnectorError, match="Table missing_table is missing and auto.create is disabled"):
        write_batch(cfg(postgres, pg_database, topics="missing_table", **{"auto.create": "false"}),
                    [rec(0, {"id": 1}, topic="missing_table")])


def test_validation_refuses_connect_jdbc_combinations_and_non_postgres_urls(postgres, pg_database):
    from sparkcat.config.validation import validate_connector_config
    bad = {"connector.class": "jdbc-sink", "name": "s", "topics": "t", "connection.url": "jdbc:mysql://h/db",
           "insert.mode": "upsert", "delete.enabled": "true"}
    errors = validate_connector_config(bad).errors
    assert "only PostgreSQL URLs" in " ".join(errors["connection.url"])
    assert "needs a primary key" in " ".join(errors["pk.mode"])
    assert errors["delete.enabled"] == ["Deletes are only supported for pk.mode record_key"]


def test_topic_into_table_through_the_driver(spark, broker, postgres, pg_database, db, tmp_path, unique_name):
    topic = f"{unique_name}-orders".replace("-", "_")
    create_topic(broker.bootstrap, topic, partitions=2)
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(300):
        key = json.dumps({"id": i % 50}).encode()
        value = None if i % 7 == 6 else json.dumps({"id": i % 50, "n": i}).encode()
        p.produce(topic, key=key, value=value, partition=(i % 50) % 2)
    assert p.flush(30) == 0
    config = {"connector.class": "jdbc-sink", "topics": topic, "tasks.max": "2", **postgres.connection_config(
        pg_database), "insert.mode": "upsert", "pk.mode": "record_key", "delete.enabled": "true",
        "auto.create": "true", "key.converter": "org.apache.kafka.connect.json.JsonConverter",
        "key.converter.schemas.enable": "false", "value.converter.schemas.enable": "false",
        "trigger.interval.ms": "200", "batch.max.records": "100", "exactly.once.support": "required"}
    expected: dict[int, int | None] = {}
    for i in range(300):
        expected[i % 50] = None if i % 7 == 6 else i
    driver = start_driver(spark, kafka_worker(broker, tmp_path, unique_name))
    try:
        driver.herder.put_connector_config("pg-sink", config)

        def positions() -> int:
            try:
                return rows(db, "SELECT coalesce(sum(next_offset), 0) FROM sparkcat_jdbc_positions")[0][0]
            except Exception:
                return 0
        wait_until(lambda: positions() >= 300, timeout_s=120, message="every record in the table")
        assert states(driver, "pg-sink") == ("RUNNING", ["RUNNING", "RUNNING"])
        assert dict(rows(db, f'SELECT id, n FROM "{topic}"')) == {k: v for k, v in expected.items() if v is not None}

        # DELETE /connectors/NAME/offsets on the stopped sink: the positions table follows, so the
        # emptied table is loaded again from the topic's start (it would stay empty otherwise).
        driver.herder.set_target_state("pg-sink", TargetState.STOPPED)
        wait_until(lambda: _reset(driver, "pg-sink"), timeout_s=60, message="the offsets reset")
        assert positions() == 0
        db.execute(f'TRUNCATE "{topic}"')
        driver.herder.set_target_state("pg-sink", TargetState.STARTED)
        wait_until(lambda: positions() >= 300, timeout_s=120, message="every record in the table again")
    finally:
        driver.stop()
    assert dict(rows(db, f'SELECT id, n FROM "{topic}"')) == {k: v for k, v in expected.items() if v is not None}


def _reset(driver, name: str) -> bool:
    try:
        driver.herder.reset_connector_offsets(name)
        return True
    except ConflictError:  # its query is still stopping
        return False


def test_two_tasks_creating_the_same_table_at_once_both_commit(postgres, pg_database, db):
    import threading
    config = cfg(postgres, pg_database)
    errors: list[BaseException] = []

    def task(partition: int) -> None:
        try:
            write_batch(config, [rec(i, {"id": i * 10 + partition}, partition=partition) for i in range(50)],
                        task_id=partition)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=task, args=(p,)) for p in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    assert rows(db, "SELECT count(*), count(DISTINCT id) FROM orders") == [(100, 100)]


def test_as_the_sink_of_a_source_connector_each_batch_is_written_once(postgres, pg_database, db):
    """``sink.*`` of a source: records have no Kafka positions (offsets restart per batch); batch ids count."""
    config = {**postgres.connection_config(pg_database), "auto.create": "true", "table.name.format": "copied"}

    def batch(batch_id: int, first: int) -> None:
        task = JdbcSinkTask()
        task.initialize(SinkTaskContext("embedded", 0))
        task.start(config)
        try:
            if task.begin_batch(batch_id):
                task.put([rec(i, {"id": first + i}, topic="pg-t") for i in range(10)])
                task.flush(batch_id)
        finally:
            task.stop()

    batch(1_000, 0)
    batch(1_001, 10)  # the same offsets 0-9 again, in a new batch: written
    batch(1_001, 10)  # a replay of that batch: skipped
    assert rows(db, "SELECT count(*), count(DISTINCT id), max(id) FROM copied") == [(20, 20, 19)]
