"""Kafka Connect's metric groups in ``GET /metrics``: names, labels and the values computed from fake progress."""

from __future__ import annotations

import math
import re
import zipfile

from prometheus_client.parser import text_string_to_metric_families

from sparkcat import __version__
from sparkcat.model.error_metrics import ErrorCounts
from sparkcat.rest import connect_metrics, metrics
from sparkcat.runtime.execution.progress import Progress
from sparkcat.spark.query_plan import BatchResult, TaskBatchResult
from tests.spark_fixture import REPO

NOW = 1_000_000.0


def batch(now: float, **records: int) -> tuple[BatchResult, float]:
    """A committed batch at ``now`` with ``records`` per task (``t0=10``)."""
    tasks = {int(k[1:]): TaskBatchResult(int(k[1:]), "w", n) for k, n in records.items()}
    return BatchResult("c", 1, tasks, 0.5), now


def progress(*batches: tuple[BatchResult, float]) -> Progress:
    p = Progress()
    for result, at in batches:
        p.add(result, now=at)
    return p


def status(name: str, kind: str, *task_states: str, state: str = "RUNNING") -> dict:
    return {"name": name, "type": kind, "connector": {"state": state, "worker_id": "h:1"},
            "tasks": [{"id": i, "state": s, "worker_id": "h:1"} for i, s in enumerate(task_states)]}


def samples(progress_by_name: dict, statuses: list[dict], classes: dict | None = None) -> dict:
    """{(metric name, frozen labels): value} of the exposition text."""
    pairs = [(n, p.snapshot(now=NOW)) for n, p in progress_by_name.items()]
    text = metrics.render(pairs, statuses, classes, now=NOW)
    return {(s.name, frozenset(s.labels.items())): s.value
            for f in text_string_to_metric_families(text) for s in f.samples}


def value(found: dict, name: str, **labels: str) -> float:
    return found[(name, frozenset(labels.items()))]


def test_a_sink_task_s_totals_rates_and_batch_sizes_are_over_connect_s_30_second_window():
    sink = progress(batch(NOW - 40, t0=10, t1=1), batch(NOW - 20, t0=30), batch(NOW - 5, t0=60))
    found = samples({"s": sink}, [status("s", "sink", "RUNNING", "RUNNING")])
    task0, task1 = {"connector": "s", "task": "0"}, {"connector": "s", "task": "1"}
    assert value(found, "kafka_connect_sink_task_sink_record_read_total", **task0) == 100
    assert value(found, "kafka_connect_sink_task_sink_record_read_rate", **task0) == 90 / 30
    assert value(found, "kafka_connect_connector_task_batch_size_avg", **task0) == 45
    assert value(found, "kafka_connect_connector_task_batch_size_max", **task0) == 60
    assert value(found, "kafka_connect_sink_task_offset_commit_completion_total", **task0) == 3
    assert value(found, "kafka_connect_sink_task_offset_commit_completion_rate", **task0) == 2 / 30
    # task 1's only batch is older than the window: its total stays, its rate is 0, its averages NaN (as Connect's)
    assert value(found, "kafka_connect_sink_task_sink_record_read_total", **task1) == 1
    assert value(found, "kafka_connect_sink_task_sink_record_read_rate", **task1) == 0
    assert math.isnan(value(found, "kafka_connect_connector_task_batch_size_avg", **task1))
    assert not any(name.startswith("kafka_connect_source_task_") for name, _ in found)


def test_a_fast_task_s_rate_counts_every_batch_of_the_window_and_old_batches_are_dropped():
    # a batch each 50 ms for 25 s: 500 batches of 2 records, all inside the 30 s window
    fast = progress(batch(NOW - 120, t0=1000), *(batch(NOW - 25 + i * 0.05, t0=2) for i in range(500)))
    found = samples({"f": fast}, [status("f", "sink", "RUNNING")])
    assert value(found, "kafka_connect_sink_task_sink_record_read_rate", connector="f", task="0") == 1000 / 30
    assert value(found, "kafka_connect_sink_task_sink_record_read_total", connector="f", task="0") == 2000
    assert len(fast.tasks[0].history) == 500  # the batch of two minutes ago is gone, its records counted


def test_a_source_task_has_the_source_group_and_a_task_without_batches_counts_zero():
    source = progress(batch(NOW - 1, t0=7))
    found = samples({"src": source}, [status("src", "source", "RUNNING", "UNASSIGNED")])
    assert value(found, "kafka_connect_source_task_source_record_write_total", connector="src", task="0") == 7
    assert value(found, "kafka_connect_source_task_source_record_write_rate", connector="src", task="0") == 7 / 30
    assert value(found, "kafka_connect_source_task_source_record_write_total", connector="src", task="1") == 0
    assert not any(name.startswith("kafka_connect_sink_task_") for name, _ in found)


def test_states_types_classes_and_worker_counts_carry_connect_s_labels():
    statuses = [status("s", "sink", "RUNNING", "FAILED", state="RUNNING"), status("other", "source", "PAUSED", state="PAUSED")]
    identity = connect_metrics.connector_identity("FileStreamSink")
    found = samples({"s": progress(batch(NOW - 1, t0=1))}, statuses, {"s": identity})
    assert value(found, "kafka_connect_connector_status", connector="s", task="1", status="failed") == 1
    assert value(found, "kafka_connect_connector_metrics_status", connector="s", status="running") == 1
    assert value(found, "kafka_connect_connector_metrics_connector_type", connector="s", connector_type="sink") == 1
    assert value(found, "kafka_connect_connector_metrics_connector_class", connector="s",
                 connector_class="org.apache.kafka.connect.file.FileStreamSinkConnector") == 1
    assert value(found, "kafka_connect_connector_metrics_connector_version", connector="s",
                 connector_version=__version__) == 1
    # the worker group covers the connectors this driver runs ("other" has a status but no query here)
    assert value(found, "kafka_connect_worker_connector_count") == 1
    assert value(found, "kafka_connect_worker_task_count") == 2
    assert value(found, "kafka_connect_worker_connector_failed_task_count", connector="s") == 1
    assert value(found, "kafka_connect_worker_connector_running_task_count", connector="s") == 1
    # as a Connect worker shows only the connectors it runs: "other" (a status, no query here) has no series
    assert not [name for name, labels in found if ("connector", "other") in labels and name.startswith("kafka_connect")]
    assert value(found, "sparkcat_connector_state", connector="other", state="PAUSED", worker_id="h:1") == 1


def test_task_error_metrics_appear_under_connect_s_names_and_timestamp_unit():
    p = progress(batch(NOW - 1, t0=3))
    p.task_errors[0].add(ErrorCounts(record_failures=2, record_errors=2, records_skipped=2, last_error_ms=1234))
    found = samples({"s": p}, [status("s", "sink", "RUNNING")])
    task0 = {"connector": "s", "task": "0"}
    assert value(found, "kafka_connect_task_error_total_record_failures", **task0) == 2
    assert value(found, "kafka_connect_task_error_total_records_skipped", **task0) == 2
    assert value(found, "kafka_connect_task_error_last_error_timestamp", **task0) == 1234
    assert value(found, "sparkcat_task_total_record_errors", **task0) == 2  # the older names stay


def test_every_exposed_metric_is_connect_s_and_in_the_table_of_docs_running():
    doc = (REPO / "docs" / "running.md").read_text()
    assert connect_metrics.reference_table() in doc
    for m in connect_metrics.TASK_METRICS:
        assert f"`{m.name}`" in doc and m.name.startswith("kafka_connect_")


def test_a_connector_class_is_named_as_connector_plugins_names_it_with_its_version():
    assert connect_metrics.connector_identity("file-source") == connect_metrics.ConnectorIdentity(
        "org.apache.kafka.connect.file.FileStreamSourceConnector", __version__)
    assert connect_metrics.connector_identity("increment").class_name == \
        "sparkcat.connectors.increment:IncrementSourceConnector"
    assert connect_metrics.connector_identity("no.such.Connector") == connect_metrics.ConnectorIdentity(
        "no.such.Connector")


def connect_registry_names() -> set[str]:
    """The metric and group names in Connect 4.1's ``ConnectMetricsRegistry`` (connect-runtime in .jars/connect)."""
    jars = sorted((REPO / ".jars" / "connect").glob("connect-runtime-4.1.*.jar"))
    assert jars, "no connect-runtime 4.1 jar in .jars/connect: run tests/run.sh (scripts/jars.sh resolves it)"
    with zipfile.ZipFile(jars[-1]) as jar:
        code = jar.read("org/apache/kafka/connect/runtime/ConnectMetricsRegistry.class")
    return {m.decode() for m in re.findall(rb"[a-z]+(?:-[a-z]+)*", code)}


def test_every_exposed_metric_is_named_as_in_connect_4_1_s_registry():
    names = connect_registry_names()
    exposed = [(m.group, m.attribute) for m in connect_metrics.TASK_METRICS] + \
        [(group, attr) for group, attr, *_ in connect_metrics.STATE_METRICS]
    for group, attr in exposed:
        assert group in names and attr in names, (group, attr)


def test_the_rebalance_group_is_named_as_in_connect_4_1_s_registry():
    names = connect_registry_names()
    assert "connect-worker-rebalance-metrics" in names
    for attr, *_ in connect_metrics.REBALANCE_METRICS:
        assert attr in names, attr
    assert "leader-name" in names


def test_the_leader_group_s_rebalances_show_under_connect_s_worker_rebalance_names():
    from sparkcat.runtime.control.rebalances import RebalanceView
    view = RebalanceView("http://a:8083", 4, False, 3, 120.0, 200.0, 1500.0)
    text = metrics.exposition(metrics.registry(lambda: ([], [], {}, view), lambda: NOW))
    found = {(s.name, frozenset(s.labels.items())): s.value
             for f in text_string_to_metric_families(text) for s in f.samples}
    assert value(found, "kafka_connect_worker_rebalance_epoch") == 4
    assert value(found, "kafka_connect_worker_rebalance_rebalancing") == 0
    assert value(found, "kafka_connect_worker_rebalance_completed_rebalances_total") == 3
    assert value(found, "kafka_connect_worker_rebalance_rebalance_avg_time_ms") == 120.0
    assert value(found, "kafka_connect_worker_rebalance_rebalance_max_time_ms") == 200.0
    assert value(found, "kafka_connect_worker_rebalance_time_since_last_rebalance_ms") == 1500.0
    assert value(found, "kafka_connect_worker_rebalance_leader_name", leader_name="http://a:8083") == 1
    # without a group (local stores) the group is not there at all
    assert "kafka_connect_worker_rebalance_epoch" not in metrics.render([], [], {}, now=NOW)
