"""``POST /connectors/NAME/restart?includeTasks=true&onlyFailed=true`` on a real driver, Spark session and broker:
the restarted tasks' statuses, read as written (the status topic, in order), go FAILED -> RESTARTING -> RUNNING
and never back to FAILED when their new run does not fail: the old query's failure is not reported again.

Every task of the connector fails, so no query runs while they are FAILED and each pass of the herder looks at
them: the pass right after the request is accepted (RESTARTING written) still has the config state from before
the request came back from the config log.
"""

from __future__ import annotations

import json

import httpx
import pytest

from sparkcat.bootstrap import Driver
from sparkcat.config.worker import WorkerConfig
from tests.broker import free_port
from tests.kafka_helpers import read_topic, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

FAILING = "tests.integration.runtime.failing_connector:FailingSourceConnector"


def written_states(bootstrap: str, status_topic: str, key: str) -> list[str]:
    """Every state written under ``key`` in the status topic, in the order written (one key, one partition)."""
    return [json.loads(value)["state"] for _p, _o, k, value in sorted(read_topic(bootstrap, status_topic))
            if k == key.encode() and value is not None]


def position(http: httpx.Client, name: str, counter: int) -> int:
    offsets = http.get(f"/connectors/{name}/offsets").json()["offsets"]
    return max([o["offset"]["n"] for o in offsets if o["partition"] == {"counter": counter}], default=0)


def test_only_failed_restart_never_reports_the_old_failure_after_restarting(spark, broker, tmp_path, unique_name):
    port, marker = free_port(), tmp_path / "fail-now"
    marker.touch()
    status_topic = f"{unique_name}-status"
    worker = WorkerConfig(state_dir=str(tmp_path / "state"), bootstrap_servers=broker.bootstrap,
                          rest_host="127.0.0.1", rest_port=port, config_topic=f"{unique_name}-configs",
                          offset_topic=f"{unique_name}-offsets", status_topic=status_topic,
                          file_allowed_dirs=[str(tmp_path)],
                          plugin_packages=["sparkcat.connectors", "tests.integration.runtime"])
    driver = Driver(spark, worker, rest=True, watch_pipelines=False)
    driver.start()
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as http:
            created = http.put("/connectors/flaky/config", json={
                "connector.class": FAILING, "topic": f"{unique_name}-out", "tasks.max": "2", "fail.task": "-1", "fail.after": "20",
                "fail.while.file": str(marker), "trigger.interval.ms": "300",
                "value.converter": "org.apache.kafka.connect.storage.StringConverter"})
            assert created.status_code == 201, created.text

            def task_states() -> list[str]:
                return [t["state"] for t in http.get("/connectors/flaky/status").json()["tasks"]]

            wait_until(lambda: task_states() == ["FAILED", "FAILED"], message=lambda: f"tasks FAILED: {task_states()}")
            marker.unlink()  # the tasks' next run does not fail
            keys = [f"status-task-flaky-{t}" for t in (0, 1)]
            failed_writes = {k: len(written_states(broker.bootstrap, status_topic, k)) for k in keys}
            plan = http.post("/connectors/flaky/restart", params={"includeTasks": "true", "onlyFailed": "true"})
            assert plan.status_code == 202, plan.text
            assert [t["state"] for t in plan.json()["tasks"]] == ["RESTARTING", "RESTARTING"]
            assert plan.json()["connector"]["state"] == "RUNNING"
            # the restarted tasks run past the position they failed at: their new run did not fail
            wait_until(lambda: min(position(http, "flaky", t) for t in (0, 1)) > 40, timeout_s=120,
                       message=lambda: f"tasks past 40: {task_states()}")
            assert task_states() == ["RUNNING", "RUNNING"]
    finally:
        driver.stop()

    for key in keys:
        after = written_states(broker.bootstrap, status_topic, key)[failed_writes[key] - 1:]
        assert after[0] == "FAILED" and "RESTARTING" in after, (key, after)
        restarting = after.index("RESTARTING")
        assert "FAILED" not in after[restarting:], f"{key} went back to FAILED after RESTARTING: {after}"
        # then UNASSIGNED: the driver stopped
        assert after[restarting:restarting + 2] == ["RESTARTING", "RUNNING"], (key, after)
