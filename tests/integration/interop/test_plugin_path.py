"""Java plugins on ``plugin.path``: listed, described and validated by Connect's own classes, as a real Connect worker
does, and refused (never replaced by a Python port) when a connector would run one.

The plugin is Apache Kafka's connect-file 4.1.1 jar in a plugin directory of its own, as a Connect user installs it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from sparkcat.bootstrap import Driver
from sparkcat.config.worker import WorkerConfig
from sparkcat.model.config_state import TargetState
from tests.broker import REPO, free_port
from tests.connect_worker import ConnectError, ConnectWorker
from tests.integration.interop.test_connect_topics import shared_topics
from tests.kafka_helpers import wait_until

pytestmark = pytest.mark.integration

FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
FILE_SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"


@pytest.fixture
def plugin_path(tmp_path: Path) -> Path:
    """A plugin.path holding connect-file 4.1.1 in a directory of its own (Connect's layout)."""
    jars = sorted((REPO / ".jars" / "connect").glob("connect-file-*.jar"))
    assert jars, "tests/run.sh resolves Kafka Connect's jars into .jars/connect"
    plugin = tmp_path / "plugins" / "connect-file"
    plugin.mkdir(parents=True)
    shutil.copy(jars[0], plugin)
    return tmp_path / "plugins"


@pytest.fixture
def driver(spark, tmp_path: Path, plugin_path: Path):
    # plugin.discovery as the test Connect worker has it (tests/connect_worker.py), so both find the same plugins
    worker = WorkerConfig(state_dir=str(tmp_path / "state"), rest_host="127.0.0.1", rest_port=free_port(),
                          file_allowed_dirs=[str(tmp_path)], plugin_path=[str(plugin_path)],
                          plugin_discovery="only_scan")
    driver = Driver(spark, worker, rest=True, watch_pipelines=False)
    driver.start()
    try:
        yield driver
    finally:
        driver.stop()


def test_java_connectors_are_listed_described_and_validated_as_a_connect_worker_does(
        driver, broker, tmp_path, unique_name):
    source_config = {"connector.class": FILE_SOURCE, "name": "fs", "file": str(tmp_path / "in.txt"), "topic": ""}
    sink_config = {"connector.class": FILE_SINK, "name": "sink", "topics": "t", "topics.regex": "t.*"}
    with httpx.Client(base_url=driver.url, timeout=120) as ours, \
            ConnectWorker(broker.bootstrap, unique_name, shared_topics(unique_name), tmp_path / "connect") as connect:
        listed = ours.get("/connector-plugins").json()
        java = [p for p in listed if p["class"] in (FILE_SOURCE, FILE_SINK)]
        assert java == [{"class": FILE_SOURCE, "type": "source", "version": "4.1.1"},
                        {"class": FILE_SINK, "type": "sink", "version": "4.1.1"}]  # once each: no Python port
        assert "sparkcat.connectors.increment:IncrementSourceConnector" in {p["class"] for p in listed}
        for plugin in ("FileStreamSourceConnector", FILE_SINK):
            assert ours.get(f"/connector-plugins/{plugin}/config").json() == \
                connect.request("GET", f"/connector-plugins/{plugin}/config")
        for config in (source_config, sink_config):
            path = f"/connector-plugins/{config['connector.class']}/config/validate"
            mine = ours.put(path, json=config)
            assert mine.status_code == 200, mine.text
            theirs = connect.request("PUT", path, config)
            assert mine.json()["error_count"] == theirs["error_count"] > 0
            assert mine.json() == theirs


def test_a_java_connector_is_never_run_as_the_python_port_of_its_name(driver, tmp_path):
    config = {"connector.class": FILE_SOURCE, "file": str(tmp_path / "in.txt"), "topic": "lines",
              "sink.connector.class": "file-sink", "sink.file": str(tmp_path / "out.txt")}
    with httpx.Client(base_url=driver.url, timeout=120) as ours:
        refused = ours.post("/connectors", json={"name": "fs", "config": config})
        assert refused.status_code == 400 and "Java source connector found on plugin.path" in refused.json()["message"]
        assert "sink.* keys" in refused.json()["message"]
        assert ours.get("/connectors").json() == []
    # A config that reaches the log anyway (written by a Kafka Connect cluster on the same topics) fails
    # with that reason instead of running the built-in port of the name.
    driver.stores.config.put_connector_config("from-connect", {**config, "name": "from-connect"},
                                              TargetState.STARTED)
    wait_until(lambda: (driver.stores.status.get("from-connect") or None) is not None
               and driver.stores.status.get("from-connect").state.value == "FAILED",
               timeout_s=120, message="the connector written by Connect to be FAILED")
    assert "Java source connector found on plugin.path" in driver.stores.status.get("from-connect").trace
    assert not (tmp_path / "out.txt").exists()


def test_kip_891_plugin_versions_are_checked_against_the_java_plugins_own_version(
        driver, broker, tmp_path, unique_name):
    config = {"connector.class": FILE_SOURCE, "name": "fs", "file": str(tmp_path / "in.txt"), "topic": "lines"}
    validate = f"/connector-plugins/{FILE_SOURCE}/config/validate"

    def version_errors(response: dict, key: str = "connector.plugin.version") -> list[str]:
        return next(c["value"]["errors"] for c in response["configs"] if c["value"]["name"] == key)

    string = {"key.converter": "org.apache.kafka.connect.storage.StringConverter",
              "key.converter.plugin.version": "[9,)"}
    router = {"transforms": "r", "transforms.r.type": "org.apache.kafka.connect.transforms.RegexRouter",
              "transforms.r.regex": "a", "transforms.r.replacement": "b", "transforms.r.plugin.version": "[9,)"}

    with httpx.Client(base_url=driver.url, timeout=120) as ours, \
            ConnectWorker(broker.bootstrap, unique_name, shared_topics(unique_name), tmp_path / "connect") as connect:
        accepted = ours.put(validate, json={**config, "connector.plugin.version": "4.1.1"}).json()
        assert accepted["error_count"] == 0 and version_errors(accepted) == []
        refused = ours.put(validate, json={**config, "connector.plugin.version": "[5.0,)"}).json()
        theirs = connect.request("PUT", validate, {**config, "connector.plugin.version": "[5.0,)"})
        assert version_errors(refused) == version_errors(theirs) == [
            f"Plugin {FILE_SOURCE} not found that matches the version range [5.0,), available versions: [4.1.1]"]
        for extra, keys in ((string, ("key.converter", "key.converter.plugin.version")),
                            (router, ("transforms.r.type", "transforms.r.plugin.version"))):
            mine = ours.put(validate, json={**config, **extra}).json()
            theirs = connect.request("PUT", validate, {**config, **extra})
            for key in keys:  # Connect's message on both keys, its copies of the plugin listed
                assert version_errors(mine, key) == version_errors(theirs, key) != [], key
        put = ours.put("/connectors/fs/config", json={**config, "connector.plugin.version": "[5.0,)"})
        assert put.status_code == 400 and "connector.plugin.version" in put.json()["message"]
        assert ours.get("/connectors/fs").status_code == 404  # nothing was written
        described = f"/connector-plugins/{FILE_SOURCE}/config"
        assert ours.get(described, params={"version": "4.1.1"}).json() == ours.get(described).json()
        for spec in ("[5.0,)", "[1.0"):
            mine = ours.get(described, params={"version": spec})
            with pytest.raises(ConnectError) as theirs_error:
                connect.request("GET", f"{described}?version={quote(spec)}")
            assert mine.status_code == theirs_error.value.status == 400
            assert mine.json()["message"] == json.loads(theirs_error.value.body)["message"]
