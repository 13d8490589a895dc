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

        unfit = {**base, "sink.file": str(tmp_path / "unfit.jsonl"), "transforms": "x",
                 "transforms.x.type": T + "ExtractField$Value", "transforms.x.field": "nope"}
        herder.put_connector_config("unfit", unfit)
        failed = wait_until(lambda: (t := status_of(driver, "unfit")["tasks"]) and t[0]["state"] == "FAILED" and t[0],
                            message="unfit's task FAILED")
        assert "nope is not a valid field name" in failed.get("trace", "")
        # It stays FAILED, as a Connect task whose start failed, while the other connector goes on (not retried
        # every pass): many passes later, its status is the same and it wrote nothing.
        seen = len(file_lines(out))
        wait_until(lambda: len(file_lines(out)) >= seen + 10, message="the other connector going on")
        status = status_of(driver, "unfit")
        assert [t["state"] for t in status["tasks"]] == ["FAILED"] and status["connector"]["state"] == "RUNNING"
        assert file_lines(tmp_path / "unfit.jsonl") == []
        herder.put_connector_config("unfit", {**unfit, "transforms.x.field": "value"})  # a fixed config runs
        wait_until(lambda: len(file_lines(tmp_path / "unfit.jsonl")) >= 5, message="the fixed connector's records")
    finally:
        driver.stop()
