"""``errors.tolerance=all`` over a sink connector's transforms (Connect's ``TRANSFORMATION`` stage).

Connect runs each record through the chain and tolerates a transform that throws on it: the record is
reported (error log, dead letter queue with the ``__connect.errors.*`` headers) and skipped. sparkcat's
chain is a projection of the whole batch (``sparkcat.transforms``), so one record whose expression fails
(e.g. ``Cast`` of ``"x"`` to ``int32`` under Spark's ANSI mode) fails the batch's job. When it does, and the
connector tolerates errors, ``BadRecords.find`` looks for the records that fail: it evaluates the chain on
ranges of each topic-partition's offsets, halving each failing range (a Spark job per probe: about
``2 log2(n)`` jobs per bad record in a batch of ``n``), then the first stage each bad record fails in. The
handler writes the batch again without them; their offsets still count as consumed, and each is reported
through the connector's ``RecordErrors`` (the same log lines, dead letters and error metrics as a
record whose conversion failed).

The probes filter the transformed batch by its original coordinates; Spark pushes that filter below the
chain's projection, so a probe transforms only its range. A chain with a non-deterministic expression
keeps the filter above it (every probe would fail): such a batch fails as before, never skipping
records it did not show bad.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import reduce
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from sparkcat.spark.executor.error_handling import ConsumedRecord, ErrorSettings, RecordErrors
from sparkcat.spark.executor.sink_decode import ORIGINAL, decode_batch, sides_of
from sparkcat.spark.query_plan import TASK_FAILURE_MARK, BatchResult, TaskBatchResult, sink_position, tp_key
from sparkcat.transforms import Chain, DataError, Records, apply_chain

__all__ = ["TRANSFORMATION", "MAX_PROBES", "BadRecord", "BadRecords", "TooManyBadRecords", "chain_transform", "probe",
           "rerun_without_bad", "with_skipped"]

log = logging.getLogger(__name__)

#: Connect's ``Stage.TRANSFORMATION``.
TRANSFORMATION = "TRANSFORMATION"

Transform = Callable[[Chain], DataFrame]  # the routed batch through (a prefix of) the chain


def chain_transform(routed: DataFrame, config: dict[str, str], raw: bool) -> Transform:
    """The routed batch, decoded once (``sink_decode``: its types inferred from the whole batch), through a
    chain: the full chain gives what ``sink_chain.transform_batch`` gives."""
    decoded, _ = decode_batch(routed, sides_of(config, raw))
    return lambda chain: apply_chain(Records(decoded, kind="sink", timestamp="timestamp", key_json=False), chain).df


#: At most this many probe jobs per failed batch: a batch most of whose records fail would take about two per
#: record; it fails instead (with Spark's error), as a batch whose chain cannot be probed does.
MAX_PROBES = 200


class TooManyBadRecords(RuntimeError):
    """The probes ran out before the bad records were isolated."""


@dataclass
class BadRecord:
    """A consumed record the chain cannot transform: its task, coordinates, failing stage and error."""

    task: int
    topic: str
    partition: int
    offset: int
    stage_class: str = ""
    error: BaseException | None = None

    def condition(self) -> Column:
        return ((F.col(ORIGINAL["topic"]) == self.topic) & (F.col(ORIGINAL["partition"]) == self.partition)
                & (F.col(ORIGINAL["offset"]) == self.offset))


class ProbeBudget:
    """At most ``MAX_PROBES`` Spark jobs to isolate a failed batch's bad records (``probes_left`` counts down)."""

    probes_left: int

    def _probe(self, df: DataFrame) -> BaseException | None:
        if self.probes_left <= 0:
            raise TooManyBadRecords(f"more than {MAX_PROBES} Spark jobs did not isolate the records whose "
                                    "transforms fail (many of the batch's records fail them)")
        self.probes_left -= 1
        return probe(df)


@dataclass
class BadRecords(ProbeBudget):
    """Finds, reports and leaves out the records of one batch whose transforms fail (driver side)."""

    routed: DataFrame      # the batch routed to its tasks, persisted (read once per probe)
    chain: Chain
    transform: Transform
    probes_left: int = MAX_PROBES

    def deterministic(self) -> bool:
        """Whether Spark can push a filter below the chain (else a probe would transform every record)."""
        try:
            return bool(self.transform(self.chain)._jdf.queryExecution().analyzed().deterministic())
        except Exception:  # noqa: BLE001 - cannot tell: no probing
            return False

    def find(self) -> list[BadRecord]:
        """The records of the batch whose transforms fail, each with its stage's class and error."""
        rows = self.routed.select("_task", "topic", "partition", "offset").collect()
        ranges: dict[tuple[str, int], list[int]] = {}
        tasks: dict[tuple[str, int], int] = {}
        for r in rows:
            ranges.setdefault((r["topic"], r["partition"]), []).append(r["offset"])
            tasks[(r["topic"], r["partition"])] = r["_task"]
        transformed = self.transform(self.chain)
        bad = []
        for (topic, partition), offsets in sorted(ranges.items()):
            for offset, error in self._bisect(transformed, topic, partition, sorted(offsets)):
                record = BadRecord(tasks[(topic, partition)], topic, partition, offset, error=error)
                record.stage_class = self._stage_of(record)
                bad.append(record)
        return bad

    def _bisect(self, transformed: DataFrame, topic: str, partition: int,
                offsets: list[int]) -> list[tuple[int, BaseException]]:
        error = self._probe(transformed.where(_in_range(topic, partition, offsets[0], offsets[-1])))
        if error is None:
            return []
        if len(offsets) == 1:
            return [(offsets[0], error)]
        half = len(offsets) // 2
        return (self._bisect(transformed, topic, partition, offsets[:half])
                + self._bisect(transformed, topic, partition, offsets[half:]))

    def _stage_of(self, record: BadRecord) -> str:
        """The type name of the first stage whose chain up to it fails on ``record`` (its error kept)."""
        for n in range(1, len(self.chain.stages) + 1):
            error = self._probe(self.transform(Chain(self.chain.stages[:n])).where(record.condition()))
            if error is not None:
                record.error = error
                return self.chain.stages[n - 1].type_name
        return self.chain.stages[-1].type_name

    def without(self, bad: list[BadRecord]) -> DataFrame:
        """The transformed batch without ``bad`` (filtered below the chain: they are never transformed)."""
        return self.transform(self.chain).where(~reduce(lambda a, b: a | b, [r.condition() for r in bad]))

    def report(self, bad: list[BadRecord], errors: RecordErrors) -> None:
        """Each bad record through ``errors`` (log line, dead letter with its original bytes, counts); raises
        ``ToleranceExceededError`` for the first one unless ``errors.tolerance=all``."""
        wanted = reduce(lambda a, b: a | b, [(F.col("topic") == r.topic) & (F.col("partition") == r.partition)
                                             & (F.col("offset") == r.offset) for r in bad])
        originals = {(r["topic"], r["partition"], r["offset"]): r for r in self.routed.where(wanted).collect()}
        try:
            for record in bad:
                row = originals[(record.topic, record.partition, record.offset)].asDict()
                headers = [(h["key"], h["value"]) for h in (row.get("headers") or [])]
                consumed = ConsumedRecord(record.topic, record.partition, record.offset, row["key"], row["value"],
                                          headers, row.get("timestamp"))
                errors.failed(record.task, TRANSFORMATION, record.stage_class, record.error, consumed)
        finally:
            errors.flush()


def _in_range(topic: str, partition: int, first: int, last: int) -> Column:
    return ((F.col(ORIGINAL["topic"]) == topic) & (F.col(ORIGINAL["partition"]) == partition)
            & F.col(ORIGINAL["offset"]).between(first, last))


def probe(df: DataFrame) -> BaseException | None:
    """Evaluate every column of ``df`` (Spark's ``noop`` writer); the error if that fails, else None."""
    try:
        df.write.format("noop").mode("overwrite").save()
        return None
    except Exception as e:  # noqa: BLE001 - what a transform raised, as Spark reports it
        return DataError(_short(e))  # Connect's DataException


def _short(error: BaseException) -> str:
    """Spark's error without its JVM stack: the first line naming the error class, e.g. ``[CAST_INVALID_INPUT]``."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    for line in lines:
        if line.startswith("[") or "Exception:" in line:
            return line[:1000]
    return (lines[0] if lines else type(error).__name__)[:1000]


def with_skipped(result: BatchResult, bad: list[BadRecord], errors: RecordErrors) -> BatchResult:
    """``result`` with the positions past the skipped records and their error counts, per task."""
    for record in bad:
        task = result.tasks.setdefault(record.task, TaskBatchResult(record.task, "", 0, []))
        key, end = tp_key(record.topic, record.partition), record.offset + 1
        positions = {tp_key(p["kafka_topic"], p["kafka_partition"]): (p, o) for p, o in task.offsets}
        if key not in positions or positions[key][1]["kafka_offset"] < end:
            positions[key] = sink_position(record.topic, record.partition, end)
        task.offsets = list(positions.values())
    for task_id, counts in errors.counts.items():
        task = result.tasks.setdefault(task_id, TaskBatchResult(task_id, "", 0, []))
        if task.errors is None:
            task.errors = counts
        else:
            task.errors.add(counts)
    return result


def tolerated(settings: ErrorSettings, error: BaseException) -> bool:
    """Whether a failed batch is worth probing: the connector tolerates errors and the failure is not a task's
    own (a ``put`` or ``flush`` that raised, or a conversion with ``errors.tolerance=none``, names its task)."""
    return settings.tolerance_all and TASK_FAILURE_MARK not in str(error)


def find_bad(probes: Any, failure: BaseException, what: str) -> list[Any]:
    """The records ``probes`` (``find()``) says fail their transforms; ``failure`` raised again when none does (the
    job failed for another reason) or the probing itself failed."""
    try:
        bad = probes.find()
    except Exception as e:  # noqa: BLE001 - the probing itself failed: the batch fails with its own error
        log.warning("Looking for the %s whose transforms fail did not finish: %s", what, e)
        raise failure from e
    if not bad:
        raise failure
    return bad


def rerun_without_bad(routed: DataFrame, chain: Chain, transform: Transform, settings: ErrorSettings,
                      errors: Callable[[], RecordErrors], failure: BaseException,
                      write: Callable[[DataFrame], BatchResult]) -> BatchResult:
    """The batch written again without the records whose transforms fail (``write``: the handler's job), or
    ``failure`` raised again when it is not a transform's record error the connector tolerates."""
    probes = BadRecords(routed, chain, transform)
    if not tolerated(settings, failure) or not probes.deterministic():
        raise failure
    bad = find_bad(probes, failure, "records")
    reported = errors()
    log.warning("Connector %s: %d record(s) of the batch failed their transforms and are skipped "
                "(errors.tolerance=all): %s", reported.connector, len(bad),
                ", ".join(f"{r.topic}-{r.partition}@{r.offset}" for r in bad))
    probes.report(bad, reported)
    return with_skipped(write(probes.without(bad)), bad, reported)
