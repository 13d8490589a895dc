"""A small local Spark session for integration tests (import ``make_spark`` from a fixture)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _python_env() -> None:
    """Executors and data source workers use this interpreter and can import ``sparkcat`` and ``tests``."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if str(REPO) not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([str(REPO), *paths])


def make_spark(master: str = "local[2]"):
    """local[2] SparkSession without UI, 2 shuffle partitions; the same session on every call."""
    _python_env()
    from pyspark.sql import SparkSession

    from sparkcat.spark.driver.jvm import jvm_conf
    from sparkcat.spark.driver.pools import scheduler_conf
    from sparkcat.spark.driver.session_tuning import tune_session

    builder = SparkSession.builder
    # the driver's fair-scheduler pools, Spark's Kafka connector and Delta Lake, as in production
    for key, value in {**scheduler_conf(), **jvm_conf(REPO)}.items():
        builder = builder.config(key, value)
    spark = (builder.master(master).appName("sparkcat-tests")
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.driver.host", "127.0.0.1")
             .config("spark.python.worker.reuse", "true")
             .config("spark.sql.streaming.stopTimeout", "60s")
             .config("spark.executorEnv.PYTHONPATH", os.environ["PYTHONPATH"])
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    tune_session(spark)  # as the driver does
    return spark
