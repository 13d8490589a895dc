"""Store errors on a real broker are told apart by Kafka's error code: an unreachable cluster is retried
(StorageUnavailable), a refusal fails with its reason (a plain StorageError), not by the message text."""

from __future__ import annotations

import pytest

from sparkcat.errors import StorageError, StorageUnavailable
from sparkcat.storage.kafka.log import KafkaLog
from tests.broker import free_port
from tests.kafka_helpers import create_topic

pytestmark = pytest.mark.integration


def test_a_record_the_broker_refuses_is_a_plain_storage_error(broker, unique_name):
    topic = f"{unique_name}-small"
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1, config={"max.message.bytes": "1000"})])[topic].result(30)
    log = KafkaLog(broker.bootstrap, topic, timeout_s=10)
    try:
        with pytest.raises(StorageError) as refused:
            log.append([("k", b"x" * 5000)])
        assert not isinstance(refused.value, StorageUnavailable), refused.value
        assert topic in str(refused.value) and "append failed" in str(refused.value)
    finally:
        log.close()


def test_an_unreachable_cluster_is_storage_unavailable(unique_name):
    log = KafkaLog(f"127.0.0.1:{free_port()}", f"{unique_name}-nowhere", timeout_s=3)
    try:
        with pytest.raises(StorageUnavailable):
            log.read(0)
    finally:
        log.close()


def test_a_readable_log_reads(broker, unique_name):
    topic = f"{unique_name}-ok"
    create_topic(broker.bootstrap, topic)
    log = KafkaLog(broker.bootstrap, topic, timeout_s=10)
    try:
        log.append([("k", b"v")])
        assert [(r.key, r.value) for r in log.read(0)] == [("k", b"v")]
    finally:
        log.close()
