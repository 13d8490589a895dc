"""Python sink connectors fed from Kafka share one streaming query (``spark/driver/shared_sinks.py``), and each
still behaves as if it ran alone: paused, failed, restarted and deleted one at a time while the others keep
consuming, every record of each written with none lost; a transactional topic's markers and aborted records
do not hold a member back.
"""

from __future__ import annotations

import collections
import uuid

import pytest
from confluent_kafka import Producer

from sparkcat.model.config_state import TargetState
from sparkcat.runtime.execution.progress import offsets_behind
from sparkcat.spark.driver.shared_queries import MemberQuery
from sparkcat.config.stores import offsets_store_spec
from sparkcat.storage.factory import open_offsets_store
from tests.driver_process import kill_rounds, seeded_random
from tests.integration.runtime.test_driver import kafka_worker, kafka_worker_fields, start_driver, states, status_of
from tests.kafka_helpers import create_topic, ordered_producer_settings, produce, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

TRIGGER_MS = "200"
FLAKY = "tests.integration.runtime.flaky_sink:FlakySinkConnector"


def shared(driver) -> list:
    return driver.reconciler.services.runner.shared_queries()


def lines_of(out) -> list[str]:
    return [line for f in sorted(out.glob("task-*.txt")) for line in f.read_text().splitlines()]


def sink(topics: str, out, **more: str) -> dict[str, str]:
    out.mkdir(exist_ok=True)
    return {"connector.class": FLAKY, "topics": topics, "out.dir": str(out), "tasks.max": "2",
            "trigger.interval.ms": TRIGGER_MS, **more}


def stored_sink_offsets(driver, name: str) -> dict[tuple[str, int], int]:
    return stored_sink_offsets_of(driver.worker, name)


def stored_sink_offsets_of(worker, name: str) -> dict[tuple[str, int], int]:
    store = open_offsets_store(offsets_store_spec(worker))
    try:
        store.get(name, stable=True)
        return {(p["kafka_topic"], p["kafka_partition"]): o["kafka_offset"] for p, o in store.partitions(name)}
    finally:
        store.close()


def test_sinks_of_one_shared_query_pause_fail_restart_and_leave_one_at_a_time(spark, broker, tmp_path, unique_name):
    worker = kafka_worker(broker, tmp_path, unique_name)
    topics = {n: f"{unique_name}-{n}" for n in ("a", "b", "c")}
    for t in topics.values():
        create_topic(broker.bootstrap, t, partitions=3)
    outs = {n: tmp_path / f"out-{n}" for n in topics}
    sent: dict[str, list[str]] = collections.defaultdict(list)

    def send(n: str, count: int) -> None:
        values = [f"{n}-{len(sent[n]) + i}" for i in range(count)]
        produce(broker.bootstrap, topics[n], [v.encode() for v in values])
        sent[n] += values

    def all_written(names: tuple[str, ...]) -> None:
        wait_until(lambda: all(sorted(set(lines_of(outs[n]))) == sorted(sent[n]) for n in names), timeout_s=120,
                   message=lambda: f"{names}: { {n: (len(set(lines_of(outs[n]))), len(sent[n])) for n in names} }")

    driver = start_driver(spark, worker)
    try:
        for n in topics:
            driver.herder.put_connector_config(n, sink(topics[n], outs[n]))
            send(n, 50)
        all_written(("a", "b", "c"))
        (group,) = shared(driver)
        assert group.member_names() == ["a", "b", "c"]
        assert sorted(q.name for q in driver.spark.streams.active) == [group.query.name]
        group_query = group.query.id

        driver.herder.set_target_state("b", TargetState.PAUSED)
        wait_until(lambda: states(driver, "b") == ("PAUSED", ["PAUSED", "PAUSED"]), message="b PAUSED")
        written_b = len(lines_of(outs["b"]))
        send("a", 30), send("b", 30), send("c", 30)
        all_written(("a", "c"))
        assert len(lines_of(outs["b"])) == written_b, "a paused member went on writing"

        flaky_out = tmp_path / "out-flaky"
        flaky_out.mkdir()
        flaky_topic = f"{unique_name}-flaky"
        create_topic(broker.bootstrap, flaky_topic, partitions=2)
        driver.herder.put_connector_config("flaky", {
            "connector.class": FLAKY, "topics": flaky_topic, "out.dir": str(flaky_out), "tasks.max": "2",
            "fail.task": "1", "trigger.interval.ms": TRIGGER_MS})
        produce(broker.bootstrap, flaky_topic, [b"x"] * 20, partition=0)
        produce(broker.bootstrap, flaky_topic, [b"y"] * 20, partition=1)
        wait_until(lambda: "FAILED" in states(driver, "flaky")[1], message="flaky's task 1 FAILED")
        assert "task 1 always fails" in status_of(driver, "flaky")["tasks"][1]["trace"]
        send("a", 30), send("c", 30)
        all_written(("a", "c"))
        assert states(driver, "a") == states(driver, "c") == ("RUNNING", ["RUNNING", "RUNNING"])

        driver.herder.delete_connector("flaky")
        driver.herder.set_target_state("b", TargetState.STARTED)
        driver.herder.restart_connector("a", include_tasks=True)
        send("a", 30), send("b", 30), send("c", 30)
        all_written(("a", "b", "c"))
        assert shared(driver)[0].query.id == group_query, "the others' query never stopped"
        assert [g.member_names() for g in shared(driver)] == [["a", "b", "c"]]
        ends = {(topics["a"], p): 0 for p in range(3)}
        wait_until(lambda: sum(stored_sink_offsets(driver, "a").values()) == len(sent["a"]),
                   message=lambda: f"a's stored positions {stored_sink_offsets(driver, 'a')} to reach {len(sent['a'])}")
        assert set(stored_sink_offsets(driver, "a")) == set(ends)
    finally:
        driver.stop()
    for n in topics:  # a graceful run: nothing read twice either
        got = lines_of(outs[n])
        assert sorted(got) == sorted(sent[n]), f"{n}: {len(got)} lines for {len(sent[n])} records"


def test_a_transactional_topic_s_markers_and_aborted_records_do_not_hold_a_member_back(spark, broker, tmp_path,
                                                                                     unique_name):
    worker = kafka_worker(broker, tmp_path, unique_name)
    topic = f"{unique_name}-txn"
    create_topic(broker.bootstrap, topic, partitions=1)
    producer = Producer(ordered_producer_settings(broker.bootstrap, **{"transactional.id": uuid.uuid4().hex}))
    producer.init_transactions(30)
    committed = []
    for i in range(6):
        producer.begin_transaction()
        values = [f"t{i}-{j}" for j in range(5)]
        for v in values:
            producer.produce(topic, value=v.encode())
        if i % 3 == 2:
            producer.flush(30)  # in the log, then aborted (else librdkafka drops them unsent)
            producer.abort_transaction(30)
        else:
            producer.commit_transaction(30)
            committed += values
    out = tmp_path / "out"
    driver = start_driver(spark, worker)
    try:
        driver.herder.put_connector_config("txn", sink(topic, out, **{"tasks.max": "1"}))
        end = 6 * 5 + 6  # every record and one marker per transaction
        wait_until(lambda: stored_sink_offsets(driver, "txn").get((topic, 0)) == end,
                   message=lambda: f"the stored position {stored_sink_offsets(driver, 'txn')} to reach {end}; "
                           f"status {status_of(driver, 'txn')}")
        assert lines_of(out) == committed
        (group,) = shared(driver)
        assert group.member_names() == ["txn"]
        produce(broker.bootstrap, topic, [b"late"] * 3)  # after the aborted transaction's marker
        wait_until(lambda: lines_of(out)[-3:] == ["late"] * 3, message=lambda: f"the late lines in {lines_of(out)}")
        (member,) = shared(driver)[0].members()
        wait_until(lambda: offsets_behind(MemberQuery(shared(driver)[0], member)) == 0,
                   message="its lag in /metrics to reach 0")
    finally:
        driver.stop()


def test_a_sigkilled_driver_restarts_every_member_of_its_shared_sink_query_losing_nothing(spark, broker, tmp_path,
                                                                                        unique_name):
    """At least once: every record reaches its sink; a record is written twice only if its batch was in flight
    at a kill (at most one batch per member and kill: 3 partitions x batch.max.records)."""
    def config(n: str, topic: str) -> dict[str, str]:
        return sink(topic, tmp_path / f"out-{n}", **{"batch.max.records": "10"})

    got = _killed_twice(spark, broker, tmp_path, unique_name, config, lambda n: lines_of(tmp_path / f"out-{n}"))
    for n, (lines, sent, kills) in got.items():
        assert set(lines) == set(sent), f"{n} lost records after kills {kills}"
        assert len(lines) - len(sent) <= 2 * 3 * 10, f"{n}: {len(lines) - len(sent)} written twice after {kills}"


def test_shared_file_sinks_write_every_record_once_across_sigkills(spark, broker, tmp_path, unique_name):
    """The file sink keeps exactly once in a shared query: a batch comes back with a new id after a kill, and
    its task skips what it made durable by Kafka position (its sidecar's ``positions``)."""
    def config(n: str, topic: str) -> dict[str, str]:
        return {"connector.class": "file-sink", "topics": topic, "file": str(tmp_path / f"{n}.txt"),
                "batch.max.records": "10", "trigger.interval.ms": TRIGGER_MS,
                "value.converter": "org.apache.kafka.connect.storage.StringConverter"}

    def lines(n: str) -> list[str]:
        path = tmp_path / f"{n}.txt"
        return path.read_text().splitlines() if path.exists() else []

    got = _killed_twice(spark, broker, tmp_path, unique_name, config, lines, shares=True)
    for n, (written, sent, kills) in got.items():
        twice = sorted(v for v, k in collections.Counter(written).items() if k > 1)
        assert sorted(written) == sorted(sent), f"{n} after kills {kills}: twice {twice[:5]}, {len(written)} lines"


def _killed_twice(spark, broker, tmp_path, unique_name, config, written, shares: bool = False) -> dict:
    """Three sinks of 900 records each (3 partitions) in a shared query; the driver SIGKILLed twice at random
    moments while they consume, then run to the end. Per sink: (what it wrote, what was sent, the kills)."""
    names, per_topic = ("k1", "k2", "k3"), 900
    topics = {n: f"{unique_name}-{n}" for n in names}
    sent = {n: [f"{n}-{i}" for i in range(per_topic)] for n in names}
    for n in names:
        create_topic(broker.bootstrap, topics[n], partitions=3)
        produce(broker.bootstrap, topics[n], [v.encode() for v in sent[n]])
    configs = {n: config(n, topics[n]) for n in names}
    worker = kafka_worker(broker, tmp_path, unique_name)
    fields = kafka_worker_fields(broker.bootstrap, tmp_path, unique_name)

    def stored(n: str) -> int:
        return sum(stored_sink_offsets_of(worker, n).values())

    def progress() -> int:
        return min(stored(n) for n in names)

    rng, seed = seeded_random()
    kills = kill_rounds(fields, configs, tmp_path, 2, progress, rng)
    driver = start_driver(spark, worker)
    try:
        wait_until(lambda: progress() == per_topic, timeout_s=240,
                   message=lambda: f"every member at {per_topic}: { {n: stored(n) for n in names} }")
        tasks = len(status_of(driver, names[0])["tasks"])
        assert all(states(driver, n) == ("RUNNING", ["RUNNING"] * tasks) for n in names)
        if shares:
            assert [g.member_names() for g in shared(driver)] == [list(names)]
    finally:
        driver.stop()
    return {n: (written(n), sent[n], f"{kills} (seed {seed})") for n in names}
