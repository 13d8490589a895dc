"""A sink connector's ``consumer.override.*`` keys that sparkcat cannot honour, refused with why.

A sink reads its topics with Spark's Kafka source (``spark/driver/kafka_input.py``), which sets some
consumer settings itself and refuses them as options (Spark's ``KafkaSourceProvider``:
``auto.offset.reset``, ``enable.auto.commit``, the deserializers, ``interceptor.classes``); sparkcat
also reads from the worker's cluster only. These keys were dropped on the way to Spark, so a connector
asking for them ran without them. ``group.id`` is honoured: it names the group sparkcat commits the
sink's offsets to (``kafka/sink_groups.py``), as Connect does.
"""

from __future__ import annotations

from collections.abc import Mapping

from sparkcat.api.config import ConfigValue

__all__ = ["REFUSED_CONSUMER_OVERRIDES", "consumer_override_errors"]

PREFIX = "consumer.override."

#: Consumer setting -> why a sink's override of it cannot be honoured.
REFUSED_CONSUMER_OVERRIDES = {
    "auto.offset.reset": "Spark's Kafka source refuses it: a sink starts each partition where its stored offsets "
                         "say, else at the earliest offset (Connect's default for sinks)",
    "enable.auto.commit": "Spark's Kafka source refuses it: sparkcat commits a sink's offsets itself after each "
                          "batch its tasks wrote, as Connect does",
    "key.deserializer": "Spark's Kafka source refuses it: keys are read as bytes and turned into data by the "
                        "connector's key.converter",
    "value.deserializer": "Spark's Kafka source refuses it: values are read as bytes and turned into data by the "
                          "connector's value.converter",
    "interceptor.classes": "Spark's Kafka source refuses consumer interceptors (they could change the records "
                           "it reads)",
    "bootstrap.servers": "a sink reads its topics from the worker's cluster (bootstrap.servers); reading another "
                         "cluster is not supported by sparkcat yet",
}


def consumer_override_errors(config: Mapping[str, object]) -> list[ConfigValue]:
    """An error for each ``consumer.override.*`` key of a sink connector that sparkcat cannot honour."""
    out = []
    for key, value in config.items():
        setting = str(key)[len(PREFIX):] if str(key).startswith(PREFIX) else None
        if setting in REFUSED_CONSUMER_OVERRIDES:
            out.append(ConfigValue(key, value, errors=[
                f"{key} cannot be honoured: {REFUSED_CONSUMER_OVERRIDES[setting]}; remove it"]))
    return out
