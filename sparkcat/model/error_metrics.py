"""A connector task's error handling counters: Kafka Connect's ``ErrorHandlingMetrics``, per task.

Connect keeps them in the task-error-metrics group (``total-record-failures``,
``total-record-errors``, ``total-records-skipped``, ``total-errors-logged``,
``deadletterqueue-produce-requests``, ``deadletterqueue-produce-failures``,
``last-error-timestamp``). sparkcat counts them where a record is handled, on the executor
(``spark.error_handling.RecordErrors``), sends each Spark partition's counts back with its
batch result, and adds them up per task on the driver (``runtime.execution.progress.Progress``)
for ``GET /metrics``. sparkcat has no per-record retries, so Connect's ``total-retries`` has no
counterpart.

Counts travel as compact JSON (``to_json``/``of_json``) in the result rows, and only when
something happened: a batch without errors sends null.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields

__all__ = ["ErrorCounts"]


@dataclass
class ErrorCounts:
    """Error handling counters of one task (in one Spark partition, one batch, or since the driver started).

    >>> a = ErrorCounts(record_failures=1, record_errors=1, records_skipped=1, last_error_ms=5)
    >>> a.add(ErrorCounts.of_json(ErrorCounts(record_failures=2, last_error_ms=3).to_json()))
    >>> (a.record_failures, a.records_skipped, a.last_error_ms)
    (3, 1, 5)
    >>> bool(ErrorCounts()), ErrorCounts.of_json(None)
    (False, None)
    """

    record_failures: int = 0          # total-record-failures: every failed attempt at a record
    record_errors: int = 0            # total-record-errors: records that failed (and were not retried)
    records_skipped: int = 0          # total-records-skipped: failed records skipped (errors.tolerance=all)
    errors_logged: int = 0            # total-errors-logged: lines written by the error log (errors.log.enable)
    dlq_produce_requests: int = 0     # deadletterqueue-produce-requests: dead letters sent
    dlq_produce_failures: int = 0     # deadletterqueue-produce-failures: dead letters Kafka did not take
    last_error_ms: int = 0            # last-error-timestamp: epoch ms of the last failure (0: none)

    def __bool__(self) -> bool:
        return any(getattr(self, f.name) for f in fields(self))

    def add(self, other: ErrorCounts) -> None:
        """Add ``other``'s counts to these (the last error is the later of the two)."""
        for f in fields(self):
            if f.name != "last_error_ms":
                setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))
        self.last_error_ms = max(self.last_error_ms, other.last_error_ms)

    @property
    def last_error_s(self) -> float:
        return self.last_error_ms / 1000

    def to_json(self) -> str | None:
        """The non-zero counts as compact JSON, or None when there are none (what a result row carries)."""
        counts = {k: v for k, v in asdict(self).items() if v}
        return json.dumps(counts, separators=(",", ":")) if counts else None

    @classmethod
    def of_json(cls, text: str | None) -> ErrorCounts | None:
        """The counts a result row carries (None for null); unknown keys are ignored."""
        if not text:
            return None
        known = {f.name for f in fields(cls)}
        return cls(**{k: int(v) for k, v in json.loads(text).items() if k in known})
