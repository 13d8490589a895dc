"""A connector's lifecycle through its transitions (memory stores, fake runners, no Spark)."""

from __future__ import annotations

import time

import pytest

from sparkcat.connectors.increment import IncrementSourceConnector
from sparkcat.errors import StorageError
from sparkcat.model.config_state import TargetState
from sparkcat.runtime.execution.failures import Failure, FailureKind
from sparkcat.runtime.execution.lifecycle import InstanceState, QueryState
from sparkcat.spark.query_plan import BatchResult, TaskBatchResult, task_failure_message
from tests.unit.runtime.execution.reconciler_helpers import INC, reconciler_on_memory, settle, status
from tests.unit.runtime.execution.test_reconciler import FakeRunner
from tests.unit.runtime.execution.test_reconciler_off_thread import SlowRunner

OUTAGE = "org.apache.kafka.common.errors.TimeoutException: Expiring 3 record(s) for t-0: 120002 ms"


class RaisesWhileStarting(IncrementSourceConnector):
    """Reports a failure through its context while it starts, as a connector's own thread may."""

    def start(self, config):
        super().start(config)
        self.context.raise_error(RuntimeError("the source's table was dropped"))


def test_an_error_raised_while_the_connector_starts_fails_it_instead_of_running(tmp_path, monkeypatch):
    runner = FakeRunner()
    stores, reconciler = reconciler_on_memory(tmp_path, runner)
    from sparkcat import plugins
    real = plugins.connector_class
    monkeypatch.setattr(plugins, "connector_class", lambda name, packages=None:
                        RaisesWhileStarting if name == "increment" else real(name, packages))
    stores.config.put_connector_config("inc", INC)
    settle(stores, reconciler)
    c = stores.status.get("inc")
    assert c.state.value == "FAILED" and "the source's table was dropped" in c.trace
    assert runner.started == [] and reconciler.lifecycles["inc"].instance_state == InstanceState.FAILED


def test_a_transient_failure_after_committed_batches_waits_its_backoff(tmp_path):
    runner = FakeRunner()
    stores, reconciler = reconciler_on_memory(tmp_path, runner)
    stores.config.put_connector_config("inc", INC)
    settle(stores, reconciler)
    lc = reconciler.lifecycles["inc"]
    plan = runner.started[-1]
    reconciler.accounting.on_batch(plan, BatchResult("inc", 0, {0: TaskBatchResult(0, "w:1", 1)}, 0.1))
    lc.query.active, lc.query.error = False, OUTAGE  # Kafka went away right after that batch
    settle(stores, reconciler, rounds=1)
    assert lc.retries.attempts == 1 and lc.retries.not_before > time.monotonic()  # not "recovered" by that batch
    assert len(runner.started) == 1, "restarted at once, without its backoff"


def test_a_delivery_that_hits_a_store_outage_leaves_the_other_finished_stops_for_the_next_pass(tmp_path):
    runner = SlowRunner()
    stores, reconciler = reconciler_on_memory(tmp_path, runner)
    for name in ("a", "b"):
        stores.config.put_connector_config(name, INC)
    settle(stores, reconciler)
    for name in ("a", "b"):
        stores.config.put_target_state(name, TargetState.PAUSED)
    reconciler.reconcile(stores.config.snapshot())
    runner.wait_stopping(2)
    real = reconciler.reporter.connector
    failing = {"a"}

    def connector(name, state, trace=None):
        if name in failing and state.value == "PAUSED":
            failing.discard(name)
            raise StorageError("status store unreachable")
        real(name, state, trace)

    reconciler.reporter.connector = connector
    runner.release("a", "b")
    with pytest.raises(StorageError):  # the herder loop retries the pass (its outage)
        reconciler.finish_pending(wait=True)
    settle(stores, reconciler)
    assert status(stores, "b") == ("PAUSED", ["PAUSED", "PAUSED"])  # b's stop was not lost with a's outage
    assert all(lc.query_state == QueryState.NONE for lc in reconciler.lifecycles.values())


def test_a_failure_counts_its_record_even_when_it_is_transient():
    text = task_failure_message("c", 0, RuntimeError(
        "Tolerance exceeded in error handler. Caused by: RetriableError: the database is read-only"))
    failure = Failure.of_query("c", text, [0, 1])
    assert failure.kind == FailureKind.RETRIABLE and failure.tasks == (0,) and failure.record_failed


def test_a_sources_settings_are_read_with_its_placeholders_resolved(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARKCAT_TEST_RETRY_MS", "1500")
    runner = FakeRunner()
    stores, reconciler = reconciler_on_memory(tmp_path, runner, config_providers={
        "config.providers": "env",
        "config.providers.env.class": "org.apache.kafka.common.config.provider.EnvVarConfigProvider"})
    stores.config.put_connector_config("inc", {**INC, "errors.retry.timeout": "${env:SPARKCAT_TEST_RETRY_MS}"})
    settle(stores, reconciler)
    assert status(stores, "inc") == ("RUNNING", ["RUNNING", "RUNNING"])
    assert reconciler.lifecycles["inc"].settings.retry_timeout_ms == 1500

