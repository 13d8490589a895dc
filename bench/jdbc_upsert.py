#!/usr/bin/env python3
"""Topic-to-table upsert into PostgreSQL: the ``jdbc-sink`` against single-threaded psycopg loops.

    bash -c 'source scripts/venv.sh rest,test,bench && sparkcat_need_jars kafka && source scripts/postgres.sh \
             && sparkcat_need_postgres && python bench/jdbc_upsert.py --records 1000000'

Starts an Apache Kafka broker (``tests.broker.KafkaBroker``) and a PostgreSQL server
(``tests.postgres.PostgresServer``, fsync off), fills a 4-partition topic with ``--records`` JSON
records ``{"id", "name", "amount"}`` keyed ``{"id"}`` (``--keys`` distinct ids, so later records
update earlier rows), then loads the topic into a table keyed by ``id``, side by side, each into a
fresh table:

- ``executemany``: one thread consumes the topic (confluent-kafka), decodes the JSON and runs
  ``INSERT ... ON CONFLICT (id) DO UPDATE`` with psycopg's ``executemany`` per 10,000 records,
  committing each;
- ``copy``: the same loop, but each 10,000 records go through ``COPY`` into a temporary table and
  one ``INSERT ... SELECT ... ON CONFLICT`` (the last record per key), committing each;
- ``sparkcat``: the ``jdbc-sink`` connector (upsert, pk.mode=record_key, exactly-once positions)
  on an in-process Driver, ``local[2]``, ``tasks.max=2``; timed from put_connector_config until
  the positions table holds every record (start-up included) and from its first commit.

Each load is checked: the table ends with one row per id, holding the last value. Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

CHUNK = 10_000
UPSERT = ("INSERT INTO {t} (id, name, amount) VALUES (%s, %s, %s) ON CONFLICT (id) DO UPDATE SET "
          "name = EXCLUDED.name, amount = EXCLUDED.amount")


def fill(bootstrap: str, topic: str, records: int, keys: int) -> float:
    from confluent_kafka import Producer

    from tests.kafka_helpers import create_topic
    create_topic(bootstrap, topic, partitions=4)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "compression.type": "lz4"})
    started = time.monotonic()
    for i in range(records):
        k = i % keys
        while True:
            try:
                p.produce(topic, json.dumps({"id": k, "name": f"name-{i}", "amount": i * 0.25}).encode(),
                          key=json.dumps({"id": k}).encode(), partition=k % 4)
                break
            except BufferError:
                p.poll(0.05)
    assert p.flush(120) == 0
    return time.monotonic() - started


def consume_chunks(bootstrap: str, topic: str, records: int):
    """Yield lists of decoded values, ``CHUNK`` at a time, until ``records`` were read."""
    import uuid

    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4().hex}",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe([topic])
    seen = 0
    try:
        while seen < records:
            msgs = c.consume(CHUNK, 1.0)
            values = [json.loads(m.value()) for m in msgs if m.error() is None]
            seen += len(values)
            if values:
                yield values
    finally:
        c.close()


def create_table(pg: Any, db: str, table: str) -> None:
    with pg.connect(db) as conn:
        conn.execute(f'CREATE TABLE "{table}" (id BIGINT PRIMARY KEY, name TEXT, amount DOUBLE PRECISION)')


def loop_executemany(pg: Any, db: str, bootstrap: str, topic: str, records: int) -> float:
    create_table(pg, db, "t_executemany")
    started = time.monotonic()
    with pg.connect(db, autocommit=False) as conn:
        for values in consume_chunks(bootstrap, topic, records):
            last = {v["id"]: v for v in values}  # one statement per key and chunk (ON CONFLICT needs it)
            with conn.cursor() as cur:
                cur.executemany(UPSERT.format(t='"t_executemany"'),
                                [(v["id"], v["name"], v["amount"]) for v in last.values()])
            conn.commit()
    return time.monotonic() - started


def loop_copy(pg: Any, db: str, bootstrap: str, topic: str, records: int) -> float:
    create_table(pg, db, "t_copy")
    started = time.monotonic()
    with pg.connect(db, autocommit=False) as conn:
        for values in consume_chunks(bootstrap, topic, records):
            last = {v["id"]: v for v in values}
            conn.execute('CREATE TEMPORARY TABLE stage (LIKE "t_copy") ON COMMIT DROP')
            with conn.cursor() as cur, cur.copy("COPY stage (id, name, amount) FROM STDIN") as copy:
                for v in last.values():
                    copy.write_row((v["id"], v["name"], v["amount"]))
            conn.execute('INSERT INTO "t_copy" SELECT * FROM stage ON CONFLICT (id) DO UPDATE SET '
                         'name = EXCLUDED.name, amount = EXCLUDED.amount')
            conn.commit()
    return time.monotonic() - started


def sparkcat_load(pg: Any, db: str, broker: Any, topic: str, records: int, work: Path) -> dict[str, float]:
    from sparkcat.bootstrap import Driver
    from sparkcat.config.worker import WorkerConfig
    from tests.spark_fixture import make_spark

    spark = make_spark("local[2]")
    worker = WorkerConfig(state_dir=str(work / "state"), bootstrap_servers=broker.bootstrap,
                          config_topic="bench-configs", offset_topic="bench-offsets", status_topic="bench-status")
    driver = Driver(spark, worker, rest=False, watch_pipelines=False)
    driver.start()
    config = {"connector.class": "jdbc-sink", "topics": topic, "tasks.max": "2", **pg.connection_config(db),
              "table.name.format": "t_sparkcat", "insert.mode": "upsert", "pk.mode": "record_key",
              "auto.create": "true", "batch.size": "20000",
              "key.converter.schemas.enable": "false", "value.converter.schemas.enable": "false",
              "batch.max.records": "250000", "trigger.interval.ms": "100"}
    with pg.connect(db) as conn:
        def written() -> int:
            try:
                return int(conn.execute("SELECT coalesce(sum(next_offset), 0) FROM sparkcat_jdbc_positions")
                           .fetchone()[0])
            except Exception:
                return 0
        started = time.monotonic()
        driver.herder.put_connector_config("bench-jdbc", config)
        first = None
        while written() < records:
            if first is None and written() > 0:
                first = (time.monotonic(), written())
            time.sleep(0.05)
        total = time.monotonic() - started
    driver.stop()
    spark.stop()
    out = {"sparkcat_with_startup_s": total}
    if first is not None:
        out["sparkcat_after_first_commit_records_per_s"] = (records - first[1]) / (started + total - first[0])
    return out


def check(pg: Any, db: str, table: str, records: int, keys: int) -> None:
    with pg.connect(db) as conn:
        got = conn.execute(f'SELECT count(*), sum(amount) FROM "{table}"').fetchone()
    last = records - 1
    want = sum((last - (last - k) % keys) * 0.25 for k in range(min(keys, records)))  # each id's last record
    assert tuple(got) == (min(keys, records), want), (table, got, want)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--records", type=int, default=1_000_000)
    p.add_argument("--keys", type=int, default=500_000)
    args = p.parse_args()
    from tests.broker import KafkaBroker
    from tests.postgres import PostgresServer
    with tempfile.TemporaryDirectory() as tmp, KafkaBroker(log_dir=Path(tmp) / "kafka") as broker, \
            PostgresServer() as pg:
        db = pg.create_database("bench")
        topic = "bench-upsert"
        results: dict[str, Any] = {"records": args.records, "keys": args.keys,
                                   "fill_s": fill(broker.bootstrap, topic, args.records, args.keys)}
        results["executemany_s"] = loop_executemany(pg, db, broker.bootstrap, topic, args.records)
        check(pg, db, "t_executemany", args.records, args.keys)
        results["copy_s"] = loop_copy(pg, db, broker.bootstrap, topic, args.records)
        check(pg, db, "t_copy", args.records, args.keys)
        results.update(sparkcat_load(pg, db, broker, topic, args.records, Path(tmp)))
        check(pg, db, "t_sparkcat", args.records, args.keys)
        for name in ("executemany", "copy", "sparkcat_with_startup"):
            results[f"{name}_records_per_s"] = args.records / results[f"{name}_s"]
        for base in ("executemany", "copy"):
            results[f"ratio_vs_{base}"] = results["sparkcat_with_startup_records_per_s"] / \
                results[f"{base}_records_per_s"]
        print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
