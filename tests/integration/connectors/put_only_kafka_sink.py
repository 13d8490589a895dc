"""The built-in Kafka sink without its direct path, so tests drive its ``put(records)`` path."""

from __future__ import annotations

from sparkcat.connectors.kafka_sink import KafkaSinkConnector, KafkaSinkTask


class PutOnlyKafkaSinkTask(KafkaSinkTask):
    """The runtime sees no ``put_messages`` and hands this task SinkRecords."""

    put_messages = None  # type: ignore[assignment]


class PutOnlyKafkaSinkConnector(KafkaSinkConnector):
    def task_class(self):
        return PutOnlyKafkaSinkTask
