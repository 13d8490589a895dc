"""kill -9 of the whole driver during a JDBC sink load, then a restart: the table holds every record once.

The sink runs ``insert.mode=insert`` with ``pk.mode=none`` (no key to absorb a duplicate), so a
record written twice would show as a second row. The driver process (``tests.eos_driver``) is
SIGKILLed with its Spark JVM and Python workers once part of the topic is in the table; the
restarted driver replays whatever batch was in flight, and the positions table makes the
replay skip what the killed driver had committed.
"""

from __future__ import annotations

import json

import pytest
from confluent_kafka import Producer

from tests.driver_process import kill_session, start_driver_process
from tests.integration.connectors.test_kafka_sink import kafka_worker
from tests.integration.runtime.test_driver import start_driver
from tests.kafka_helpers import create_topic, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

N = 20_000


def fill(bootstrap: str, topic: str) -> None:
    create_topic(bootstrap, topic, partitions=2)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for i in range(N):
        while True:
            try:
                p.produce(topic, json.dumps({"seq": i, "pad": "x" * 40}).encode(), partition=i % 2)
                break
            except BufferError:
                p.poll(0.1)
    assert p.flush(60) == 0


def count(db, table: str) -> tuple[int, int]:
    try:
        return tuple(db.execute(f'SELECT count(*), count(DISTINCT seq) FROM "{table}"').fetchone())
    except Exception:  # not created yet
        db.rollback() if not db.autocommit else None
        return 0, 0


def test_sigkilled_driver_during_a_sink_load_restarts_to_exactly_once(spark, broker, postgres, pg_database,
                                                                      tmp_path, unique_name):
    topic = f"{unique_name}-load".replace("-", "_")
    fill(broker.bootstrap, topic)
    config = {"connector.class": "jdbc-sink", "topics": topic, "tasks.max": "2", "auto.create": "true",
              **postgres.connection_config(pg_database), "value.converter.schemas.enable": "false",
              "batch.max.records": "1000", "trigger.interval.ms": "100", "exactly.once.support": "required"}
    worker = kafka_worker(broker, tmp_path, unique_name)
    fields = {k: getattr(worker, k) for k in ("state_dir", "bootstrap_servers", "config_topic", "offset_topic",
                                              "status_topic", "file_allowed_dirs", "plugin_packages")}
    log = tmp_path / "driver.log"
    child = start_driver_process(fields, {"pg-load": config}, log, {})
    with postgres.connect(pg_database) as db:
        try:
            wait_until(lambda: count(db, topic)[0] >= N // 4 or child.poll() is not None, timeout_s=300,
                       message="a quarter of the load in the table")
            assert child.poll() is None, log.read_text()[-3000:]
        finally:
            kill_session(child)
        at_kill = count(db, topic)
        assert 0 < at_kill[0] < N, f"the kill should land mid-load, not after it ({at_kill})"
        # Rows and positions commit together: what the killed driver left is exactly what its positions say.
        written = db.execute("SELECT sum(next_offset) FROM sparkcat_jdbc_positions WHERE connector = 'pg-load'"
                             ).fetchone()[0]
        assert at_kill == (written, written)
        driver = start_driver(spark, worker)
        try:
            wait_until(lambda: count(db, topic)[0] >= N, timeout_s=300, message="the whole topic in the table")
            wait_until(lambda: sum(o["kafka_offset"] for _p, o in driver.stores.offsets.partitions("pg-load")) >= N,
                       timeout_s=60, message="the sink's positions at the end")
        finally:
            driver.stop()
        assert count(db, topic) == (N, N)
        positions = db.execute("SELECT kafka_partition, next_offset FROM sparkcat_jdbc_positions WHERE connector = "
                               "'pg-load' ORDER BY 1").fetchall()
        assert [tuple(p) for p in positions] == [(0, N // 2), (1, N // 2)]
