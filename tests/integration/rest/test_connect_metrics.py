"""Kafka Connect's metric groups in ``GET /metrics`` of a real driver: a file source and a file sink through the broker.

What an operator's Connect dashboard reads: the JMX exporter's names and labels, with totals that
match the records that went through, and rates over Connect's 30 s window.
"""

from __future__ import annotations

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from sparkcat import __version__
from sparkcat.bootstrap import Driver
from sparkcat.config.worker import WorkerConfig
from tests.broker import free_port
from tests.integration.runtime.test_driver import file_lines, kafka_worker_fields
from tests.integration.runtime.test_leadership import FAST_GROUP, cluster_fields
from tests.kafka_helpers import create_topic, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

STRING = "org.apache.kafka.connect.storage.StringConverter"
SOURCE_CLASS = "org.apache.kafka.connect.file.FileStreamSourceConnector"
SINK_CLASS = "org.apache.kafka.connect.file.FileStreamSinkConnector"


def scrape(url: str) -> dict:
    """{(name, frozen labels): value} of ``GET /metrics``."""
    text = httpx.get(f"{url}/metrics", timeout=30).text
    return {(s.name, frozenset(s.labels.items())): s.value
            for f in text_string_to_metric_families(text) for s in f.samples}


def by_name(found: dict, name: str) -> dict:
    """{labels as dict items: value} of one metric."""
    return {labels: v for (n, labels), v in found.items() if n == name}


def test_a_source_and_a_sink_show_connect_s_metrics_matching_the_records_sent(spark, broker, tmp_path, unique_name):
    worker = WorkerConfig(**kafka_worker_fields(broker.bootstrap, tmp_path, unique_name),
                          rest_host="127.0.0.1", rest_port=free_port())
    topic = f"{unique_name}-lines"
    create_topic(broker.bootstrap, topic)
    source_file, sink_file = tmp_path / "in.txt", tmp_path / "out.txt"
    lines = [f"line {i}" for i in range(120)]
    source_file.write_text("\n".join(lines) + "\n")
    driver = Driver(spark, worker, rest=True, watch_pipelines=False)
    driver.start()
    url = f"http://127.0.0.1:{worker.rest_port}"
    try:
        driver.herder.put_connector_config("lines-in", {
            "connector.class": SOURCE_CLASS, "file": str(source_file), "topic": topic, "value.converter": STRING,
            "trigger.interval.ms": "300"})
        driver.herder.put_connector_config("lines-out", {
            "connector.class": SINK_CLASS, "file": str(sink_file), "topics": topic, "value.converter": STRING,
            "trigger.interval.ms": "300"})
        wait_until(lambda: file_lines(sink_file) == lines, timeout_s=120, message="the sink file to match")

        def totals_reached() -> dict | None:
            found = scrape(url)
            written = sum(by_name(found, "kafka_connect_source_task_source_record_write_total").values())
            read = sum(by_name(found, "kafka_connect_sink_task_sink_record_read_total").values())
            return found if written == read == len(lines) else None

        found = wait_until(totals_reached, timeout_s=60, message=lambda: f"totals of 120 records: {scrape(url)}")
    finally:
        driver.stop()

    source, sink = frozenset({("connector", "lines-in"), ("task", "0")}), frozenset({("connector", "lines-out"),
                                                                                    ("task", "0")})
    assert by_name(found, "kafka_connect_source_task_source_record_write_total") == {source: len(lines)}
    assert by_name(found, "kafka_connect_sink_task_sink_record_read_total") == {sink: len(lines)}
    # the batches just committed are inside Connect's 30 s window: rate × 30 s is the records of those batches
    for name, labels in (("kafka_connect_source_task_source_record_write_rate", source),
                         ("kafka_connect_sink_task_sink_record_read_rate", sink)):
        assert 0 < found[(name, labels)] * 30 <= len(lines)
    assert 0 < found[("kafka_connect_connector_task_batch_size_max", sink)] <= len(lines)
    assert found[("kafka_connect_sink_task_offset_commit_completion_total", sink)] >= 1
    assert found[("kafka_connect_task_error_total_record_errors", sink)] == 0
    assert found[("kafka_connect_connector_status", source | {("status", "running")})] == 1
    assert found[("kafka_connect_connector_status", sink | {("status", "running")})] == 1
    for name, kind, cls in (("lines-in", "source", SOURCE_CLASS), ("lines-out", "sink", SINK_CLASS)):
        connector = ("connector", name)
        assert found[("kafka_connect_connector_metrics_status", frozenset({connector, ("status", "running")}))] == 1
        assert found[("kafka_connect_connector_metrics_connector_type",
                      frozenset({connector, ("connector_type", kind)}))] == 1
        assert found[("kafka_connect_connector_metrics_connector_class",
                      frozenset({connector, ("connector_class", cls)}))] == 1
        assert found[("kafka_connect_connector_metrics_connector_version",
                      frozenset({connector, ("connector_version", __version__)}))] == 1
        assert found[("kafka_connect_worker_connector_running_task_count", frozenset({connector}))] == 1
    assert found[("kafka_connect_worker_connector_count", frozenset())] == 2
    assert found[("kafka_connect_worker_task_count", frozenset())] == 2
    # a sink has no source group and a source no sink group
    assert not by_name(found, "kafka_connect_sink_task_sink_record_read_total").keys() & {source}
    assert not by_name(found, "kafka_connect_source_task_source_record_write_total").keys() & {sink}


REBALANCE = "kafka_connect_worker_rebalance_"


def rebalance_of(url: str) -> dict:
    """connect-worker-rebalance-metrics of the driver at ``url``: {attribute: value}, leader_name its label."""
    found = scrape(url)
    out = {n[len(REBALANCE):]: v for (n, labels), v in found.items() if n.startswith(REBALANCE) and not labels}
    leaders = [dict(labels)["leader_name"] for (n, labels) in found if n == REBALANCE + "leader_name"]
    out["leader_name"] = leaders[0] if leaders else None
    return out


def test_the_leader_group_s_rebalances_show_and_change_when_another_driver_takes_the_leadership(
        spark, broker, tmp_path, unique_name):
    """Two drivers of one cluster: each one's connect-worker-rebalance-metrics follow the leader group's join rounds
    (a driver joining, the leader leaving), and leader-name moves to the driver that takes the leadership."""
    a, b = (Driver(session, WorkerConfig(**cluster_fields(broker.bootstrap, tmp_path, unique_name, name),
                                         **FAST_GROUP), watch_pipelines=False)
            for session, name in ((spark, "a"), (spark.newSession(), "b")))
    started = []
    try:
        a.start()
        started.append(a)
        first = wait_until(lambda: (m := rebalance_of(a.url))["leader_name"] == a.url and m, timeout_s=60,
                           message=lambda: f"a leads, in its metrics: {rebalance_of(a.url)}")
        assert first["completed_rebalances_total"] >= 1 and first["epoch"] >= 1 and first["rebalancing"] == 0
        assert 0 <= first["rebalance_max_time_ms"] < 60_000 and first["time_since_last_rebalance_ms"] < 60_000

        b.start()  # b's join is a round of the group for both drivers: a's generation moves on, a still leads
        started.append(b)
        joined = wait_until(lambda: (m := rebalance_of(a.url))["epoch"] > first["epoch"] and m, timeout_s=60,
                            message=lambda: f"a's next round: {rebalance_of(a.url)}")
        assert joined["completed_rebalances_total"] > first["completed_rebalances_total"]
        assert joined["leader_name"] == a.url
        standby = wait_until(lambda: (m := rebalance_of(b.url))["leader_name"] == a.url and m, timeout_s=60,
                             message=lambda: f"b names a as the leader: {rebalance_of(b.url)}")
        assert standby["epoch"] == joined["epoch"]  # one group, one generation

        a.stop()  # a leaves the group: b's next round gives it the leadership
        started.remove(a)
        took = wait_until(lambda: (m := rebalance_of(b.url))["leader_name"] == b.url and m, timeout_s=60,
                          message=lambda: f"b takes the leadership, in its metrics: {rebalance_of(b.url)}")
        assert took["epoch"] > standby["epoch"]
        assert took["completed_rebalances_total"] > standby["completed_rebalances_total"]
        assert took["rebalancing"] == 0 and took["time_since_last_rebalance_ms"] < 60_000
    finally:
        for d in reversed(started):
            d.stop()
