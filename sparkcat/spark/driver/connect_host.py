"""Kafka Connect's Java plugins from ``plugin.path``, found and described by Connect's own classes in the driver JVM.

The host (``jvm/connect-host``: ``org.sparkcat.connect.host.ConnectHost`` over Apache Kafka's connect-runtime
4.1.1) is loaded from ``.jars/connect-host`` in a class loader of its own whose parent is the JVM's platform
loader: connect-runtime needs kafka-clients 4.1.1 and Spark's Kafka connector brings 3.9.2, so neither sees the
other's. Inside, Connect's ``Plugins`` gives every plugin location its own isolated class loader, as a Connect
worker does. The host is made by ``org.sparkcat.connect.ConnectHosts`` (``jvm/sparkcat``) from a host spec (its
jars and worker keys), which the executors get with each Java source task's batch and make their own host from
(the driver's own serves its local-mode tasks). Everything crosses py4j as JDK types or JSON in the shapes of
Connect's REST entities.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sparkcat.errors import ConfigError

log = logging.getLogger(__name__)

HOST_CLASS = "org.sparkcat.connect.host.ConnectHost"


def host_jars_dir() -> Path:
    """Where ``scripts/jars.sh`` put the host and connect-runtime's jars (``SPARKCAT_CONNECT_HOST_DIR`` overrides)."""
    given = os.environ.get("SPARKCAT_CONNECT_HOST_DIR")
    return Path(given) if given else Path(__file__).resolve().parents[3] / ".jars" / "connect-host"


class JavaPlugins:
    """The Java connectors on ``plugin.path``, through one ``ConnectHost`` in the driver JVM (a ``JavaPluginCatalog``).

    Connect's ``Plugins`` scans ``plugin.path`` once (``plugin.discovery``: scanning every jar can take seconds,
    ``service_load`` reads manifests only), on a thread of its own from the driver's start; the first question
    waits for it. A plugin added later is seen after a driver restart, as on Connect.
    """

    SCAN_TIMEOUT_S = 300.0

    def __init__(self, spark: Any, plugin_path: Sequence[str], discovery: str, jars_dir: Path | None = None,
                 topic_creation: bool = True):
        jars = _host_jars(jars_dir or host_jars_dir())  # not built: the driver refuses to start, naming the key
        props = {"plugin.path": ",".join(str(Path(p).resolve()) for p in plugin_path), "plugin.discovery": discovery,
                 # the worker's KIP-158 switch: Connect's validation and TopicCreation in the host read it
                 "topic.creation.enable": str(topic_creation).lower()}
        #: What an executor makes its own host from (``ConnectHosts.host``): the same jars and worker keys.
        self.host_spec = {"jars": [str(j) for j in jars], "worker": props}
        self._types: dict[str, str | None] = {}
        self._host: Any = None
        self._error: BaseException | None = None
        self._ready = threading.Event()
        threading.Thread(target=self._scan, args=(spark, props, list(plugin_path)),
                         name="sparkcat-plugin-path", daemon=True).start()

    def _scan(self, spark: Any, props: dict[str, str], plugin_path: list[str]) -> None:
        began = time.monotonic()
        try:
            self._host = spark.sparkContext._jvm.org.sparkcat.connect.ConnectHosts.host(
                json.dumps(self.host_spec, sort_keys=True))
            count = len(json.loads(self._host.plugins(True)))
            log.info("plugin.path: %d Java connector(s) found in %s (scanned in %.1f s, plugin.discovery=%s)", count,
                     ", ".join(plugin_path), time.monotonic() - began, props["plugin.discovery"])
        except Exception as e:  # noqa: BLE001 - every later question reports it
            self._error = e
            log.error("plugin.path: Kafka Connect's plugin scan failed: %s", e)
        finally:
            self._ready.set()

    def _ready_host(self) -> Any:
        if not self._ready.wait(self.SCAN_TIMEOUT_S):
            raise ConfigError(f"plugin.path: the plugin scan did not finish within {self.SCAN_TIMEOUT_S:.0f} s",
                              {"plugin.path": ["scan still running"]})
        if self._error is not None:
            raise ConfigError(f"plugin.path: Kafka Connect's plugin scan failed: {self._error}",
                              {"plugin.path": [str(self._error)]})
        return self._host

    def connector_type(self, name: str) -> str | None:
        """``"source"`` or ``"sink"`` when ``name`` (a class name or Connect's alias) is a connector on plugin.path."""
        name = name.strip()
        if not name or ":" in name:  # sparkcat's module:Class paths are never Java classes
            return None
        if name not in self._types:
            self._types[name] = self._ready_host().connectorType(name)
        return self._types[name]

    def plugin_infos(self, connectors_only: bool = True) -> list[dict[str, Any]]:
        return json.loads(self._ready_host().plugins(connectors_only))

    def plugin_config(self, name: str) -> list[dict[str, Any]]:
        host = self._ready_host()
        return json.loads(self._call("describe", name, lambda: host.pluginConfig(name)))

    def validate(self, config: Mapping[str, str], exactly_once: bool = False) -> dict[str, Any]:
        host, name = self._ready_host(), str(config.get("connector.class") or "")
        return json.loads(self._call("validate", name, lambda: host.validate(dict(config), exactly_once)))

    def new_connector(self, name: str) -> Any:
        """A new, unstarted instance of the Java connector ``name`` (``java_connectors``' adapters)."""
        from sparkcat.spark.driver.java_connectors import java_connector

        host = self._ready_host()
        kind = self.connector_type(name) or "source"
        return java_connector(name, kind, self._call("load", name, lambda: host.startConnector(name)), self.host_spec)

    @staticmethod
    def _call(what: str, name: str, call: Any) -> str:
        """A host call; a Java exception becomes a ConfigError with the Java message (the JVM's trace is logged)."""
        from py4j.protocol import Py4JJavaError

        try:
            return call()
        except Py4JJavaError as e:
            message = str(e.java_exception.getMessage() or e.java_exception.toString())
            log.warning("plugin.path: could not %s %s: %s", what, name, e.java_exception.toString())
            raise ConfigError(f"Java connector {name}: {message}", {"connector.class": [message]}) from None


def _host_jars(jars_dir: Path) -> list[Path]:
    jars = sorted(jars_dir.glob("*.jar"))
    if not jars:
        raise ConfigError(f"plugin.path is set but the Kafka Connect host is not built: no jars in {jars_dir} "
                          f"(scripts/jars.sh builds it; tests/run.sh and spark-submit.sh run it)",
                          {"plugin.path": ["the Kafka Connect host is not built"]})
    return jars
