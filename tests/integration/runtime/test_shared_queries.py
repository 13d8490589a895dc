"""Python source connectors share one streaming query (``spark/driver/shared_sources.py``), and each still
behaves as if it ran alone: paused, failed, deleted, restarted and added one at a time while the others keep
producing, every record of each exactly once; an idle member costs no Spark job.
"""

from __future__ import annotations

import collections

import pytest

from sparkcat.model.config_state import TargetState
from tests.driver_process import kill_rounds, seeded_random
from tests.integration.runtime.test_driver import (
    JSON_NO_SCHEMA,
    kafka_worker,
    kafka_worker_fields,
    start_driver,
    states,
    status_of,
)
from tests.integration.runtime.test_exactly_once_source import CONFIG as EOS_CONFIG
from tests.integration.runtime.test_exactly_once_source import INCREMENTS as EOS_INCREMENTS
from tests.integration.runtime.test_exactly_once_source import PER_BATCH as EOS_PER_BATCH
from tests.integration.runtime.test_exactly_once_source import positions, stored_positions
from tests.kafka_helpers import read_topic, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

TRIGGER_MS = "200"
FAILING = "tests.integration.runtime.failing_connector:FailingSourceConnector"
SLOW = "tests.integration.runtime.slow_source:SlowSourceConnector"


def increment(prefix: str) -> dict[str, str]:
    return {"connector.class": "increment", "increments": "1", "topic.prefix": prefix, "records.per.poll": "20",
            "batch.max.records": "20", "trigger.interval.ms": TRIGGER_MS, **JSON_NO_SCHEMA}


def shared(driver) -> list:
    return driver.reconciler.services.runner.shared_queries()


def query_names(driver) -> list[str]:
    return sorted(q.name for q in driver.spark.streams.active)


def test_connectors_of_one_shared_query_pause_fail_restart_and_leave_one_at_a_time(spark, broker, tmp_path,
                                                                                   unique_name):
    worker = kafka_worker(broker, tmp_path, unique_name)
    names = ("a", "b", "c")
    topics = {n: f"{unique_name}-{n}_1" for n in names}
    driver = start_driver(spark, worker)

    def count(name: str) -> int:
        return len(read_topic(broker.bootstrap, topics[name]))

    def all_go_on(running: tuple[str, ...], by: int = 40) -> None:
        """Each of ``running`` writes ``by`` more records (two batches or more each)."""
        before = {n: count(n) for n in running}
        wait_until(lambda: all(count(n) >= before[n] + by for n in running), timeout_s=120,
                   message=lambda: f"{running} to go on from {before}: { {n: count(n) for n in running} }")

    try:
        for n in names:
            driver.herder.put_connector_config(n, increment(f"{unique_name}-{n}_"))
        all_go_on(names)
        groups = shared(driver)
        assert [g.member_names() for g in groups] == [list(names)]
        group_query = groups[0].query
        assert query_names(driver) == [group_query.name], "the three connectors run in one Spark query"

        driver.herder.set_target_state("b", TargetState.PAUSED)
        wait_until(lambda: states(driver, "b") == ("PAUSED", ["PAUSED"]), message="b PAUSED")
        paused_at = count("b")
        all_go_on(("a", "c"))
        assert count("b") == paused_at, "a paused member wrote on"
        assert states(driver, "a") == states(driver, "c") == ("RUNNING", ["RUNNING"])

        driver.herder.put_connector_config("failing", {
            "connector.class": FAILING, "topic": f"{unique_name}-failing", "tasks.max": "2", "fail.after": "20",
            "trigger.interval.ms": TRIGGER_MS, "value.converter": "org.apache.kafka.connect.storage.StringConverter"})
        wait_until(lambda: states(driver, "failing")[1] == ["RUNNING", "FAILED"], message="failing's task 1 FAILED")
        assert "cannot go past 20" in status_of(driver, "failing")["tasks"][1]["trace"]
        all_go_on(("a", "c"))
        assert states(driver, "a") == states(driver, "c") == ("RUNNING", ["RUNNING"])

        driver.herder.delete_connector("failing")
        driver.herder.set_target_state("b", TargetState.STARTED)
        driver.herder.restart_connector("a", include_tasks=True)
        all_go_on(names)
        assert [g.member_names() for g in shared(driver)] == [list(names)]
        assert shared(driver)[0].query.id == group_query.id, "the others' query never stopped"
        assert states(driver, "b") == ("RUNNING", ["RUNNING"])
    finally:
        driver.stop()

    for n in names:
        got = positions(broker.bootstrap, topics[n])
        stored = stored_positions(worker, n, (1,))[1]
        duplicates = sorted(p for p, k in collections.Counter(got).items() if k > 1)
        assert got == list(range(1, stored + 1)), f"{n}: duplicates {duplicates[:10]}, {len(got)} vs {stored}"


def _records_in_progress(group, name: str) -> int:
    """Connector ``name``'s records in the shared query's recent progress (its source's ``records.NAME``)."""
    return sum(int(p["sources"][0].get("metrics", {}).get(f"records.{name}", 0)) for p in group.query.recentProgress)


def test_an_idle_member_plans_no_spark_job_and_a_new_one_joins_the_running_query(spark, broker, tmp_path,
                                                                                unique_name):
    worker = kafka_worker(broker, tmp_path, unique_name)
    lines = tmp_path / "five.txt"
    lines.write_text("".join(f"line {i}\n" for i in range(5)))
    topic = f"{unique_name}-file"
    driver = start_driver(spark, worker)
    try:
        driver.herder.put_connector_config("file", {
            "connector.class": "file-source", "file": str(lines), "topic": topic, "trigger.interval.ms": TRIGGER_MS,
            "value.converter": "org.apache.kafka.connect.storage.StringConverter"})
        wait_until(lambda: len(read_topic(broker.bootstrap, topic)) == 5, message="the file's five lines")
        (group,) = shared(driver)
        # The query's progress counts records per connector in its source's metrics (Spark's "Input rows" counts
        # the batch's Spark partitions); a trigger that wrote nothing shows none.
        wait_until(lambda: _records_in_progress(group, "file") == 5, message="the five records in the progress")
        wait_until(lambda: any(not p["sources"][0].get("metrics") for p in group.query.recentProgress), timeout_s=60,
                   message="a progress of a trigger without data (Spark posts one every 10 s)")
        metrics = [p["sources"][0].get("metrics", {}) for p in group.query.recentProgress]
        assert all(m["connectors"] == "1" for m in metrics if m), metrics
        assert _records_in_progress(group, "file") == 5, metrics  # no trigger repeated the batch's records
        tracker = spark.sparkContext.statusTracker()
        jobs = set(tracker.getJobIdsForGroup(str(group.query.runId)))
        asked, triggers = group.planner.rounds, group.planner.triggers
        wait_until(lambda: group.planner.rounds >= asked + 20, message="twenty more rounds of the shared query")
        assert set(tracker.getJobIdsForGroup(str(group.query.runId))) == jobs, "an idle member ran Spark jobs"
        # 20 rounds at a 200 ms interval took 4 s: one Spark trigger held through them (10 s at most), not 20
        assert group.planner.triggers - triggers <= 1

        prefix = f"{unique_name}-inc_"
        driver.herder.put_connector_config("inc", increment(prefix))
        wait_until(lambda: len(read_topic(broker.bootstrap, prefix + "1")) >= 20, message="the new member's records")
        assert shared(driver)[0].query.id == group.query.id
        assert group.member_names() == ["file", "inc"]
        descriptions = [_description(spark, j) for j in tracker.getJobIdsForGroup(str(group.query.runId))]
        assert any(d and d.endswith(": inc") for d in descriptions), descriptions  # the Spark UI's Jobs tab
        assert _records_in_progress(group, "inc") >= 20
        assert len(read_topic(broker.bootstrap, topic)) == 5
    finally:
        driver.stop()


@pytest.mark.timeout(900)
def test_a_sigkilled_driver_restarts_every_member_of_its_shared_query_exactly_once(spark, broker, tmp_path,
                                                                                  unique_name):
    names = ("k1", "k2", "k3")
    configs = {n: {**EOS_CONFIG, "topic.prefix": f"{unique_name}-{n}_"} for n in names}
    worker = kafka_worker(broker, tmp_path, unique_name)
    fields = kafka_worker_fields(broker.bootstrap, tmp_path, unique_name)

    def progress() -> int:
        return min(min(stored_positions(worker, n).values()) for n in names)

    rng, seed = seeded_random()
    kills = kill_rounds(fields, configs, tmp_path, 2, progress, rng)
    driver = start_driver(spark, worker)
    try:
        target = progress() + 2 * EOS_PER_BATCH
        wait_until(lambda: progress() >= target, timeout_s=180, message=lambda: f"every member past {target}")
        assert all(states(driver, n) == ("RUNNING", ["RUNNING", "RUNNING"]) for n in names)
    finally:
        driver.stop()
    for n in names:
        stored = stored_positions(worker, n)
        for k in EOS_INCREMENTS:
            got = positions(broker.bootstrap, f"{unique_name}-{n}_{k}")
            assert got == list(range(1, stored[k] + 1)), f"{n}_{k} after kills {kills} (seed {seed})"


def _description(spark, job_id: int) -> str | None:
    """A job's description as the Spark UI shows it."""
    try:
        described = spark.sparkContext._jsc.sc().statusStore().job(int(job_id)).description()
    except Exception:  # a job the UI no longer retains
        return None
    return described.get() if described.isDefined() else None


def test_a_member_whose_task_holds_the_shared_batch_too_long_gets_a_query_of_its_own(spark, broker, tmp_path,
                                                                                       unique_name):
    worker = kafka_worker(broker, tmp_path, unique_name)
    slow_topic, prefix = f"{unique_name}-slow", f"{unique_name}-fast_"
    driver = start_driver(spark, worker)
    try:
        driver.herder.put_connector_config("fast", increment(prefix))
        wait_until(lambda: shared(driver) and shared(driver)[0].member_names() == ["fast"], message="fast shares")
        driver.herder.put_connector_config("slow", {
            "connector.class": SLOW, "topic": slow_topic, "poll.seconds": "6", "trigger.interval.ms": TRIGGER_MS,
            "value.converter": "org.apache.kafka.connect.storage.StringConverter"})
        wait_until(lambda: "slow" in query_names(driver), timeout_s=120, message="slow's query of its own")
        assert shared(driver)[0].member_names() == ["fast"]
        fast, slow = (driver.reconciler.lifecycles[n].batches.progress for n in ("fast", "slow"))
        fast_from, slow_from = fast.batches, slow.batches
        wait_until(lambda: fast.batches >= fast_from + 10, message="ten batches of fast")
        assert slow.batches <= slow_from + 2, "fast was held back by slow's 6 s polls"
        wait_until(lambda: len(read_topic(broker.bootstrap, slow_topic)) >= 20, message="slow's records, alone")
        assert states(driver, "slow") == states(driver, "fast") == ("RUNNING", ["RUNNING"])
    finally:
        driver.stop()
    got = sorted(int(v) for *_, v in read_topic(broker.bootstrap, slow_topic))
    assert got == list(range(1, len(got) + 1)), "slow's records when it moved: each once"


def test_a_stopped_members_offsets_are_altered_and_it_resumes_there_while_the_others_run_on(spark, broker, tmp_path,
                                                                                            unique_name):
    worker = kafka_worker(broker, tmp_path, unique_name)
    prefixes = {n: f"{unique_name}-{n}_" for n in ("a", "b")}
    driver = start_driver(spark, worker)

    def got(name: str) -> list[int]:
        return positions(broker.bootstrap, prefixes[name] + "1")

    try:
        for name, prefix in prefixes.items():
            driver.herder.put_connector_config(name, increment(prefix))
        wait_until(lambda: len(got("a")) >= 40 and len(got("b")) >= 40, message="both members' records")
        query_id = shared(driver)[0].query.id
        driver.herder.set_target_state("b", TargetState.STOPPED)
        wait_until(lambda: states(driver, "b") == ("STOPPED", []), message="b STOPPED")
        stopped_at = max(got("b"))
        jump = stopped_at + 1000
        driver.herder.alter_connector_offsets("b", [({"increment": 1}, {"position": jump})])
        assert driver.herder.connector_offsets("b") == [({"increment": 1}, {"position": jump})]
        driver.herder.set_target_state("b", TargetState.STARTED)
        wait_until(lambda: max(got("b")) >= jump + 40, message="b's records after the altered position")
        assert shared(driver)[0].query.id == query_id, "a's query never stopped"
        assert states(driver, "a") == ("RUNNING", ["RUNNING"])
    finally:
        driver.stop()
    b = got("b")
    assert b == list(range(1, stopped_at + 1)) + list(range(jump + 1, b[-1] + 1))
    a = got("a")
    assert a == list(range(1, len(a) + 1))
