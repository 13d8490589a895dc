"""The one log line of a task's state change says why it failed, not the last line of Spark's query plan."""

from __future__ import annotations

from sparkcat.runtime.execution.failures import reason_line as _first_line

QUERY_TRACE = """An exception was raised by the Python Proxy. Return Message: Traceback (most recent call last):
  File "/x/sparkcat/storage/kafka/log.py", line 110, in _wrapped
    yield
cimpl.KafkaException: KafkaError{code=OFFSET_NOT_AVAILABLE,val=78,str="Broker: Leader high watermark is not caught up"}

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "/x/sparkcat/storage/kafka/log.py", line 113, in _wrapped
    raise self._error(action, exc.args[0] if exc.args else str(exc)) from exc
sparkcat.errors.StorageError: Kafka log 'status': reading failed: Broker: Leader high watermark is not caught up

=== Streaming Query ===
Identifier: jdbc [id = d7e30aa7, runId = 205ae01b]
Logical Plan:
+- ~StreamingDataSourceV2ScanRelation[key#25479, value#25480] KafkaTable
"""


def test_a_failed_querys_line_is_its_last_exception_not_the_plan():
    assert _first_line(QUERY_TRACE) == ("sparkcat.errors.StorageError: Kafka log 'status': reading failed: "
                                        "Broker: Leader high watermark is not caught up")


def test_a_task_failure_line_wins_and_a_plain_message_is_kept():
    assert _first_line("Traceback...\nsparkcat task failed: put raised ValueError\nmore") == \
        "sparkcat task failed: put raised ValueError"
    assert _first_line("connector stopped by the user") == "connector stopped by the user"
    assert _first_line(None) == ""


def test_a_running_task_keeps_its_worker_id_until_its_run_ends():
    from sparkcat.model.status import State
    from sparkcat.runtime.execution.status_reporter import StatusReporter
    from sparkcat.storage.factory import memory_stores

    store = memory_stores().status
    reporter = StatusReporter(store, "host:8083", 1)

    def seen() -> tuple[str, str]:
        status = store.get_task("c", 0)
        return status.state.value, status.worker_id

    reporter.unplaced("c", 0)
    assert seen() == ("UNASSIGNED", "host:8083")
    reporter.task("c", 0, State.RUNNING, "exec-a:1")
    reporter.unplaced("c", 0)  # a query start that raced with the task's first batch: it stays RUNNING
    reporter.task("c", 0, State.RUNNING, "exec-b:2")
    assert seen() == ("RUNNING", "exec-a:1")
    reporter.task("c", 0, State.RESTARTING)
    reporter.task("c", 0, State.RUNNING, "exec-b:2")
    assert seen() == ("RUNNING", "exec-b:2")
    StatusReporter(store, "other:8083", 2).task("c", 0, State.RUNNING, "exec-c:3")  # a new leader's run
    assert seen() == ("RUNNING", "exec-c:3")
