"""``worker_id``'s executor id: read from the ``--executor-id`` argument of an ancestor process, as Spark starts executors."""

from __future__ import annotations

import subprocess
import sys

from tests.spark_fixture import REPO

CHILD = "import os; from sparkcat.spark.executor.batch_results import executor_id_of; print(executor_id_of(os.getpid()))"


def test_the_executor_id_comes_from_the_grandparent_executor_process_and_is_none_without_one():
    # executor-like parent -> a daemon-like child -> the Python worker, as pyspark.daemon forks workers
    worker = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {CHILD!r}])"
    executor = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {worker!r}])"
    out = subprocess.run([sys.executable, "-c", executor, "--executor-id", "7", "--hostname", "h"], cwd=REPO,
                         capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "7", out.stderr
    alone = subprocess.run([sys.executable, "-c", CHILD], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert alone.stdout.strip() == "None", alone.stderr
