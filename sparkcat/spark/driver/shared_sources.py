"""Python source connectors writing to Kafka that share one query (``shared_queries``), one per guarantee and
trigger interval.

Each trigger asks every member's ``ConnectorStreamReader`` as a query of its own would; the executors read and
produce each task's records exactly as before (``executor.shared_source``): at least once, or one transaction per
task exactly once. A member's first batch in the query may be a replay of one its last run committed
(``MemberWrite.replay``): its tasks' transactions skip what is already committed.
"""

from __future__ import annotations

import logging
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from sparkcat.config.names import SHARED_QUERY_PREFIX
from sparkcat.spark.driver.batch_reports import batch_result
from sparkcat.spark.driver.connector_planning import ConnectorStreamReader
from sparkcat.spark.driver.leases import write_under_lease
from sparkcat.spark.driver.shared_planning import Member
from sparkcat.spark.driver.shared_queries import SharedGroup, SharedQueries, slow_task_s
from sparkcat.spark.executor.kafka_serialisation import value_type_of
from sparkcat.spark.executor.shared_source import SHARED_RESULT_SCHEMA, MemberWrite, produce_members
from sparkcat.spark.executor.source_to_kafka import producer_config
from sparkcat.spark.query_plan import BatchResult, QueryPlan

__all__ = ["own_query_reason", "group_key", "new_member", "new_group", "SourceGroup"]

log = logging.getLogger(__name__)


def own_query_reason(plan: QueryPlan) -> str | None:
    """Why a source connector keeps a query of its own, or None when it can share one.

    Shared: Python source connectors writing to Kafka. Java connectors run their own stream, a ``sink.*`` sink
    its own writer, and ``transforms`` are projections of the connector's own DataFrame.
    """
    if plan.java_host:
        return "a Java connector"
    if plan.sink_class:
        return "writes to a sink (sink.*), not Kafka"
    if str(plan.connector_config.get("transforms") or "").strip():
        return "has transforms"
    return None


def group_key(plan: QueryPlan) -> str:
    """The group a shareable source joins: one per guarantee and trigger interval."""
    guarantee = "exactly-once" if plan.exactly_once else "at-least-once"
    return f"{SHARED_QUERY_PREFIX}sources-{guarantee}-{plan.trigger_interval_ms}ms"


def new_member(spark: SparkSession, plan: QueryPlan, running: Any, store: Any) -> Member:
    """A source connector's membership: its planner and what its tasks need to produce (a replay at first)."""
    from sparkcat.spark.driver.planned_source import row_schema
    schema = row_schema(spark, plan)
    write = MemberWrite(plan, producer_config(plan), value_type_of(schema["value"]), replay=True)
    return Member(plan, running, ConnectorStreamReader(plan, schema, store), write)


def new_group(owner: SharedQueries, key: str, checkpoint_dir: str, trigger_ms: int) -> SourceGroup:
    return SourceGroup(owner, key, checkpoint_dir, trigger_ms)


class SourceGroup(SharedGroup):
    """A shared query of source connectors: each batch's tasks read and produce under the driver's lease."""

    def _write_rows(self, df: DataFrame, batch_id: int, members: list[Member]) -> list[Any]:
        writes = {m.name: m.write for m in members}
        bound_s = slow_task_s(self.trigger_ms)

        def run(lease: Any, replay: bool) -> list[Any]:
            for w in writes.values():
                w.replay = w.replay or replay

            def produce(batches: Any) -> Any:
                return produce_members(writes, batch_id, lease, batches, bound_s)
            return df.mapInArrow(produce, SHARED_RESULT_SCHEMA).collect()

        return write_under_lease(self.owner.lease, run, False, self.key, batch_id)

    def _report(self, m: Member, rows: list[Any], batch_id: int, started: float) -> None:
        if not any(r.failure for r in rows):
            m.write.replay = False
        super()._report(m, rows, batch_id, started)

    def _result(self, m: Member, rows: list[Any], batch_id: int, started: float) -> BatchResult:
        result = batch_result(m.name, batch_id, rows, started)
        result.transaction_ms = max((r.transaction_ms for r in rows if r.transaction_ms is not None), default=None)
        skipped = sorted(r.task for r in rows if r.skipped)
        if skipped:
            log.info("Connector %s: batch %d was replayed; task(s) %s had committed it already and skipped it",
                     m.name, batch_id, skipped)
        return result
