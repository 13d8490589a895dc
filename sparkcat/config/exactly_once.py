"""Preflight checks of ``exactly.once.support`` and ``transaction.boundary``, with Kafka Connect's messages.

Connect runs these in ``DistributedHerder.validateSourceConnectorConfig``: ``required`` asks the
worker (``exactly.once.source.support=enabled``) and the connector (``exactlyOnceSupport``);
``transaction.boundary=connector`` asks whether the connector can define transaction boundaries.
sparkcat's connector API has no ``TransactionContext``, so no connector can, and ``connector`` is
always refused with Connect's message for a connector that cannot.

sparkcat's additions: a source whose records go to a sink named by ``sink.*`` keys is exactly
once only if that sink says so (the same hook, asked of the sink); and one writing to Kafka needs
the worker's Kafka stores, because its source offsets must share each batch's transaction.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from sparkcat import plugins
from sparkcat.api.config import ConfigValue
from sparkcat.api.connector import Connector, ExactlyOnceSupport
from sparkcat.errors import ConfigError, NotFoundError
from sparkcat.policy.input_policy import InputPolicy

log = logging.getLogger(__name__)

WORKER_NOT_ENABLED = "This worker does not have exactly-once source support enabled."
NOT_DECLARED = (
    "The connector does not implement the API required for preflight validation of exactly-once source support. "
    "Please consult the documentation for the connector to determine whether it supports exactly-once semantics, "
    "and then consider reconfiguring the connector to use the value \"requested\" for this property (which will "
    "disable this preflight check and allow the connector to be created).")
UNSUPPORTED = "The connector does not support exactly-once semantics with the provided configuration."
UNEXPECTED = "An unexpected error occurred during validation"
CONNECTOR_BOUNDARIES = (
    "The connector does not support connector-defined transaction boundaries with the given configuration. "
    "Please reconfigure it to use a different transaction boundary definition.")
NO_KAFKA_STORES = (
    "exactly.once.support=required cannot be honoured by this worker: it has no bootstrap.servers, so source "
    "offsets live in local files, which cannot share a Kafka transaction with the records (sources on local "
    "stores are at-least-once, except into a sink named by sink.* that is exactly-once itself)")
SINK_UNSUPPORTED = "The sink named by sink.connector.class ({name}) does not support exactly-once semantics with " \
                   "the provided configuration."
SINK_NOT_DECLARED = "The sink named by sink.connector.class ({name}) does not declare whether it supports " \
                    "exactly-once semantics; set exactly.once.support=requested to run it at least once."


def _setting(config: Mapping[str, Any], key: str, default: str) -> str:
    return str(config.get(key) if config.get(key) is not None else default).strip().lower()


def declared_support(cls: type[Connector], config: Mapping[str, Any], not_declared: str = NOT_DECLARED) -> list[str]:
    """Connect's messages for a connector class that does not declare ``SUPPORTED`` for ``config`` (none if it does).

    ``not_declared``: the message when the class does not say (sinks word it without "source").
    """
    try:
        answer = cls().exactly_once_support(config)
    except Exception as e:  # a plugin's bug: reported on the key, as Connect does
        log.error("Failed while validating connector support for exactly-once semantics", exc_info=True)
        text = str(e).strip()
        return [f"{UNEXPECTED}: {text}" if text else f"{UNEXPECTED}; please see the worker logs for more details."]
    if answer is None:
        return [not_declared]
    if answer != ExactlyOnceSupport.SUPPORTED:
        return [UNSUPPORTED]
    return []


def _sink_support(sink: Mapping[str, str], policy: InputPolicy) -> list[str]:
    name = sink.get("connector.class", "")
    try:
        cls = plugins.connector_class(name, policy.plugin_packages)
    except (NotFoundError, ConfigError):
        return []  # reported on sink.connector.class already
    messages = declared_support(cls, sink)
    if messages == [NOT_DECLARED]:
        return [SINK_NOT_DECLARED.format(name=name)]
    if messages == [UNSUPPORTED]:
        return [SINK_UNSUPPORTED.format(name=name)]
    return messages


def source_errors(cls: type[Connector], config: Mapping[str, Any], sink: Mapping[str, str] | None,
                  policy: InputPolicy) -> list[ConfigValue]:
    """Errors of a source connector's ``exactly.once.support`` and ``transaction.boundary``.

    ``sink`` is the config of the sink its ``sink.*`` keys name (None: it writes to Kafka).
    Values the key's own validator rejects are left to it.
    """
    out = []
    if _setting(config, "transaction.boundary", "poll") == "connector":
        out.append(ConfigValue("transaction.boundary", config.get("transaction.boundary"),
                               errors=[CONNECTOR_BOUNDARIES]))
    if _setting(config, "exactly.once.support", "requested") != "required":
        return out
    messages = [] if policy.exactly_once_source else [WORKER_NOT_ENABLED]
    messages += declared_support(cls, config)
    if sink is not None:
        messages += _sink_support(sink, policy)
    elif not policy.kafka_stores:
        messages.append(NO_KAFKA_STORES)
    if messages:
        out.append(ConfigValue("exactly.once.support", config.get("exactly.once.support"), errors=messages))
    return out
