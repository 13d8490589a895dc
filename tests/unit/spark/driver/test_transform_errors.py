"""What a batch whose bad records were skipped reports: positions past them, their error counts; and which
failed batches are probed at all."""

from __future__ import annotations

from sparkcat.model.error_metrics import ErrorCounts
from sparkcat.spark.driver.transform_errors import BadRecord, tolerated, with_skipped
from sparkcat.spark.executor.error_handling import ErrorSettings, RecordErrors
from sparkcat.spark.query_plan import BatchResult, TaskBatchResult, sink_position, task_failure_message


def test_positions_pass_a_skipped_last_record_and_its_task_counts_it():
    result = BatchResult("c", 3, {0: TaskBatchResult(0, "h:driver", 4, [sink_position("t", 0, 5)])}, 0.1)
    errors = RecordErrors("c", ErrorSettings(tolerance_all=True))
    errors.counts[1] = ErrorCounts(record_failures=1, record_errors=1, records_skipped=1)
    bad = [BadRecord(0, "t", 0, 5), BadRecord(0, "t", 0, 2), BadRecord(1, "t", 1, 9)]
    out = with_skipped(result, bad, errors)
    assert out.tasks[0].offsets == [sink_position("t", 0, 6)]  # past offset 5, not moved back by offset 2
    assert out.tasks[0].records == 4 and out.tasks[0].worker_id == "h:driver"
    assert out.tasks[1].offsets == [sink_position("t", 1, 10)] and out.tasks[1].worker_id == ""  # no executor
    assert out.tasks[1].errors.records_skipped == 1


def test_only_a_tolerating_connectors_batch_failing_outside_its_tasks_is_probed():
    put_failed = RuntimeError(task_failure_message("c", 0, ValueError("put raised")))
    cast_failed = RuntimeError("[CAST_INVALID_INPUT] The value 'x' of the type \"STRING\" cannot be cast to \"INT\"")
    assert tolerated(ErrorSettings(tolerance_all=True), cast_failed)
    assert not tolerated(ErrorSettings(tolerance_all=True), put_failed)
    assert not tolerated(ErrorSettings(), cast_failed)
