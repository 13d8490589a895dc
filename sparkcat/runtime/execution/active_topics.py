"""Active topics (KIP-558): the topics a connector's tasks used, as ``status-topic-TOPIC:connector-NAME`` records.

Connect's workers write such a record the first time a task consumes from (sinks) or produces to
(sources) a topic that the status topic does not list yet for its connector; ``GET
/connectors/NAME/topics`` lists them and ``PUT /connectors/NAME/topics/reset`` deletes them.
sparkcat records a sink's topics from the positions of each committed batch, and a source's from the topics
each of its tasks reports having sent records to in the batch (``spark/executor/topic_creator.py``). The
worker's ``topic.tracking.enable=false`` records none (``BatchAccounting``).
"""

from __future__ import annotations

import logging
import time

from sparkcat.errors import StorageError
from sparkcat.model.status import TopicStatus
from sparkcat.spark.query_plan import BatchResult
from sparkcat.storage.status import StatusStore

log = logging.getLogger(__name__)


def record_sink_topics(status: StatusStore, result: BatchResult) -> None:
    """Write a topic record for every topic a task of ``result`` consumed that is not listed yet."""
    used: dict[str, int] = {}
    for task in sorted(result.tasks.values(), key=lambda t: t.task):
        for partition, _ in task.offsets:
            topic = partition.get("kafka_topic")
            if isinstance(topic, str):
                used.setdefault(topic, task.task)
    _record(status, result, used)


def record_source_topics(status: StatusStore, result: BatchResult) -> None:
    """Write a topic record for every topic a task of ``result`` sent records to that is not listed yet."""
    used: dict[str, int] = {}
    for task in sorted(result.tasks.values(), key=lambda t: t.task):
        for topic in task.topics:
            used.setdefault(topic, task.task)
    _record(status, result, used)


def _record(status: StatusStore, result: BatchResult, used: dict[str, int]) -> None:
    """The records of the topics of ``used`` (topic -> the first task that used it) the status store lacks."""
    if not used:
        return
    try:
        known = set(status.known_topics(result.connector))
        now = int(time.time() * 1000)
        for topic, task in sorted(used.items()):
            if topic not in known:
                status.put_topic(TopicStatus(topic, result.connector, task, now))
                log.info("Connector %s: topic %s is active (first used by task %d)", result.connector, topic, task)
    except StorageError as e:
        # Bookkeeping, as Connect's status writes are: a status topic that cannot be read or written now
        # does not fail the batch that was written; the next batch finds the topic unlisted and tries again.
        log.warning("Connector %s: its active topics were not recorded (tried again with its next batch): %s",
                    result.connector, e)
