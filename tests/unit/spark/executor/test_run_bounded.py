"""A shared batch's task runs with a bound: its rows, its failure, or a "too slow" row once the bound is over."""

from __future__ import annotations

import threading
import time

from sparkcat.spark.executor.batch_results import Tally, result_batch
from sparkcat.spark.executor.shared_source import SLOW_MARK, run_bounded


def rows(task: int) -> list:
    tally = Tally()
    tally.records = 3
    return [result_batch({task: tally})]


def test_a_task_within_the_bound_reports_its_rows_labelled_with_its_connector():
    (out,) = list(run_bounded(lambda: rows(1), "c", 1, 5.0))
    row = out.to_pylist()[0]
    assert (row["connector"], row["task"], row["records"], row["failure"]) == ("c", 1, 3, None)


def test_a_failing_task_reports_its_trace():
    def work():
        raise ValueError("put refused the record")
    (out,) = list(run_bounded(work, "c", 0, 5.0))
    assert "ValueError: put refused the record" in out.to_pylist()[0]["failure"]


def test_a_task_still_running_at_the_bound_is_left_behind_with_a_slow_row():
    release = threading.Event()
    began = time.monotonic()
    (out,) = list(run_bounded(lambda: release.wait(30) and rows(0), "c", 0, 0.3))
    waited = time.monotonic() - began
    release.set()
    row = out.to_pylist()[0]
    assert row["failure"].startswith(SLOW_MARK) and row["records"] == 0
    assert 0.3 <= waited < 5, "the batch went on at the bound, not when the task ended"
