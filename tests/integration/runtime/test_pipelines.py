"""The driver applies pipelines/*.yaml at start and again when a file there changes."""

from __future__ import annotations

import pytest

from sparkcat.bootstrap import Driver
from sparkcat.config.worker import WorkerConfig
from tests.kafka_helpers import wait_until

pytestmark = pytest.mark.integration

SPEC = """
name: watched
config:
  connector.class: increment
  increments: [1, 2]
  tasks.max: {tasks}
  records.per.poll: 5
  sink:
    connector.class: file-sink
    file: ${{state.dir}}/out/watched.jsonl
"""


def test_spec_files_are_applied_at_start_and_on_change(spark, tmp_path):
    pipelines = tmp_path / "pipelines"
    pipelines.mkdir()
    (pipelines / "watched.yaml").write_text(SPEC.format(tasks=1))
    (pipelines / "broken.yaml").write_text("name: broken\nconfig:\n  connector.class: increment\n  incrementz: 1\n")
    worker = WorkerConfig(state_dir=str(tmp_path / "state"), pipelines_dir=str(pipelines),
                          file_allowed_dirs=[str(tmp_path)])
    driver = Driver(spark, worker, rest=False, watch_pipelines=True)
    driver.start()
    try:
        out = tmp_path / "state" / "out" / "watched.jsonl"
        wait_until(lambda: out.exists() and len(out.read_text().splitlines()) >= 10, message="first records")
        assert driver.herder.connectors() == ["watched"]  # the invalid spec was rejected, nothing written
        assert len(driver.herder.task_configs("watched")) == 1

        (pipelines / "watched.yaml").write_text(SPEC.format(tasks=2))
        wait_until(lambda: len(driver.herder.task_configs("watched")) == 2, message="tasks.max change applied")
        assert driver.herder.connector_config("watched")["tasks.max"] == "2"
    finally:
        driver.stop()
