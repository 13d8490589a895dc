"""A Java source connector's stream: each micro-batch runs every live task's Java ``SourceTask`` on an executor.

The stream is ``sparkcat-connect-source`` (``jvm/sparkcat``: ``org.sparkcat.source.ConnectTaskSource``), planned by
``JavaPlanner`` here in the driver's Python. Connect's source tasks are not replayable ranges as sparkcat's
Python ones are (``planned_source``): a task is polled and remembers its position, so the stream's offset is only a
count of polls, and each batch is one partition per live task carrying a JSON request: the task's config, the
connector's committed offsets (read from sparkcat's offsets store when the batch is planned: a task starting
afresh resumes there), the batch's budget and the producer's settings. The executor's
``ConnectHost.runSourceBatch`` keeps the task across batches (by connector, task and generation: the query run),
polls it, transforms, converts, sends to Kafka (creating a topic before its first record, with Connect's
``TopicCreation``, when the connector sets ``topic.creation.*`` keys: KIP-158) and returns a result row once Kafka
acknowledged every record, with the topics they went to, which the driver records as active topics (KIP-558).
``java_source_handler`` collects those rows: the driver then stores the offsets, as for any source (at least once:
a task that fails, or a driver that dies, resumes from the last stored offsets).

Exactly once (``plan.exactly_once``): each task's batch is one Kafka transaction with its records and its offsets
(``transactional.id`` ``{group.id}-{connector}-{task}``, as Connect's), committed under the lease the driver held
when it planned the batch; the driver stores nothing itself. A failed or replayed batch restarts its task from the
offsets committed with the last transaction, which the planner reads once no transaction is open.
"""

from __future__ import annotations

import base64
import json
import logging
import time
import uuid
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from sparkcat.config.topic_creation import uses_topic_creation
from sparkcat.kafka.client_settings import (ClientKind, connector_overrides, java_admin_settings,
                                           java_producer_settings)
from sparkcat.kafka.producers import TRANSACTION_TIMEOUT_MS, task_transactional_id
from sparkcat.policy.input_policy import prepare
from sparkcat.spark.driver.batch_reports import Handler, batch_result
from sparkcat.spark.driver.leases import parse_group_metadata
from sparkcat.spark.query_plan import BatchResult, LeaseSource, QueryPlan, no_lease

__all__ = ["FORMAT", "CHECK_MS", "JavaPlanner", "java_source_stream", "java_source_handler", "producer_settings"]

log = logging.getLogger(__name__)

FORMAT = "sparkcat-connect-source"
POLLS = "polls"
#: How often Spark asks a Java source's planner whether a batch is due: a batch that filled its budget is followed
#: at once (the task has more, as Connect polls again at once); any other waits for trigger.interval.ms.
CHECK_MS = 50
#: The planners of the running Java source queries, by connector: the handler tells its planner how full each
#: batch was. A clearly named cache; a planner leaves it when its query stops.
_PLANNERS: dict[str, "JavaPlanner"] = {}
#: The longest a batch polls a task: well inside a transaction's timeout (``TRANSACTION_TIMEOUT_MS``), which an
#: exactly-once batch must end within, however long ``transaction.boundary.interval.ms`` is.
MAX_POLL_MS = 60_000
#: A task no batch used for this long is stopped on its executor (its query ended, or it moved elsewhere).
IDLE_MS = 120_000


def producer_settings(plan: QueryPlan, connector_config: dict[str, str]) -> dict[str, str]:
    """The Java producer's settings: the worker's ``kafka.*`` for producers, then ``producer.override.*`` of the
    connector's resolved config."""
    overrides = connector_overrides(connector_config, ClientKind.PRODUCER)
    return java_producer_settings(plan.bootstrap_servers, plan.kafka_config, overrides)


def topic_creation_settings(plan: QueryPlan, connector_config: dict[str, str]) -> dict[str, Any]:
    """Whether the tasks create their topics (KIP-158: the worker's ``topic.creation.enable`` and the connector's
    ``topic.creation.*`` keys) and, when they do, the Java AdminClient's settings they create them with."""
    if not plan.topic_creation or not uses_topic_creation(connector_config):
        return {"topic_creation": False}
    overrides = connector_overrides(connector_config, ClientKind.ADMIN)
    return {"topic_creation": True,
            "admin": java_admin_settings(plan.bootstrap_servers, plan.kafka_config, overrides)}


class JavaPlanner:
    """``org.sparkcat.source.Planner`` for a Java source: a batch per trigger, one request per live task."""

    def __init__(self, spark: SparkSession, planner_id: str, plan: QueryPlan, store: Any = None,
                 lease: LeaseSource = no_lease) -> None:
        self.spark, self.planner_id, self.plan, self.lease = spark, planner_id, plan, lease
        self._store, self._own_store = store, store is None
        self._requests = self._fixed_requests()
        self._last_batch = 0.0   # when the last batch was planned (monotonic)
        self._full = False       # whether a task filled its budget in the last batch

    def _fixed_requests(self) -> dict[int, dict[str, Any]]:
        """What each task's request holds in every batch of this query run (configs resolved once, here)."""
        plan = self.plan
        connector_config = prepare(plan.connector_config)
        producer = producer_settings(plan, connector_config)
        creation = topic_creation_settings(plan, connector_config)
        return {t: {"connector": plan.connector, "task": t, "generation": self.planner_id,
                    "connector_config": connector_config, "task_config": prepare(plan.task_configs[t]),
                    "producer": producer, "max_records": plan.batch_max_records,
                    "max_poll_ms": min(max(plan.trigger_interval_ms, 1000), MAX_POLL_MS),
                    "idle_ms": max(IDLE_MS, 10 * plan.trigger_interval_ms),
                    "exactly_once": self._transactions(t), **creation}
                for t in plan.live_tasks}

    def _transactions(self, task: int) -> dict[str, Any] | None:
        """Task ``task``'s transactional settings when the plan is exactly-once, else None."""
        plan = self.plan
        if not plan.exactly_once:
            return None
        return {"transactional_id": task_transactional_id(plan.group_id, plan.connector, task),
                "offsets_topic": plan.offsets_store["topic"], "transaction_timeout_ms": TRANSACTION_TIMEOUT_MS}

    def _lease(self) -> dict[str, Any] | None:
        """The driver's lease as the batch is planned, in the fields of Java's ``ConsumerGroupMetadata``."""
        held = self.lease() if self.plan.exactly_once else None
        if held is None:
            return None
        group, generation, member, instance = parse_group_metadata(held.group_metadata)
        return {"group": group, "generation": generation, "member": member, "instance": instance,
                "topic": held.topic}

    def _stored_offsets(self) -> list[list[Any]]:
        """The connector's committed ``[partition, offset]`` pairs, once no transaction in the store is open."""
        if not self.plan.offsets_store:
            return []
        if self._store is None:
            from sparkcat.storage.factory import open_offsets_store
            self._store = open_offsets_store(self.plan.offsets_store)
        self._store.get(self.plan.connector, stable=True)
        return [[p, o] for p, o in self._store.partitions(self.plan.connector)]

    def initialOffset(self) -> str:  # noqa: N802 - the Java interface's names
        return json.dumps({POLLS: 0})

    def latestOffset(self, start: str, max_rows: int) -> str:  # noqa: N802
        """A batch now when the last one filled a task's budget or trigger.interval.ms went by since it began (a
        Connect task is polled: it has no backlog to measure beforehand); else the same offset, no batch."""
        polls = int(json.loads(start).get(POLLS, 0))
        now = time.monotonic()
        if not self._full and (now - self._last_batch) * 1000 < self.plan.trigger_interval_ms:
            return json.dumps({POLLS: polls})
        self._last_batch, self._full = now, False
        return json.dumps({POLLS: polls + 1})

    def batch_done(self, result: BatchResult) -> None:
        """The handler's report of a batch: whether a task filled its ``batch.max.records``."""
        self._full = any(t.records >= self.plan.batch_max_records for t in result.tasks.values())

    def reportLatestOffset(self) -> str | None:  # noqa: N802
        return None

    def planPartitions(self, start: str, end: str) -> str:  # noqa: N802
        batch = {"offsets": self._stored_offsets(), "lease": self._lease()}
        host = self.plan.java_host
        return json.dumps([[t, base64.b64encode(json.dumps({"host": host, "request": {**r, **batch}})
                                                .encode()).decode()] for t, r in self._requests.items()])

    def commit(self, end: str) -> None:
        """Nothing: the driver stores each batch's offsets from its result rows (``java_source_handler``)."""

    def stop(self) -> None:
        """The query ended: this JVM's tasks of the connector stop now (executors' stop when idle)."""
        jvm = self.spark.sparkContext._jvm
        try:
            jvm.org.sparkcat.connect.ConnectHosts.stopTasks(self.plan.connector)
        except Exception as e:  # noqa: BLE001 - the driver may be shutting down
            log.warning("Connector %s: stopping its Java tasks in the driver JVM failed: %s", self.plan.connector, e)
        finally:
            if _PLANNERS.get(self.plan.connector) is self:
                del _PLANNERS[self.plan.connector]
            jvm.org.sparkcat.source.Planners.remove(self.planner_id)
            if self._store is not None and self._own_store:
                self._store.close()

    def metrics(self) -> str | None:
        """No source metrics in the query's progress beyond Spark's own."""
        return None

    class Java:
        implements = ["org.sparkcat.source.Planner"]


def java_source_stream(spark: SparkSession, plan: QueryPlan, store: Any = None,
                       lease: LeaseSource = no_lease) -> DataFrame:
    """The stream of a Java source's batches: one result row per task and batch (``RESULT_SCHEMA``).

    ``lease``: the driver's proof of leadership, which exactly-once tasks commit their transactions with."""
    from pyspark.java_gateway import ensure_callback_server_started

    planner_id = f"{plan.connector}-{uuid.uuid4().hex}"
    ensure_callback_server_started(spark.sparkContext._gateway)
    planner = JavaPlanner(spark, planner_id, plan, store, lease)
    _PLANNERS[plan.connector] = planner
    spark.sparkContext._jvm.org.sparkcat.source.Planners.register(planner_id, planner)
    log.info("Connector %s runs Java tasks %s on the executors", plan.connector,
             ", ".join(str(t) for t in plan.live_tasks))
    return spark.readStream.format(FORMAT).option("planner", planner_id).load()


def java_source_handler(plan: QueryPlan) -> Handler:
    """The batch's result rows, collected once: collecting runs the tasks, so nothing else may read ``batch_df``."""

    def handler(batch_df: DataFrame, batch_id: int) -> BatchResult:
        started = time.monotonic()
        rows = [r for r in batch_df.collect() if r.records or r.errors or r.offsets != "[]"]
        result = batch_result(plan.connector, batch_id, rows, started)
        result.positions_stored = plan.exactly_once  # committed with the records, in each task's transaction
        planner = _PLANNERS.get(plan.connector)
        if planner is not None:
            planner.batch_done(result)
        return result

    return handler
