"""Connect's per-task error handling metrics: executors' counts merged per batch, added up per task, in /metrics.

``batch_reports.batch_result`` (rows of one batch), ``progress.Progress`` (since the
driver started) and ``rest.metrics`` (the exposition). Counting on executors is in
tests/unit/spark/executor/test_source_sends.py and test_error_handling.py; end to end in
tests/integration/runtime/test_dead_letter_queue.py and test_source_produce_errors.py.
"""

from __future__ import annotations

from collections import namedtuple
from types import SimpleNamespace

from prometheus_client.parser import text_string_to_metric_families

from sparkcat.model.error_metrics import ErrorCounts
from sparkcat.rest import metrics
from sparkcat.runtime.execution.failures import Failure
from sparkcat.runtime.execution.progress import Progress
from sparkcat.spark.driver.batch_reports import batch_result
from sparkcat.spark.query_plan import BatchResult, TaskBatchResult

Row = namedtuple("Row", "task worker_id records offsets errors")
OldRow = namedtuple("OldRow", "task worker_id records offsets")  # a row without the errors column


def test_a_batch_adds_up_the_counts_of_each_tasks_rows():
    rows = [Row(0, "w", 3, "[]", ErrorCounts(record_failures=1, record_errors=1, records_skipped=1,
                                             last_error_ms=10).to_json()),
            Row(0, "w", 2, "[]", ErrorCounts(record_failures=2, record_errors=2, dlq_produce_requests=2,
                                             last_error_ms=7).to_json()),
            Row(1, "w", 5, "[]", None), OldRow(2, "w", 1, "[]")]
    result = batch_result("c", 4, rows, 0.0)
    assert result.tasks[0].records == 5
    assert result.tasks[0].errors == ErrorCounts(record_failures=3, record_errors=3, records_skipped=1,
                                                 dlq_produce_requests=2, last_error_ms=10)
    assert result.tasks[1].errors is None and result.tasks[2].errors is None


def batch(errors: dict[int, ErrorCounts | None]) -> BatchResult:
    return BatchResult("c", 0, {t: TaskBatchResult(t, "w", 1, [], e) for t, e in errors.items()}, 0.1)


def test_progress_adds_each_tasks_counts_over_batches_and_shows_zeros_for_tasks_without_errors():
    p = Progress()
    p.add(batch({0: ErrorCounts(record_failures=1, record_errors=1, records_skipped=1, last_error_ms=1000),
                 1: None}))
    p.add(batch({0: ErrorCounts(record_failures=1, record_errors=1, records_skipped=1, errors_logged=1,
                                last_error_ms=2000)}))
    snap = p.snapshot(now=0.0)
    assert snap.task_errors == {0: ErrorCounts(2, 2, 2, 1, 0, 0, 2000), 1: ErrorCounts()}
    p.add(batch({0: ErrorCounts(record_failures=5)}))
    assert snap.task_errors[0].record_failures == 2, "a snapshot does not move with the connector"


def test_a_task_failed_by_a_record_counts_that_record_from_its_trace():
    def failed(trace):  # the query's failure as Spark hands it over, read once
        return Failure.of_query("c", trace, [0, 1, 2])

    p = Progress()
    p.task_failed(0, failed("sparkcat task failed: c-0: ToleranceExceededError: Tolerance exceeded in error handler. ..."),
                  now=5.0)
    p.task_failed(1, failed("sparkcat task failed: c-1: SendFailedError: Unrecoverable exception from producer send "
                     "callback: ..."), now=6.0)
    p.task_failed(1, failed("DeadLetterQueueError: Could not produce message to dead letter queue. topic=d: ..."), now=7.0)
    p.task_failed(2, failed("ValueError: the connector's own bug"))
    assert p.task_errors == {0: ErrorCounts(record_failures=1, record_errors=1, last_error_ms=5000),
                             1: ErrorCounts(record_failures=1, record_errors=1, dlq_produce_failures=1,
                                            last_error_ms=7000)}


def test_metrics_expose_connects_task_error_metrics_per_connector_and_task():
    p = Progress()
    p.add(batch({0: ErrorCounts(record_failures=2, record_errors=2, records_skipped=2, errors_logged=2,
                                dlq_produce_requests=2, last_error_ms=1_700_000_000_500), 1: None}))
    quiet = SimpleNamespace(records=0, batches=0, last_batch_s=0.0)  # a progress without task errors
    text = metrics.render([("a", p.snapshot(now=0.0)), ("b", quiet)], [])
    families = {f.name: f for f in text_string_to_metric_families(text)}
    expected = {"sparkcat_task_total_record_failures": 2, "sparkcat_task_total_record_errors": 2,
                "sparkcat_task_total_records_skipped": 2, "sparkcat_task_total_errors_logged": 2,
                "sparkcat_task_deadletterqueue_produce_requests": 2,
                "sparkcat_task_deadletterqueue_produce_failures": 0,
                "sparkcat_task_last_error_timestamp_seconds": 1_700_000_000.5}
    for name, value in expected.items():
        assert {(s.labels["connector"], s.labels["task"]): s.value for s in families[name].samples} == \
            {("a", "0"): value, ("a", "1"): 0}, name
    assert 'sparkcat_task_total_record_errors{connector="a",task="0"} 2.0' in text
    assert "# TYPE sparkcat_task_total_record_errors untyped" in text
