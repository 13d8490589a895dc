"""The built-in Kafka sink without its Arrow fast path, so tests drive its ``put(records)`` path."""

from __future__ import annotations

from sparkcat.connectors.kafka_sink import KafkaSinkConnector, KafkaSinkTask


class PutOnlyKafkaSinkTask(KafkaSinkTask):
    """The runtime sees no ``put_arrow`` and hands this task SinkRecords."""

    put_arrow = None  # type: ignore[assignment]


class PutOnlyKafkaSinkConnector(KafkaSinkConnector):
    def task_class(self):
        return PutOnlyKafkaSinkTask
