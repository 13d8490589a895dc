"""``errors.tolerance`` covers a source connector's transforms, as Connect's covers its TRANSFORMATION stage.

A real broker, the driver and Spark: a ``file-source`` reads the lines ``1 2 x 4``, each cast to ``int32``
(``Cast$Value``), which Spark's cast refuses for ``x``. With ``errors.tolerance=all`` the other three reach the
topic, ``x`` is skipped, logged with its source partition and offset and counted in the task's error metrics,
the task stays RUNNING and the stored source offset passes it. With ``none`` the task FAILS with Connect's
"Tolerance exceeded in error handler", naming the record. Both whether the source writes exactly once or at
least once (``exactly.once.source.support``): Connect tolerates a transform's error either way.
"""

from __future__ import annotations

import json
import logging

import pytest

from sparkcat.bootstrap import Driver
from sparkcat.config.worker import WorkerConfig
from tests.kafka_helpers import create_topic, read_topic, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

CAST = {"transforms": "cast", "transforms.cast.type": "org.apache.kafka.connect.transforms.Cast$Value",
        "transforms.cast.spec": "int32", "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false", "trigger.interval.ms": "300"}
LINES = ["1", "2", "x", "4"]  # "x" ends at byte 6 of the file: its source offset is {"position": 6}


@pytest.mark.parametrize("exactly_once", ["enabled", "disabled"])
def test_a_source_record_whose_transform_fails_is_skipped_or_fails_the_task(spark, broker, tmp_path, unique_name,
                                                                           caplog, exactly_once):
    source = tmp_path / "in.txt"
    source.write_text("".join(line + "\n" for line in LINES), encoding="ascii")
    tolerant, strict = f"{unique_name}-all", f"{unique_name}-none"
    create_topic(broker.bootstrap, tolerant)
    create_topic(broker.bootstrap, strict)
    worker = WorkerConfig(state_dir=str(tmp_path / "state"), bootstrap_servers=broker.bootstrap,
                          config_topic=f"{unique_name}-configs", offset_topic=f"{unique_name}-offsets",
                          status_topic=f"{unique_name}-status", file_allowed_dirs=[str(tmp_path)],
                          exactly_once_source_support=exactly_once)
    driver = Driver(spark, worker, rest=False, watch_pipelines=False)
    caplog.set_level(logging.ERROR, logger="sparkcat.spark.executor.error_handling")
    driver.start()
    try:
        put = driver.herder.put_connector_config
        put("cast-all", {"connector.class": "file-source", "file": str(source), "topic": tolerant, **CAST,
                         "errors.tolerance": "all", "errors.log.enable": "true",
                         "errors.log.include.messages": "true"})
        put("cast-none", {"connector.class": "file-source", "file": str(source), "topic": strict, **CAST})
        path = json.dumps(str(source))
        where = f'sourcePartition={{"filename":{path}}}, sourceOffset={{"position":6}}'

        wait_until(lambda: len(read_topic(broker.bootstrap, tolerant)) == 3,
                   message=lambda: f"the 3 good records: {driver.herder.connector_status('cast-all')}")
        assert [v for *_, v in sorted(read_topic(broker.bootstrap, tolerant))] == [b"1", b"2", b"4"]
        status = driver.herder.connector_status("cast-all")
        assert [t["state"] for t in status["tasks"]] == ["RUNNING"], status

        def position() -> dict | None:
            return next((o for _, o in driver.stores.offsets.partitions("cast-all")), None)

        wait_until(lambda: position() == {"position": 8}, message=lambda: f"past the skipped record: {position()}")
        errors = dict(driver.herder.connector_progress())["cast-all"].task_errors[0]
        assert (errors.record_failures, errors.records_skipped, errors.errors_logged) == (1, 1, 1)
        logged = [r.getMessage() for r in caplog.records if "cast-all" in r.getMessage()]
        assert any("Executing stage 'TRANSFORMATION' with class 'org.apache.kafka.connect.transforms.Cast$Value'"
                   in m and where in m for m in logged), logged

        def strict_task() -> dict:
            return driver.herder.connector_status("cast-none")["tasks"][0]

        wait_until(lambda: strict_task()["state"] == "FAILED", message=lambda: f"cast-none FAILED: {strict_task()}")
        trace = strict_task()["trace"]
        assert "Tolerance exceeded in error handler" in trace, trace
        assert f"where source record is {{{where}, topic='{strict}'}}" in trace, trace
        assert "CAST_INVALID_INPUT" in trace, trace
    finally:
        driver.stop()
