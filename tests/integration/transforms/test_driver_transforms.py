"""Transforms through the driver as a user meets them: put a config, read the data and the status."""

from __future__ import annotations

import json

import pytest

from sparkcat.errors import ConfigError
from tests.integration.runtime.test_driver import file_lines, local_worker, start_driver, status_of
from tests.kafka_helpers import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

T = "org.apache.kafka.connect.transforms."


def test_driver_runs_a_chain_refuses_a_bad_one_and_fails_one_that_cannot_apply(spark, tmp_path):
    driver = start_driver(spark, local_worker(tmp_path))
    out = tmp_path / "out.jsonl"
    base = {"connector.class": "increment", "increments": "1", "records.per.poll": "5", "trigger.interval.ms": "200",
            "sink.connector.class": "file-sink", "sink.file": str(out)}
    herder = driver.herder
    try:
        with pytest.raises(ConfigError, match='Missing required configuration "transforms.r.regex"'):
            herder.put_connector_config("bad", {**base, "transforms": "r", "transforms.r.type": T + "RegexRouter"})

        herder.put_connector_config("masked", {**base, "transforms": "m", "transforms.m.type": T + "MaskField$Value",
                                               "transforms.m.fields": "value"})
        wait_until(lambda: len(file_lines(out)) >= 5, message="masked records")
        assert all(json.loads(line)["value"] == 0 for line in file_lines(out))

        herder.put_connector_config("unfit", {**base, "sink.file": str(tmp_path / "unfit.jsonl"), "transforms": "x",
                                              "transforms.x.type": T + "ExtractField$Value",
                                              "transforms.x.field": "nope"})
        # The FAILED status read is the one checked: a failed query start is retried on a later pass,
        # which reports the connector RUNNING again while it tries (Reconciler._running).
        failed = wait_until(lambda: (c := status_of(driver, "unfit")["connector"])["state"] == "FAILED" and c,
                            message="unfit FAILED")
        assert "nope is not a valid field name" in failed.get("trace", "")
        assert file_lines(tmp_path / "unfit.jsonl") == []
    finally:
        driver.stop()
