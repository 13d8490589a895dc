"""KIP-297 on a real driver: a config provider value's ttl ends and the connector restarts with the new value.

A Python provider from ``plugin.packages`` (``tests.plugins.rotating_provider``) serves a tag with a 2 s ttl,
which an ``InsertField`` transform writes into every record. The tag changes on disk; the connector with
the default ``config.action.reload=restart`` restarts when the ttl ends and its records carry the new tag,
while one with ``none`` keeps writing the tag it started with.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from sparkcat.bootstrap import Driver
from sparkcat.config.worker import WorkerConfig
from tests.broker import free_port
from tests.kafka_helpers import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

OLD, NEW = "tag-before-rotation", "tag-after-rotation"


@pytest.fixture
def driver(spark, tmp_path) -> Iterator[Driver]:
    worker = WorkerConfig(state_dir=str(tmp_path / "state"), pipelines_dir=str(tmp_path / "pipelines"),
                          rest_host="127.0.0.1", rest_port=free_port(), group_id="config-reload-it",
                          plugin_packages=["sparkcat.connectors", "tests.plugins"],
                          file_allowed_dirs=[str(tmp_path)],
                          config_providers={"config.providers": "rot",
                                            "config.providers.rot.class":
                                                "tests.plugins.rotating_provider:RotatingProvider",
                                            "config.providers.rot.param.ttl.ms": "2000"})
    with Driver(spark, worker, rest=True, watch_pipelines=False) as running:
        yield running


def tags(out: Path) -> list[str]:
    """The tag of each record the file sink wrote so far, in order."""
    if not out.exists():
        return []
    return [json.loads(line)["tag"] for line in out.read_text().splitlines() if line.strip()]


def tagged(secret: Path, out: Path, **extra: str) -> dict[str, str]:
    return {"connector.class": "increment", "increments": "1", "records.per.poll": "5", "trigger.interval.ms": "200",
            "transforms": "tag", "transforms.tag.type": "InsertField$Value", "transforms.tag.static.field": "tag",
            "transforms.tag.static.value": f"${{rot:{secret}:tag}}",
            "sink.connector.class": "file-sink", "sink.file": str(out), **extra}


def test_a_ttl_restarts_the_connector_with_the_new_value_and_none_keeps_the_old(driver, tmp_path, caplog):
    caplog.set_level(logging.INFO)
    secret = tmp_path / "tag.properties"
    secret.write_text(f"tag={OLD}\n")
    reloads, keeps = tmp_path / "reloads.jsonl", tmp_path / "keeps.jsonl"
    with httpx.Client(base_url=f"http://127.0.0.1:{driver.worker.rest_port}", timeout=60) as http:
        for name, out, extra in (("reloads", reloads, {}), ("keeps", keeps, {"config.action.reload": "none"})):
            created = http.post("/connectors", json={"name": name, "config": tagged(secret, out, **extra)})
            assert created.status_code == 201, created.text
        wait_until(lambda: tags(reloads) and tags(keeps), timeout_s=180, message="both connectors' first records")
        assert set(tags(reloads)) == {OLD} == set(tags(keeps))

        secret.write_text(f"tag={NEW}\n")  # the provider's next get returns it: only a restart asks again
        wait_until(lambda: NEW in tags(reloads), timeout_s=180,
                   message=lambda: f"the reloading connector's records to carry the new tag: {set(tags(reloads))}")
        seen = tags(reloads)
        assert seen[:seen.index(NEW)] and set(seen[:seen.index(NEW)]) == {OLD}
        kept = len(tags(keeps))
        wait_until(lambda: len(tags(keeps)) >= kept + 10, timeout_s=120,
                   message="more records from the connector with config.action.reload=none")
        assert set(tags(keeps)) == {OLD}, "config.action.reload=none restarted the connector"

        assert http.get("/connectors/reloads/config").json()["transforms.tag.static.value"] == \
            f"${{rot:{secret}:tag}}"  # stored as the placeholder
        assert http.get("/connectors/reloads/status").json()["connector"]["state"] in ("RUNNING", "RESTARTING")

        assert http.delete("/connectors/reloads").status_code == 204  # its reload (scheduled anew) is cancelled
        wait_until(lambda: "reloads" not in driver.reconciler.lifecycles, timeout_s=120, message="reloads deleted")
        assert driver.reconciler.services.reloads.scheduled("reloads") == {}

    logged = [r.getMessage() for r in caplog.records]
    assert any("Scheduling a restart of connector reloads in 2000 ms" in m for m in logged)
    assert any(m.startswith("Restarting connector reloads and its tasks") for m in logged)
    assert not any("connector keeps" in m and ("Scheduling a restart" in m or "Restarting" in m) for m in logged)
    assert not [m for m in logged if OLD in m or NEW in m], "a provider value was logged"
