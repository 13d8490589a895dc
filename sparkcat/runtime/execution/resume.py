"""Where a connector's query resumes: its own checkpoint, or the cluster's newest committed positions.

Each driver keeps its checkpoints in its own ``checkpoint.dir`` (by default under its ``state.dir``),
but the offsets store (and, for sinks, the consumer group ``connect-NAME``) is the cluster's. When
leadership moves, another driver goes on from the store; when it comes back, this driver's checkpoint
is behind what the other one committed, and resuming from it would write those records again (issue
24: 1,617 of 7,498 positions twice under exactly-once). So before a query starts, its checkpoint is
compared with what the cluster committed:

- **source connectors**: every source partition whose stored offset is one this checkpoint never
  planned (Spark keeps the last 100 batch ends) was moved by someone else: another driver, or the
  offsets API. A stored offset the checkpoint did plan is this driver's own write, at or behind the
  checkpoint (the at-least-once store write comes before Spark's commit), so the checkpoint stands.
  Source offsets have no order in general; whether the checkpoint ever held a value is what can be
  told apart. A partition the checkpoint committed but the store no longer has was reset.
- **Kafka-fed sinks**: Kafka positions are ordered: a topic-partition whose committed position (the
  larger of the offsets store's and the group's) is beyond the end of the checkpoint's newest
  planned batch was read further by someone else.

Either way the checkpoint is dropped and the query starts fresh, from the store (``initialOffset`` of
the source, ``startingOffsets`` of a sink): never from behind what another driver committed. A
checkpoint with nothing to compare (new, or the store empty) is kept. With ``checkpoint.dir`` on
storage every driver reaches (HDFS, S3), all drivers share one checkpoint per connector, which is
never behind, and nothing is dropped.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sparkcat.spark.driver import hadoop_fs
from sparkcat.spark.driver.checkpoint_log import OffsetLog, read_offset_log
from sparkcat.spark.query_plan import QueryPlan
from sparkcat.storage.offsets import OffsetStore

log = logging.getLogger(__name__)

__all__ = ["Divergence", "source_divergence", "sink_divergence", "kafka_ends", "align_checkpoint"]

#: How many diverging partitions a log line names (the count is always given).
NAMED = 5


@dataclass(frozen=True)
class Divergence:
    """A partition where the cluster's committed position is not behind this checkpoint: (key, checkpoint, committed)."""

    partition: str
    checkpoint: Any
    committed: Any

    def __str__(self) -> str:
        return f"{self.partition}: checkpoint {self.checkpoint}, committed {self.committed}"


def source_divergence(ck: OffsetLog, stored: Mapping[str, Any]) -> list[Divergence]:
    """Source partitions whose committed offset this checkpoint never planned, or lost to a reset.

    ``stored`` is ``{partition key: offset}`` from the offsets store. Batch ends are read newest first
    and only until every stored offset was found (usually in the newest one).

    >>> ck = OffsetLog.of({0: {"offsets": {"p": {"n": 5}}}, 1: {"offsets": {"p": {"n": 9}}}}, last_committed=1)
    >>> source_divergence(ck, {"p": {"n": 9}}), source_divergence(ck, {"p": {"n": 5}})
    ([], [])
    >>> [str(d) for d in source_divergence(ck, {"p": {"n": 14}})]
    ["p: checkpoint {'n': 9}, committed {'n': 14}"]
    >>> [str(d) for d in source_divergence(ck, {})]
    ["p: checkpoint {'n': 9}, committed None"]
    """
    latest = _source_offsets(ck.latest())
    unmatched = {k: v for k, v in stored.items()}
    planned: set[str] = set()
    for end in ck.newest_first():
        offsets = _source_offsets(end)
        planned.update(offsets)
        for key in [k for k, v in unmatched.items() if k in offsets and offsets[k] == v]:
            del unmatched[key]
        if not unmatched:
            break
    # a stored partition this checkpoint never had (a task config changed): the query takes the stored offset
    out = [Divergence(k, latest.get(k), v) for k, v in sorted(unmatched.items()) if k in planned]
    committed = _source_offsets(ck.committed_end())
    out += [Divergence(k, v, None) for k, v in sorted(committed.items()) if v is not None and k not in stored]
    return out


def _source_offsets(end: Any) -> dict[str, Any]:
    offsets = end.get("offsets") if isinstance(end, dict) else None
    return offsets if isinstance(offsets, dict) else {}


def kafka_ends(end: Any) -> dict[str, int]:
    """``{"topic:partition": next offset}`` of a Kafka source's offset (``{"topic": {"0": 12}}``).

    >>> kafka_ends({"orders": {"0": 12, "1": 3}})
    {'orders:0': 12, 'orders:1': 3}
    """
    if not isinstance(end, dict):
        return {}
    return {f"{topic}:{p}": int(o) for topic, parts in end.items() if isinstance(parts, dict)
            for p, o in parts.items()}


def sink_divergence(log_: OffsetLog, committed: Mapping[str, int]) -> list[Divergence]:
    """Topic-partitions the cluster committed beyond the end of this checkpoint's newest planned batch.

    >>> ck = OffsetLog.of({3: {"t": {"0": 10, "1": 4}}}, last_committed=2)
    >>> sink_divergence(ck, {"t:0": 10, "t:1": 2})
    []
    >>> [str(d) for d in sink_divergence(ck, {"t:0": 25, "t:2": 7})]
    ['t:0: checkpoint 10, committed 25', 't:2: checkpoint None, committed 7']
    """
    planned = kafka_ends(log_.latest())
    return [Divergence(tp, planned.get(tp), offset) for tp, offset in sorted(committed.items())
            if offset > planned.get(tp, 0)]


def describe(divergences: list[Divergence]) -> str:
    """``N partition(s) (a: ..., b: ...)`` for a log line."""
    named = "; ".join(str(d) for d in divergences[:NAMED])
    more = f"; and {len(divergences) - NAMED} more" if len(divergences) > NAMED else ""
    return f"{len(divergences)} partition(s) ({named}{more})"


def align_checkpoint(spark: Any, offsets: OffsetStore, plan: QueryPlan) -> bool:
    """Drop ``plan``'s checkpoint when the cluster committed past it (see the module doc); True when dropped.

    Runs on a query starter thread, after exactly-once fencing (so no earlier instance commits more).
    """
    if spark is None:  # no Spark session (REST unit tests): no query, no checkpoint
        return False
    from sparkcat.spark.driver.queries import sink_starting_offsets  # pyspark: imported where a query starts

    ck = read_offset_log(spark, plan.checkpoint_dir)
    if ck.empty:
        return False
    if plan.connector_type == "sink":
        diverged = sink_divergence(ck, sink_starting_offsets(plan, offsets))
    else:
        diverged = source_divergence(ck, offsets.get(plan.connector, stable=True))
    if not diverged:
        return False
    log.warning("Connector %s: the cluster committed past this driver's checkpoint in %s (another driver led "
                "meanwhile, or offsets were altered); dropping checkpoint %s and starting from the committed "
                "positions", plan.connector, describe(diverged), plan.checkpoint_dir)
    hadoop_fs.delete(spark, plan.checkpoint_dir)
    return True
