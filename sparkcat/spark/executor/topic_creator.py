"""A source task's topics on executors: created before the first record goes to them (KIP-158), and noted per task
for the driver to record as the connector's active topics (KIP-558).

Connect's ``AbstractWorkerSourceTask.maybeCreateTopic``: the first time a task sends to a topic it asks whether
the topic exists; an existing topic is used as it is, a missing one is created with the settings of the first
topic creation group that takes it (``config/topic_creation.py``), and either way the topic is remembered, so
it is asked about once. A topic that neither exists nor could be created fails the task with Connect's message.
Here the topics found or created are remembered per executor Python process and connector (Connect: per task),
so a task's next batches in the same worker ask nothing.

Connect records a topic as active (``status-topic-TOPIC:connector-NAME``) the first time a task sends to it;
``SourceTopics.used`` reports each task's topics with its result row and the driver writes the records it
does not have (``runtime/execution/active_topics.py``).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from sparkcat.config.topic_creation import TopicCreation, topic_creation
from sparkcat.errors import ConnectorError
from sparkcat.kafka.admins import worker_admin
from sparkcat.kafka.client_settings import ClientKind, connector_overrides
from sparkcat.policy.input_policy import prepare
from sparkcat.spark.query_plan import QueryPlan

__all__ = ["SourceTopics", "TopicCreationError"]

log = logging.getLogger(__name__)

TIMEOUT_S = 30.0
_LOCK = threading.Lock()
#: (bootstrap servers, connector, its topic creation) -> the topics found or created in this process
_KNOWN: dict[tuple[str, str, TopicCreation], set[str]] = {}


class TopicCreationError(ConnectorError):
    """A topic a source task sends to neither exists nor could be created: the task fails."""


def _admin(plan: QueryPlan) -> Any:
    """The process's AdminClient of the connector's settings: the worker's, then its ``admin.override.*``."""
    overrides = connector_overrides(prepare(plan.connector_config), ClientKind.ADMIN)
    return worker_admin(plan.bootstrap_servers, plan.kafka_config, overrides)


class SourceTopics:
    """The topics of one Spark partition's source records: created when missing, and noted per task."""

    def __init__(self, plan: QueryPlan) -> None:
        self.plan = plan
        self.creation: TopicCreation | None = None
        if plan.topic_creation and plan.bootstrap_servers:
            self.creation = topic_creation(prepare(plan.connector_config), plan.topic_creation)
        self.used: dict[int, set[str]] = {}

    def before_send(self, tasks: list[int], topics: str | list[str]) -> None:
        """Before the rows of ``tasks`` go to ``topics`` (one topic for all, or one per row): note each task's
        topics and create those that are new to this process (when the connector creates topics)."""
        if isinstance(topics, str):
            pairs = {(task, topics) for task in set(tasks)}
        else:
            pairs = set(zip(tasks, topics))
        for task, topic in pairs:
            self.used.setdefault(task, set()).add(topic)
        if self.creation is not None:
            self._ensure({topic for _, topic in pairs})

    def topics_of(self, task: int) -> list[str]:
        return sorted(self.used.get(task, ()))

    def _ensure(self, topics: set[str]) -> None:
        assert self.creation is not None
        key = (self.plan.bootstrap_servers, self.plan.connector, self.creation)
        with _LOCK:
            known = _KNOWN.setdefault(key, set())
            new = sorted(topics - known)
        if not new:
            return
        for topic in new:
            self._create_if_missing(topic)
        with _LOCK:
            known.update(new)

    def _create_if_missing(self, topic: str) -> None:
        from confluent_kafka.admin import NewTopic
        assert self.creation is not None
        admin = _admin(self.plan)
        connector = self.plan.connector
        log.info("Connector %s: its task will send records to topic '%s' for the first time. Checking whether "
                 "topic exists", connector, topic)
        try:
            if topic in admin.list_topics(timeout=TIMEOUT_S).topics:
                log.info("Connector %s: topic '%s' already exists.", connector, topic)
                return
        except Exception as e:
            raise TopicCreationError(f"Connector {connector}: could not ask whether topic '{topic}' exists: "
                                     f"{e}") from e
        group = self.creation.group_for(topic)
        described = group.describe(topic)
        new = NewTopic(topic, num_partitions=group.partitions, replication_factor=group.replication_factor,
                       config=dict(group.configs))
        try:
            admin.create_topics([new], request_timeout=TIMEOUT_S)[topic].result(timeout=TIMEOUT_S)
            log.info("Connector %s: created topic '%s' using creation group %s", connector, described, group.name)
        except Exception as e:
            if "TOPIC_ALREADY_EXISTS" in str(e) or "already exists" in str(e):
                log.info("Connector %s: found existing topic '%s'", connector, described)
                return
            raise TopicCreationError(
                f"Task failed to create new topic {described}. Ensure that the task is authorized to create "
                f"topics or that the topic exists and restart the task (topic creation group {group.name!r}, "
                f"connector {connector}): {e}") from e
