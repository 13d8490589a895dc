"""A connector's cadence and lag as ``GET /metrics`` reports them (``Progress.snapshot``, ``offsets_behind``)."""

from __future__ import annotations

import json
from types import SimpleNamespace

from prometheus_client.parser import text_string_to_metric_families

from sparkcat.rest import metrics
from sparkcat.runtime.execution.progress import Progress, offsets_behind
from sparkcat.spark.query_plan import BatchResult, TaskBatchResult


def batch(records: int) -> BatchResult:
    return BatchResult("c", 0, {0: TaskBatchResult(0, "w", records)}, 0.2)


def spark_progress(*metric_sets: dict) -> SimpleNamespace:
    """What pyspark's ``StreamingQuery.lastProgress`` gives: an object whose ``json`` is Spark's progress JSON."""
    return SimpleNamespace(lastProgress=SimpleNamespace(json=json.dumps(
        {"sources": [{"description": "KafkaV2[...]", "metrics": m} for m in metric_sets]})))


def test_cadence_counts_the_batches_of_the_last_minute_and_keeps_the_last_time():
    p = Progress()
    for at in (1000.0, 1031.0, 1065.0, 1080.0):
        p.add(batch(5), now=at)
    snap = p.snapshot(now=1090.0)
    assert (snap.batches, snap.records, snap.batches_last_minute, snap.last_batch_at) == (4, 20, 3, 1080.0)
    assert p.snapshot(now=1200.0).batches_last_minute == 0  # an idle connector shows it
    p.add(batch(1), now=1201.0)
    assert snap.batches == 4, "a snapshot does not move with the connector"


def test_lag_is_the_worst_partition_of_the_kafka_sources_in_sparks_last_progress():
    query = spark_progress({"maxOffsetsBehindLatest": "120", "avgOffsetsBehindLatest": "40.0"},
                           {"maxOffsetsBehindLatest": "7"})
    assert offsets_behind(query) == 120.0
    assert offsets_behind(spark_progress({})) is None  # a Python data source: no such metric
    assert offsets_behind(SimpleNamespace(lastProgress=None)) is None  # no batch yet
    assert offsets_behind(None) is None


def test_metrics_expose_cadence_and_lag_per_connector():
    p = Progress()
    p.add(batch(3), now=5000.0)
    snap = p.snapshot(spark_progress({"maxOffsetsBehindLatest": "42"}), now=5010.0)
    quiet = Progress().snapshot(None, now=5010.0)
    families = {f.name: f for f in text_string_to_metric_families(metrics.render([("a", snap), ("b", quiet)], []))}
    value = {name: {s.labels["connector"]: s.value for s in families[name].samples}
             for name in ("sparkcat_connector_batches_last_minute", "sparkcat_connector_last_batch_timestamp_seconds",
                          "sparkcat_connector_offsets_behind_latest")}
    assert value["sparkcat_connector_batches_last_minute"] == {"a": 1, "b": 0}
    assert value["sparkcat_connector_last_batch_timestamp_seconds"] == {"a": 5000.0, "b": 0.0}
    assert value["sparkcat_connector_offsets_behind_latest"] == {"a": 42.0}  # none for a connector without one
