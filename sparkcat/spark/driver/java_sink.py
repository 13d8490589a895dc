"""A Java sink connector's micro-batches: Spark's Kafka rows into each task's Java ``SinkTask`` on the executors.

The query reads the subscribed topics with Spark's Kafka source, as for Python sinks (``queries``); each batch the
handler assigns the topic-partitions to the live tasks and routes every task's rows into one Spark partition
(``kafka_input``), then maps each partition through the JVM (``jvm/sparkcat``: ``org.sparkcat.sink.
ConnectSinkPartitions``; no Python per row): the task's rows go to its ``SinkTask`` (kept across batches by connector,
task and generation, opened on the partitions it owns), converted and transformed by Connect's own classes; the
batch ends with the task's ``preCommit``, whose offsets come back as the batch's result rows. The driver commits them
as it commits a Python sink's (the ``connect-NAME`` group and the offsets store).
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import DataFrame

from sparkcat.policy.input_policy import prepare
from sparkcat.spark.driver.batch_reports import Handler, batch_result
from sparkcat.spark.driver.java_source import IDLE_MS, producer_settings
from sparkcat.spark.driver.kafka_input import Assignment, route, subscribed_partitions
from sparkcat.spark.query_plan import BatchResult, QueryPlan

__all__ = ["java_sink_handler"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Report:
    """One task's answer for a batch, in the fields of sparkcat's result rows (``batch_reports.batch_result``)."""

    task: int
    worker_id: str
    records: int
    offsets: str
    errors: str | None


def _report(line: str) -> _Report:
    task, worker, answer = line.split("\t", 2)
    parsed = json.loads(answer)
    errors = parsed.get("errors")
    return _Report(int(task), worker, int(parsed["records"]), json.dumps(parsed["offsets"]),
                   None if errors is None else json.dumps(errors))


def java_sink_handler(plan: QueryPlan, partitions: Callable[[QueryPlan], list] = subscribed_partitions) -> Handler:
    """The handler of a Java sink's batches; one generation (task instances on the executors) per query run."""
    connector_config = prepare(plan.connector_config)
    fixed = {"connector": plan.connector, "generation": f"{plan.connector}-{uuid.uuid4().hex}",
             "connector_config": connector_config, "producer": producer_settings(plan, connector_config),
             "idle_ms": max(IDLE_MS, 10 * plan.trigger_interval_ms)}
    task_configs = {t: prepare(plan.task_configs[t]) for t in plan.live_tasks}
    spec = json.dumps(plan.java_host, sort_keys=True)

    def handler(batch_df: DataFrame, batch_id: int) -> BatchResult:
        started = time.monotonic()
        assignment = Assignment.of(partitions(plan), plan.live_tasks)
        tasks = {str(t): {"task_config": config,
                          "assignment": sorted([tp, p] for (tp, p), owner in assignment.owners.items() if owner == t)}
                 for t, config in task_configs.items()}
        jvm = batch_df.sparkSession.sparkContext._jvm
        run = jvm.org.sparkcat.sink.ConnectSinkPartitions(spec, json.dumps({**fixed, "tasks": tasks}))
        routed = route(batch_df, assignment, coalesce_one=False)
        answers = routed._jdf.mapPartitions(run, jvm.org.apache.spark.sql.Encoders.STRING()).collectAsList()
        return batch_result(plan.connector, batch_id, [_report(str(a)) for a in answers], started)

    return handler
