"""Zombie fencing before an exactly-once query starts (a source, or a sink with ``exactly.once.support=required``),
and Connect's ``tasks-fencing-NAME`` record.

Connect's leader fences the transactional ids of a connector's earlier task generation before
any task of a new one starts (``DistributedHerder.fenceZombieSourceTasks``), then writes
``tasks-fencing-NAME`` → ``{"task-count": N}``, which says how many ids the next round must fence.
sparkcat does the same before each start of an exactly-once query (off the herder thread, as
query starts are): it fences ids ``0 .. max(last task-count record, task count) - 1`` with
``init_transactions`` (confluent-kafka has no ``Admin.fenceProducers``), so a killed driver's open
transactions are aborted at once instead of holding back every ``read_committed`` reader of the
offsets topic until they time out. The record is written when task configs were committed after
the last one (Connect's "pending fencing").
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from sparkcat.kafka.producers import fence_transactional_ids, task_transactional_id
from sparkcat.model.config_state import ClusterConfigState
from sparkcat.spark.query_plan import QueryPlan
from sparkcat.spark.executor.source_to_kafka import producer_config
from sparkcat.storage.config_log import ConfigLog

log = logging.getLogger(__name__)
_CLIENT_LOG = logging.getLogger("sparkcat.runtime.execution.fencing.client")


def zombie_fencing(config_log: ConfigLog, plan: QueryPlan, state: ClusterConfigState) -> Callable[[], None]:
    """What to run before ``plan``'s exactly-once query starts: fence earlier task instances, record the count.

    The state is read now, on the herder thread; the returned function runs on a starter thread.
    """
    name, count = plan.connector, len(plan.task_configs)
    previous = state.task_count_records.get(name, 0)
    pending = name in state.pending_fencing

    def fence() -> None:
        started = time.monotonic()
        ids = [task_transactional_id(plan.group_id, name, t) for t in range(max(previous, count))]
        fence_transactional_ids(producer_config(plan), ids, _CLIENT_LOG)
        if pending:
            config_log.put_task_count_record(name, count)
        log.info("Connector %s: fenced earlier instances of %d task(s) in %.2f s%s", name, len(ids),
                 time.monotonic() - started, f"; task-count record {count} written" if pending else "")

    return fence
