"""Java connector plugins for the plugin.path tests, as a Connect user installs them: a directory per plugin.

``connect_file_plugin`` copies Apache Kafka's connect-file 4.1.1 (resolved by tests/run.sh into .jars/connect),
``connect_mirror_plugin`` MirrorMaker 2's connect-mirror and connect-mirror-client 4.1.1 (from there too);
``build_increment_plugin`` compiles the source-connector tutorial's ``IncrementSourceConnector`` (kept in
tests/plugins/java/increment) against connect-api 4.1.1 with the JDK's javac, into a jar with its ServiceLoader
manifest, so every ``plugin.discovery`` mode finds it.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.broker import REPO

INCREMENT_SOURCE = REPO / "tests" / "plugins" / "java" / "increment"
INCREMENT_CONNECTOR = "org.sparkcat.tests.increment.IncrementSourceConnector"


def connect_file_plugin(plugin_path: Path) -> Path:
    """``plugin_path``/connect-file holding connect-file 4.1.1; returns ``plugin_path``."""
    jars = sorted((REPO / ".jars" / "connect").glob("connect-file-*.jar"))
    assert jars, "tests/run.sh resolves Kafka Connect's jars into .jars/connect"
    plugin = plugin_path / "connect-file"
    plugin.mkdir(parents=True, exist_ok=True)
    shutil.copy(jars[0], plugin)
    return plugin_path


def connect_mirror_plugin(plugin_path: Path) -> Path:
    """``plugin_path``/connect-mirror holding connect-mirror and connect-mirror-client 4.1.1; returns ``plugin_path``.

    Only the plugin's own jars: connect-api, connect-runtime (MirrorMaker's connectors use its ``TopicAdmin`` and
    ``ConnectorConfig``) and kafka-clients come from the runtime, as in a Connect worker's plugin directory.
    """
    plugin = plugin_path / "connect-mirror"
    plugin.mkdir(parents=True, exist_ok=True)
    for name in ("connect-mirror", "connect-mirror-client"):
        jars = sorted((REPO / ".jars" / "connect").glob(f"{name}-[0-9]*.jar"))
        assert jars, "tests/run.sh resolves Kafka Connect's jars into .jars/connect"
        shutil.copy(jars[0], plugin)
    return plugin_path


def build_increment_plugin(plugin_path: Path, work: Path) -> Path:
    """``plugin_path``/increment/increment.jar, compiled from the tutorial's sources; returns ``plugin_path``."""
    api = sorted((REPO / ".jars" / "connect-host").glob("*.jar"))
    assert api, "scripts/jars.sh builds the Connect host (and its connect-api) into .jars/connect-host"
    classes = work / "increment-classes"
    classes.mkdir(parents=True, exist_ok=True)
    sources = [str(p) for p in sorted(INCREMENT_SOURCE.rglob("*.java"))]
    subprocess.run(["javac", "--release", "17", "-nowarn", "-cp", ":".join(str(j) for j in api), "-d", str(classes),
                    *sources], check=True, capture_output=True, text=True)
    shutil.copytree(INCREMENT_SOURCE / "META-INF", classes / "META-INF", dirs_exist_ok=True)
    plugin = plugin_path / "increment"
    plugin.mkdir(parents=True, exist_ok=True)
    subprocess.run(["jar", "--create", "--file", str(plugin / "increment.jar"), "-C", str(classes), "."],
                   check=True, capture_output=True, text=True)
    return plugin_path
