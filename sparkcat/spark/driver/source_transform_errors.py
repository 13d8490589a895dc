"""``errors.tolerance`` over a Python source connector's transforms (Connect's ``TRANSFORMATION`` stage).

Connect runs each source record through the chain (``AbstractWorkerSourceTask.sendRecords``): a transform
that throws is reported (the error log) and, with ``errors.tolerance=all``, the record is dropped and its
offset still committed; with ``none`` the task fails with "Tolerance exceeded in error handler". Connect does
the same whether or not the task writes exactly once. sparkcat's chain is a projection of the whole batch
(``queries.transformed``), so one record whose expression fails (e.g. ``Cast`` of ``"x"`` to ``int32``
under Spark's ANSI mode) fails the batch's job. A source that writes to Kafka therefore gets its batch
untransformed (``handlers.writes_to_kafka``) and its handler applies the chain (``written_through_chain``):
when the write fails, the batch's rows are numbered and checkpointed (``_indexed``), ranges of them are
probed through the chain, halving each failing range, as the sink side does (``transform_errors``), and
each bad record is reported through ``RecordErrors`` with its source partition and offset (raising
``ToleranceExceededError`` for the first with ``none``). The batch is then written again with the bad
records marked dropped (``KEEP`` false, their parts blanked so the chain never evaluates them): as for a
record a ``Filter`` drops, their source offsets still count and nothing is written for them.

The write that failed may have produced some of the batch's other records already: at least once they are
produced again (duplicates, as after any failed batch); exactly once the second write is a replay, whose
tasks that committed the batch skip it, and the failed tasks' transactions were aborted.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from sparkcat.spark.driver.transform_errors import (MAX_PROBES, TRANSFORMATION, ProbeBudget, find_bad,
                                                   with_skipped)
from sparkcat.spark.executor.error_handling import RecordErrors, SourceRow, keys_of
from sparkcat.spark.query_plan import TASK_FAILURE_MARK, BatchResult
from sparkcat.transforms import KEEP, Chain, Records, apply_chain

__all__ = ["ROW", "chain_output", "written_through_chain"]

log = logging.getLogger(__name__)

#: The position of a row in a failed batch (``_indexed``).
ROW = "_row"
#: The record parts the chain reads, blanked for a bad record.
_PARTS = ("key", "value", "headers")

Write = Callable[[DataFrame, bool], BatchResult]  # (rows to write, whether a replay) -> the batch's result


def chain_output(rows: DataFrame, chain: Chain) -> DataFrame:
    """A source connector's rows through its chain (what ``queries.transformed`` gives a stream)."""
    return apply_chain(Records(rows), chain).df


def written_through_chain(rows: DataFrame, chain: Chain, errors: Callable[[], RecordErrors],
                          write: Write) -> BatchResult:
    """``rows`` written through ``chain``; if that fails on records the chain cannot transform, those are reported
    through ``errors()`` and skipped (``errors.tolerance=all``) or fail their task (``none``)."""
    try:
        return write(chain_output(rows, chain), False)
    except Exception as failure:
        if TASK_FAILURE_MARK in str(failure):  # a task's own failure (a conversion, a send), not a transform's
            raise
        return _without_bad(rows, chain, errors, failure, write)


def _without_bad(rows: DataFrame, chain: Chain, errors: Callable[[], RecordErrors], failure: BaseException,
                 write: Write) -> BatchResult:
    indexed = _indexed(rows)
    probes = _Probes(indexed, chain)
    try:
        if not probes.deterministic():
            raise failure
        bad = find_bad(probes, failure, "source records")
        reported = errors()
        log.warning("Connector %s: %d source record(s) of the batch failed their transforms", reported.connector,
                    len(bad))
        _report(indexed, bad, reported)
        return with_skipped(write(_dropping(indexed, chain, [b.row for b in bad]), True), [], reported)
    finally:
        indexed.unpersist()


def _indexed(rows: DataFrame) -> DataFrame:
    """``rows`` numbered (``ROW``) and checkpointed: a leaf Spark can filter below the chain, read once."""
    return rows.withColumn(ROW, F.monotonically_increasing_id()).localCheckpoint(eager=True)


@dataclass
class BadRow:
    """A source record the chain cannot transform: its position, failing stage and error."""

    row: int
    stage_class: str = ""
    error: BaseException | None = None


@dataclass
class _Probes(ProbeBudget):
    """Finds the rows of ``indexed`` whose transforms fail, a Spark job per probe (``transform_errors``)."""

    indexed: DataFrame
    chain: Chain
    probes_left: int = MAX_PROBES

    def deterministic(self) -> bool:
        try:
            return bool(chain_output(self.indexed, self.chain)._jdf.queryExecution().analyzed().deterministic())
        except Exception:  # noqa: BLE001 - cannot tell: no probing
            return False

    def find(self) -> list[BadRow]:
        rows = sorted(r[ROW] for r in self.indexed.select(ROW).collect())
        bad = [BadRow(row, error=error) for row, error in self._bisect(chain_output(self.indexed, self.chain), rows)]
        for record in bad:
            record.stage_class = self._stage_of(record)
        return bad

    def _bisect(self, transformed: DataFrame, rows: list[int]) -> list[tuple[int, BaseException]]:
        error = self._probe(transformed.where(F.col(ROW).between(rows[0], rows[-1])))
        if error is None:
            return []
        if len(rows) == 1:
            return [(rows[0], error)]
        half = len(rows) // 2
        return self._bisect(transformed, rows[:half]) + self._bisect(transformed, rows[half:])

    def _stage_of(self, record: BadRow) -> str:
        """The type name of the first stage whose chain up to it fails on the record (its error kept)."""
        for n in range(1, len(self.chain.stages) + 1):
            prefix = chain_output(self.indexed, Chain(self.chain.stages[:n]))
            error = self._probe(prefix.where(F.col(ROW) == record.row))
            if error is not None:
                record.error = error
                return self.chain.stages[n - 1].type_name
        return self.chain.stages[-1].type_name


def _report(indexed: DataFrame, bad: list[BadRow], errors: RecordErrors) -> None:
    """Each bad record through ``errors`` (its log line, counts; raises for the first unless tolerated)."""
    originals = {r[ROW]: r for r in indexed.where(F.col(ROW).isin([b.row for b in bad])).collect()}
    try:
        for record in bad:
            row = originals[record.row]
            [key] = keys_of([row["key"]])
            value = row["value"].asDict(recursive=True) if hasattr(row["value"], "asDict") else row["value"]
            source = SourceRow(row["_partition"], row["_offset"], row["topic"], key, value, row["timestamp_ms"])
            errors.failed(row["_task"], TRANSFORMATION, record.stage_class, record.error, source)
    finally:
        errors.flush()


def _dropping(indexed: DataFrame, chain: Chain, bad: list[int]) -> DataFrame:
    """The batch through the chain with the ``bad`` rows dropped (``KEEP`` false) and never transformed: their
    parts are null for the chain, and their source offsets still count when the batch is written."""
    is_bad = F.col(ROW).isin(bad)
    blanked = indexed.select(*[
        F.when(is_bad, F.lit(None).cast(f.dataType)).otherwise(F.col(f.name)).alias(f.name, metadata=f.metadata)
        if f.name in _PARTS else F.col(f.name) for f in indexed.schema.fields])
    out = chain_output(blanked, chain)
    keep = (F.coalesce(F.col(KEEP), F.lit(True)) & ~is_bad) if KEEP in out.columns else ~is_bad
    return out.withColumn(KEEP, keep).drop(ROW)
