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


class Refusing(QueueOf):
    """Refuses in ``produce`` every value in ``refused`` (as librdkafka does over its message.max.bytes)."""

    def __init__(self, refused: set[bytes], fatal: bool = False) -> None:
        super().__init__(room=100)
        self.refused, self.fatal, self.callbacks = refused, fatal, []

    def produce(self, topic, value, key, partition=-1, on_delivery=None, timestamp=0, headers=None):
        from confluent_kafka import KafkaError, KafkaException
        if value in self.refused:
            raise KafkaException(KafkaError(KafkaError.MSG_SIZE_TOO_LARGE, "too large", fatal=self.fatal))
        self.callbacks.append(on_delivery)
        super().produce(topic, value, key, partition, on_delivery, timestamp)


def test_a_record_refused_by_produce_goes_to_on_error_and_the_next_ones_are_produced():
    producer = Refusing({b"2"})
    refused = []
    produce_all(producer, "t", [b"1", b"2", b"3"], [None] * 3, on_error=lambda i, e: refused.append((i, str(e))))
    assert [v for _, v, *_ in producer.queued] == [b"1", b"3"]
    assert refused[0][0] == 1 and "MSG_SIZE_TOO_LARGE" in refused[0][1]
    from confluent_kafka import KafkaException
    with pytest.raises(KafkaException):  # without on_error it is raised, as before
        produce_all(Refusing({b"2"}), "t", [b"1", b"2"], [None] * 2)
    with pytest.raises(KafkaException):  # a fatal error is the producer's, not the record's
        produce_all(Refusing({b"2"}, fatal=True), "t", [b"1", b"2"], [None] * 2, on_error=lambda i, e: None)


def test_one_delivery_callback_per_record_when_given_a_sequence():
    producer = Refusing(set())
    callbacks = [object(), object()]
    produce_all(producer, "t", [b"1", b"2"], [None] * 2, on_delivery=callbacks)
    assert producer.callbacks == callbacks
    shared = producer.callbacks.clear() or (lambda err, msg: None)
    produce_all(producer, "t", [b"1", b"2"], [None] * 2, on_delivery=shared, headers=[None, [("h", b"v")]])
    assert producer.callbacks == [shared, shared]
