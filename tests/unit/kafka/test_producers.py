"""Producing through a full local queue: every record is queued once, in order (sparkcat/kafka/producers.py)."""

from __future__ import annotations

import pytest

from sparkcat.kafka.producers import Deliveries, produce_all


class QueueOf:
    """A producer whose local queue holds ``room`` records until ``poll`` delivers them."""

    def __init__(self, room: int) -> None:
        self.room, self.queued, self.delivered, self.polls = room, [], [], 0

    def produce(self, topic, value, key, partition=-1, on_delivery=None, timestamp=0):
        if len(self.queued) >= self.room:
            raise BufferError("Local: Queue full")
        self.queued.append((topic, value, key, partition, timestamp))

    def poll(self, timeout):
        self.polls += 1
        self.delivered += self.queued
        self.queued = []


def test_a_full_queue_waits_for_deliveries_and_resumes_at_the_record_that_did_not_fit():
    producer = QueueOf(room=3)
    values = [b"v%d" % i for i in range(10)]
    produce_all(producer, "t", values, [None] * 10, timestamps=list(range(10)))
    sent = producer.delivered + producer.queued
    assert [v for _, v, _, _, _ in sent] == values
    assert [ts for *_, ts in sent] == list(range(10))
    assert producer.polls == 3


def test_one_topic_per_record_and_a_fixed_partition():
    producer = QueueOf(room=100)
    produce_all(producer, ["a", "b"], [b"1", b"2"], [b"k1", None], partition=0)
    assert producer.queued == [("a", b"1", b"k1", 0, 0), ("b", b"2", None, 0, 0)]


def test_the_first_delivery_error_fails_the_batch():
    deliveries = Deliveries()
    deliveries(None, "ok")
    deliveries("broker down", None)
    deliveries("later", None)
    with pytest.raises(RuntimeError, match="broker down"):
        deliveries.raise_error()


def test_transactional_config_uses_connects_id_and_a_transaction_timeout_librdkafka_accepts():
    from confluent_kafka import Producer

    from sparkcat.kafka.producers import task_transactional_id, transactional_config
    assert task_transactional_id("connect-cluster", "my-conn", 2) == "connect-cluster-my-conn-2"
    conf = transactional_config({"message.timeout.ms": "120000", "enable.idempotence": "false"}, "g-c-0")
    assert conf["transactional.id"] == "g-c-0" and conf["enable.idempotence"] == "true"
    assert int(conf["transaction.timeout.ms"]) >= 120000
    assert transactional_config({"message.timeout.ms": "300000"}, "x")["transaction.timeout.ms"] == "300000"
    Producer({**conf, "bootstrap.servers": "127.0.0.1:1"})  # librdkafka refuses message > transaction timeout
