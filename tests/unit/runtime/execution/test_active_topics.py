"""Active topics are bookkeeping: a status topic that cannot be read now does not fail the batch that was written."""

from __future__ import annotations

from sparkcat.errors import StorageUnavailable
from sparkcat.runtime.execution.active_topics import record_sink_topics
from sparkcat.spark.query_plan import BatchResult, TaskBatchResult
from sparkcat.storage.log import MemoryLog
from sparkcat.storage.status import StatusStore


class _FailingOnce(MemoryLog):
    """A status log whose next read fails as Kafka's does while a partition's new leader catches up."""

    fail_next = False

    def read(self, start: int = 0):
        if self.fail_next:
            self.fail_next = False
            raise StorageUnavailable("Kafka log 'status': reading failed: Broker: Leader high watermark is not caught up")
        return super().read(start)


def _batch(topic: str) -> BatchResult:
    offsets = [({"kafka_topic": topic, "kafka_partition": 0}, {"kafka_offset": 5})]
    return BatchResult("sink", 1, {0: TaskBatchResult(0, "w", 5, offsets)}, 0.1)


def test_an_unreadable_status_topic_leaves_the_batch_alone_and_the_next_batch_records_the_topic(caplog):
    backend = _FailingOnce()
    status = StatusStore(backend)
    backend.fail_next = True
    record_sink_topics(status, _batch("orders"))  # must not raise: the batch's records are written already
    assert "its active topics were not recorded" in caplog.text
    assert status.known_topics("sink") == []
    record_sink_topics(status, _batch("orders"))
    assert status.known_topics("sink") == ["orders"]


def test_a_source_tasks_reported_topics_are_recorded_once_each_with_the_first_task_that_used_it():
    from sparkcat.runtime.execution.active_topics import record_source_topics
    status = StatusStore(MemoryLog())
    tasks = {1: TaskBatchResult(1, "w", 3, topics=["a", "b"]), 0: TaskBatchResult(0, "w", 2, topics=["b"])}
    record_source_topics(status, BatchResult("src", 1, tasks, 0.1))
    record_source_topics(status, BatchResult("src", 2, {0: TaskBatchResult(0, "w", 1, topics=["b"])}, 0.1))
    assert status.topics("src") == ["a", "b"]
    records = [r for r in status.backend.read(0) if r.key.startswith("status-topic-")]
    assert sorted(r.key for r in records) == ["status-topic-a:connector-src", "status-topic-b:connector-src"]
    assert '"task":0' in str(next(r.value for r in records if r.key.startswith("status-topic-b")))
