"""A Java connector from ``plugin.path`` as sparkcat's runtime sees a connector: ``JavaSourceConnector``,
``JavaSinkConnector``.

The connector itself runs in the driver JVM (``org.sparkcat.connect.host.HostedConnector``: start, task configs,
stop, its ``ConnectorContext``); this adapter gives the lifecycle the ``Connector`` interface it drives for Python
connectors. Its tasks never run in Python: ``JavaSourceTask``/``JavaSinkTask`` only name them in plans; a source's
query reads through ``java_source`` and a sink's batches are written by ``java_sink`` (each a Java task on an
executor). What the connector asks through its context (``requestTaskReconfiguration``, ``raiseError``) is polled
from the JVM once a second and passed on.
"""

from __future__ import annotations

import json
import logging
import threading
from typing import Any

from sparkcat.api.connector import Connector, SinkConnector, SinkTask, SourceConnector, SourceTask
from sparkcat.errors import ConnectorError

__all__ = ["JavaSourceConnector", "JavaSourceTask", "JavaSinkConnector", "JavaSinkTask", "java_connector",
           "java_error"]

log = logging.getLogger(__name__)

CONTEXT_POLL_S = 1.0


def java_error(what: str, error: BaseException) -> BaseException:
    """A Java exception from py4j as a ConnectorError carrying the Java stack trace (what status shows)."""
    from py4j.protocol import Py4JJavaError

    if not isinstance(error, Py4JJavaError):
        return error
    java = error.java_exception
    return ConnectorError(f"{what}: {java.toString()}\n{_stack_trace(java)}")


def _stack_trace(java: Any) -> str:
    gateway_jvm = java._gateway.jvm
    out = gateway_jvm.java.io.StringWriter()
    java.printStackTrace(gateway_jvm.java.io.PrintWriter(out))
    return str(out.toString())


def _refuse_python_start(config: dict[str, str]) -> None:
    raise ConnectorError(f"{config.get('task.class')} is a Java task: it runs in the JVM, not in Python")


class JavaSourceTask(SourceTask):
    """Names a Java source connector's tasks in plans; they run in the JVM (``java_source``), never in Python."""

    def start(self, config: dict[str, str]) -> None:
        _refuse_python_start(config)


class JavaSinkTask(SinkTask):
    """Names a Java sink connector's tasks in plans; they run in the JVM (``java_sink``), never in Python."""

    def start(self, config: dict[str, str]) -> None:
        _refuse_python_start(config)

    def put(self, records: list) -> None:
        raise ConnectorError("a Java sink task runs in the JVM, not in Python")


def java_connector(java_class: str, connector_type: str, handle: Any, host_spec: dict[str, Any]) -> Connector:
    """The adapter of a Java connector of ``connector_type`` (``"source"`` or ``"sink"``)."""
    cls = JavaSinkConnector if connector_type == "sink" else JavaSourceConnector
    return cls(java_class, handle, host_spec)


class _JavaConnector:
    """A started ``HostedConnector`` behind sparkcat's ``Connector`` interface (a ``plugins.HostedJavaConnector``)."""

    _python_task: type = JavaSourceTask
    context: Any = None

    def __init__(self, java_class: str, handle: Any, host_spec: dict[str, Any]) -> None:
        self.java_class = java_class
        self.host_spec = host_spec
        self._handle = handle
        self._task_class: str | None = None
        self._stopped = threading.Event()

    def version(self) -> str:
        return str(self._handle.version())

    def start(self, config: dict[str, str]) -> None:
        try:
            self._handle.start(dict(config))
        except Exception as e:
            raise java_error(f"Java connector {self.java_class} failed to start", e) from None
        threading.Thread(target=self._watch_context, name=f"sparkcat-java-{config.get('name', '')}",
                         daemon=True).start()

    def task_class(self) -> type:
        return self._python_task

    def java_task_class(self) -> str:
        """The Java class of the connector's tasks, as its task configs carry it in ``task.class``."""
        if self._task_class is None:
            raise ConnectorError(f"Java connector {self.java_class}: task configs were not generated yet")
        return self._task_class

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        try:
            configs = json.loads(self._handle.taskConfigs(max_tasks))
        except Exception as e:
            raise java_error(f"Java connector {self.java_class} failed to generate task configs", e) from None
        if configs:
            self._task_class = configs[0]["task.class"]
        return configs

    def stop(self) -> None:
        self._stopped.set()
        try:
            self._handle.stop()
        except Exception as e:
            raise java_error(f"Java connector {self.java_class} failed to stop", e) from None

    def _watch_context(self) -> None:
        """Pass on what the connector asked of its ``ConnectorContext`` until it stops."""
        while not self._stopped.wait(CONTEXT_POLL_S):
            try:
                if self._handle.takeReconfigurationRequest() and self.context is not None:
                    self.context.request_task_reconfiguration()
                raised = self._handle.takeRaisedError()
            except Exception as e:  # noqa: BLE001 - the JVM is going away with the driver
                log.debug("Java connector %s: its context is no longer reachable: %s", self.java_class, e)
                return
            if raised is not None and self.context is not None:
                self.context.raise_error(ConnectorError(f"Java connector {self.java_class} raised an error:\n{raised}"))


class JavaSourceConnector(_JavaConnector, SourceConnector):
    """A Java ``SourceConnector`` from plugin.path; its tasks run in executor JVMs (``java_source``)."""

    _python_task = JavaSourceTask


class JavaSinkConnector(_JavaConnector, SinkConnector):
    """A Java ``SinkConnector`` from plugin.path; its tasks run in executor JVMs (``java_sink``)."""

    _python_task = JavaSinkTask
