"""Starts a connector instance on the driver (Connect's ``WorkerConnector`` half that runs the ``Connector``).

From a validated config: the instance started with its placeholders resolved, its task configs completed
as Connect's Worker completes them (secrets back as placeholders), and, for a source with ``sink.*`` keys,
the task configs of the sink its records go to.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from sparkcat import plugins
from sparkcat.api.connector import Connector, ConnectorContext
from sparkcat.config.connector import ConnectorSettings
from sparkcat.config.validation import embedded_sink_config, java_connector_refusal, validate_connector_config
from sparkcat.errors import ConfigError, ConnectorError
from sparkcat.policy.config_providers import reverse_transform
from sparkcat.runtime.execution.plan_builder import EmbeddedSink, class_path
from sparkcat.runtime.execution.reconfiguration import with_task_class
from sparkcat.runtime.execution.services import ExecutionServices

log = logging.getLogger(__name__)


class TooManyTasksError(ConnectorError):
    """The connector generated more task configs than ``tasks.max`` (Connect's ``TooManyTasksException``)."""

    def __init__(self, name: str, generated: int, tasks_max: int):
        super().__init__(
            f"The connector {name} has generated {generated} tasks, which is greater than {tasks_max}, the maximum "
            "number of tasks it is configured to create. This behaviour should be considered a bug and is "
            "disallowed. If necessary, it can be permitted by reconfiguring the connector with 'tasks.max.enforce' "
            "set to false; however, this option will be removed in a future release of Kafka Connect.")


@dataclass
class StartedConnector:
    instance: Connector
    task_configs: list[dict[str, str]]
    sink: EmbeddedSink | None


def start_connector(name: str, config: dict[str, str], settings: ConnectorSettings, services: ExecutionServices,
                    context: ConnectorContext) -> StartedConnector:
    """Validate ``config``, start its connector and generate its task configs; raises what went wrong."""
    refusal = java_connector_refusal(config, services.policy)
    if refusal is not None:  # never the built-in port of a Java name in its place
        raise ConfigError(refusal)
    validate_connector_config(config, services.policy).raise_if_invalid(f"connector {name}")
    resolved = services.resolved_config(config, f"connector {name}", name)
    instance = _new_instance(config["connector.class"], services)
    instance.initialize(context)
    instance.start(dict(resolved))
    try:
        configs = task_configs(name, instance, config, resolved, settings)
        sink = embedded_sink(name, config, len(configs), services)
        if plugins.connector_type(type(instance)) == "source" and sink is None and not services.worker.uses_kafka:
            raise RuntimeError(f"connector {name} writes to Kafka but no bootstrap.servers is configured; "
                               f"set bootstrap.servers or name a sink with sink.connector.class")
    except Exception:
        _stop_after_failed_start(name, instance)
        raise
    return StartedConnector(instance, configs, sink)


def _new_instance(name: str, services: ExecutionServices) -> Connector:
    """A new connector of class ``name``: a Java one from plugin.path (in the driver JVM) when it names one."""
    if services.policy.java_connector(name) is not None:
        return services.policy.java_plugins.new_connector(name)
    return plugins.connector_class(name, services.policy.plugin_packages)()


def task_configs(name: str, instance: Connector, config: dict[str, str], resolved: dict[str, str],
                 settings: ConnectorSettings) -> list[dict[str, str]]:
    """The connector's task configs now, completed as Connect's Worker does, secrets back as placeholders.

    More of them than ``tasks.max`` fail the connector (TooManyTasksError), as Connect 3.8+ does (KIP-1004);
    with ``tasks.max.enforce=false`` they all run, with a warning.
    """
    generated = [with_task_class(c, instance, config) for c in instance.task_configs(settings.tasks_max)]
    if len(generated) > settings.tasks_max:
        if settings.tasks_max_enforce:
            raise TooManyTasksError(name, len(generated), settings.tasks_max)
        log.warning("Connector %s generated %d task configs, more than tasks.max=%d; all of them run because "
                    "tasks.max.enforce=false (deprecated)", name, len(generated), settings.tasks_max)
    return reverse_transform(generated, config, resolved)


def embedded_sink(name: str, config: dict[str, str], tasks: int, services: ExecutionServices) -> EmbeddedSink | None:
    """For a source with ``sink.*`` keys: the embedded sink's task configs, generated once."""
    sink_config = embedded_sink_config(config)
    if sink_config is None:
        return None
    cls = plugins.connector_class(sink_config["connector.class"], services.policy.plugin_packages)
    resolved = services.resolved_config(sink_config, f"connector {name}'s sink", name, config)
    sink = cls()
    sink.start(dict(resolved))
    configs = [dict(c) for c in sink.task_configs(max(1, tasks))]
    sink.stop()
    return EmbeddedSink(class_path(cls), class_path(sink.task_class()), reverse_transform(configs, sink_config, resolved))


def _stop_after_failed_start(name: str, instance: Connector) -> None:
    try:
        instance.stop()
    except Exception as e:  # noqa: BLE001 - the start's failure is the one reported; this one is logged
        log.warning("Connector %s: stopping it after its failed start raised too: %s", name, e)
