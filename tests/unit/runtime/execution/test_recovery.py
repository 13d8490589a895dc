"""Transient failures retried, FAILED tasks restarted automatically: the reconciler with a fake runner (no Spark)."""

from __future__ import annotations

import dataclasses

from sparkcat.config.connector import connector_settings
from sparkcat.config.worker import AutoRestartPolicy
from sparkcat.runtime.execution.failures import Failure, FailureKind
from sparkcat.runtime.execution.recovery import AutoRestart, Retries
from sparkcat.spark.query_plan import task_failure_message
from tests.unit.runtime.execution.reconciler_helpers import INC, settle, status
from tests.unit.runtime.execution.test_reconciler import setup

OUTAGE = ("py4j.protocol.Py4JJavaError: An error occurred while calling o832.save.\n: org.apache.spark.SparkException: "
          "Job aborted: org.apache.kafka.common.errors.TimeoutException: Expiring 300 record(s) for t-0: 120002 ms")


def fail_query(reconciler, text: str) -> None:
    query = reconciler.lifecycles["inc"].query
    query.active, query.error = False, text


def test_a_kafka_timeout_is_not_a_task_failure_the_query_restarts_after_backoff(tmp_path):
    stores, runner, reconciler = setup(tmp_path)
    stores.config.put_connector_config("inc", INC)
    settle(stores, reconciler)
    fail_query(reconciler, OUTAGE)
    settle(stores, reconciler)
    assert status(stores, "inc") == ("RUNNING", ["RUNNING", "RUNNING"])
    rt = reconciler.lifecycles["inc"]
    assert rt.failed_tasks == {} and rt.retries.attempts == 1
    rt.retries.not_before = 0.0  # the 300 ms backoff is over
    settle(stores, reconciler)
    assert len(runner.started) == 2 and runner.started[-1].excluded_tasks == []
    for _ in range(5):  # Kafka stays away: retried again and again, never FAILED
        fail_query(reconciler, OUTAGE)
        settle(stores, reconciler)
        rt.retries.not_before = 0.0
        settle(stores, reconciler)
    assert status(stores, "inc") == ("RUNNING", ["RUNNING", "RUNNING"]) and rt.retries.attempts == 6


def test_a_retriable_error_fails_its_task_at_once_with_the_default_errors_retry_timeout(tmp_path):
    stores, runner, reconciler = setup(tmp_path)
    stores.config.put_connector_config("inc", INC)
    settle(stores, reconciler)
    fail_query(reconciler, "Traceback\nRuntimeError: " + task_failure_message("inc", 1, _retriable("try later")))
    settle(stores, reconciler)
    assert status(stores, "inc") == ("RUNNING", ["RUNNING", "FAILED"])


def test_retriable_errors_are_retried_within_errors_retry_timeout_then_fail():
    retries = Retries()
    policy = connector_settings({"errors.retry.timeout": "1000", "errors.retry.delay.max.ms": "400"})
    text = Failure.of_query("c", "sparkcat task failed: c-0: RetriableError: try later", [0])
    assert retries.retry("c", text, policy, now=0.0) and retries.not_before == 0.3
    assert retries.retry("c", text, policy, now=0.5)
    assert 0.5 <= retries.not_before <= 0.9  # 600 ms is past the 400 ms maximum: random below it
    assert retries.retry("c", text, policy, now=0.95) and retries.not_before <= 1.0  # never past the deadline
    assert not retries.retry("c", text, policy, now=1.01)  # errors.retry.timeout ran out: the task fails
    forever = Retries()
    assert all(forever.retry("c", text, connector_settings({"errors.retry.timeout": "-1"}), now=float(n * 100))
               for n in range(50))


def test_auto_restart_brings_a_failed_task_back_and_counts_it(tmp_path):
    stores, runner, reconciler = setup(tmp_path)
    reconciler.worker = dataclasses.replace(reconciler.worker, auto_restart_enable=True)
    stores.config.put_connector_config("inc", INC)
    settle(stores, reconciler)
    fail_query(reconciler, "Traceback\nRuntimeError: " + task_failure_message("inc", 1, ValueError("bad")))
    settle(stores, reconciler, rounds=1)
    settle(stores, reconciler)
    rt = reconciler.lifecycles["inc"]
    assert status(stores, "inc") == ("RUNNING", ["RUNNING", "RUNNING"])  # the first restart comes at once
    assert runner.started[-1].excluded_tasks == [] and rt.auto_restart.count == 1
    assert rt.auto_restart.status("inc")["count"] == 1
    fail_query(reconciler, "Traceback\nRuntimeError: " + task_failure_message("inc", 1, ValueError("bad")))
    settle(stores, reconciler)
    assert status(stores, "inc") == ("RUNNING", ["RUNNING", "FAILED"])  # the second one waits 2 units
    assert rt.auto_restart.count == 1


def test_auto_restart_of_a_failed_connector_respects_max_restarts(tmp_path):
    stores, runner, reconciler = setup(tmp_path)
    reconciler.worker = dataclasses.replace(reconciler.worker, auto_restart_enable=True,
                                            auto_restart_max_restarts=1, auto_restart_backoff_unit_ms=0)
    stores.config.put_connector_config("to-kafka", {"connector.class": "increment", "increments": "1"})
    settle(stores, reconciler, rounds=8)
    rt = reconciler.lifecycles["to-kafka"]
    assert rt.auto_restart.count == 1  # restarted once (backoff 0), failed again, then left FAILED
    c = stores.status.get("to-kafka")
    assert c.state.value == "FAILED" and "no bootstrap.servers" in c.trace


def test_strimzi_schedule_max_restarts_and_reset():
    policy = AutoRestartPolicy(enabled=True, max_restarts=2, backoff_unit_ms=1000)
    auto = AutoRestart()
    assert auto.due(policy, failing=True, now=0.0)
    auto.restarted(now=0.0)
    assert not auto.due(policy, failing=True, now=1.9) and auto.due(policy, failing=True, now=2.0)
    auto.restarted(now=2.0)
    assert not auto.due(policy, failing=True, now=100.0)  # max.restarts reached: left FAILED
    assert not auto.due(policy, failing=False, now=100.0) and auto.count == 0  # ran well for 6 s: reset
    assert not AutoRestart().due(AutoRestartPolicy(enabled=False), failing=True, now=0.0)
    assert AutoRestart().status("c") is None


def _retriable(message: str) -> Exception:
    from sparkcat.errors import RetriableError
    return RetriableError(message)


def test_an_unavailable_store_is_transient_and_a_refusing_one_is_not():
    def kind(text):
        return Failure.of_query("c", text, [0]).kind

    assert kind("sparkcat task failed: c-0: StorageUnavailable: Kafka log 'o' at b:1: append failed: "
                "Local: All broker connections are down") == FailureKind.OUTAGE
    assert kind("sparkcat task failed: c-0: StorageError: Kafka log 'o' at b:1: append failed: "
                "Broker: Topic authorization failed") == FailureKind.TASKS
    assert kind("StorageError: /state/stores/configs.log is locked by another sparkcat driver") == FailureKind.TASKS
