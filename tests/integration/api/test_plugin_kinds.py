"""A plugin outside sparkcat writes through each of the three sink kinds of ``sparkcat.api``, end to end.

``tests/plugins/line_sinks.py`` imports nothing but ``sparkcat.api`` and pyspark: a record sink
(``SinkTask.put`` on executors), a whole-batch writer (``BatchWriter`` on the driver) and a native
sink (``NativeWrite``: Spark's own file sink). Each reads the same topic on one driver, delivers
every record once, and commits Connect's offsets for what it wrote.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparkcat.bootstrap import Driver
from sparkcat.config.worker import WorkerConfig
from tests.kafka_helpers import create_topic, produce, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

KINDS = {"record": "RecordLineSink", "batch": "BatchLineSink", "native": "NativeLineSink"}


def _lines(kind: str, out: Path) -> list[str]:
    """Every line the sink of ``kind`` wrote so far (Spark's file sinks: only committed part files)."""
    if kind == "record":
        files = sorted(out.glob("task-*.txt"))
    elif kind == "batch":
        files = sorted(out.glob("batch-*/part-*"))
    else:
        files = sorted(out.glob("part-*.json"))
    lines = [line for f in files for line in f.read_text().splitlines() if line]
    return [json.loads(line)["line"] for line in lines] if kind == "native" else lines


def test_a_plugin_writes_through_each_sink_kind_of_the_api(spark, broker, tmp_path, unique_name):
    create_topic(broker.bootstrap, unique_name, partitions=2)
    worker = WorkerConfig(state_dir=str(tmp_path / "state"), file_allowed_dirs=[str(tmp_path)],
                          plugin_packages=["sparkcat.connectors", "tests.plugins"],
                          bootstrap_servers=broker.bootstrap, config_topic=f"{unique_name}-configs",
                          offset_topic=f"{unique_name}-offsets", status_topic=f"{unique_name}-status")
    driver = Driver(spark, worker, rest=False, watch_pipelines=False)
    driver.start()
    outs = {kind: tmp_path / kind for kind in KINDS}
    try:
        for kind, cls in KINDS.items():
            outs[kind].mkdir()
            driver.herder.put_connector_config(f"lines-{kind}", {
                "connector.class": f"tests.plugins.line_sinks:{cls}", "topics": unique_name, "tasks.max": "2",
                "out.dir": str(outs[kind]), "trigger.interval.ms": "300"})
        sent = [f"v{i}" for i in range(300)]
        for half in (sent[:150], sent[150:]):  # two rounds, so each sink commits more than one batch
            produce(broker.bootstrap, unique_name, [v.encode() for v in half])
            for kind in KINDS:
                wait_until(lambda: set(half) <= set(_lines(kind, outs[kind])), timeout_s=180,
                           message=lambda: f"{kind} sink: {len(_lines(kind, outs[kind]))} lines")
        for kind in KINDS:
            name = f"lines-{kind}"
            assert sorted(_lines(kind, outs[kind])) == sorted(sent), f"{kind} sink wrote a record twice"
            wait_until(lambda: sum(o["kafka_offset"] for _, o in driver.herder.connector_offsets(name)) == 300,
                       timeout_s=60, message=lambda: f"{name} offsets: {driver.herder.connector_offsets(name)}")
            status = driver.herder.connector_status(name)
            assert [t["state"] for t in status["tasks"]] == ["RUNNING", "RUNNING"], status
    finally:
        driver.stop()
