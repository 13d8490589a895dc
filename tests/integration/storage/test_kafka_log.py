"""KafkaLog against a real Kafka-protocol broker (Apache Kafka, KRaft)."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from sparkcat.errors import FencedError, LogRewound, StorageError
from sparkcat.storage.kafka.log import KafkaLog
from sparkcat.storage.log import LogRecord
from tests.broker import free_port
from tests.kafka_helpers import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def _admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap})


def _topic_config(bootstrap: str, topic: str) -> dict[str, str]:
    """The topic's configuration as describe_configs reports it.

    A topic created a moment ago may be unknown to the broker's metadata for a few milliseconds.
    """
    admin = _admin(bootstrap)  # keep the client alive until its future resolves
    deadline = time.monotonic() + 10
    while True:
        future = admin.describe_configs([ConfigResource("topic", topic)])
        try:
            entries = next(iter(future.values())).result(timeout=10)
            return {name: entry.value for name, entry in entries.items()}
        except KafkaException as exc:
            if "UNKNOWN_TOPIC_OR_PART" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def _create(bootstrap: str, topic: str, partitions: int) -> None:
    admin = _admin(bootstrap)  # keep the client alive until its future resolves
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(timeout=10)


@pytest.fixture
def log(broker, unique_name):
    kafka_log = KafkaLog(broker.bootstrap, unique_name, timeout_s=10)
    yield kafka_log
    kafka_log.close()


def test_constructor_does_no_network_work():
    kafka_log = KafkaLog("127.0.0.1:1", "never-opened")
    assert not kafka_log._opened and kafka_log._producer is None and kafka_log._consumer is None
    kafka_log.close()


def test_creates_compacted_single_partition_topic(broker, log, unique_name):
    assert log.end_offset() == 0
    admin = _admin(broker.bootstrap)
    metadata = admin.list_topics(timeout=10)
    assert len(metadata.topics[unique_name].partitions) == 1
    assert _topic_config(broker.bootstrap, unique_name)["cleanup.policy"] == "compact"


def test_non_compacted_topic_when_asked(broker, unique_name):
    kafka_log = KafkaLog(broker.bootstrap, unique_name, compact=False, timeout_s=10)
    try:
        kafka_log.open()
        assert _topic_config(broker.bootstrap, unique_name).get("cleanup.policy") != "compact"
    finally:
        kafka_log.close()


def test_empty_topic_reads_without_waiting_for_the_timeout(broker, unique_name):
    # An empty log ends at offset 0: the read knows it has everything at once, instead of polling until
    # its timeout. With a 120 s timeout the difference cannot be mistaken for a slow machine.
    kafka_log = KafkaLog(broker.bootstrap, unique_name, timeout_s=120)
    try:
        started = time.monotonic()
        assert kafka_log.read() == []
        with pytest.raises(LogRewound):
            kafka_log.read(5)  # past the end of what is there: not a position any reader of this log holds
        assert time.monotonic() - started < 60, "an empty read waited for the log's timeout"
    finally:
        kafka_log.close()


def test_append_then_read_in_order_with_tombstones(log):
    log.append([("a", b"1"), ("b", b"2"), ("a", None), ("c", b"")])
    assert log.read() == [
        LogRecord(0, "a", b"1"),
        LogRecord(1, "b", b"2"),
        LogRecord(2, "a", None),
        LogRecord(3, "c", b""),
    ]


def test_read_from_middle_and_past_end(log):
    log.append([(f"k{i}", f"v{i}".encode()) for i in range(5)])
    log.append([("k5", b"v5")])
    assert [r.offset for r in log.read(3)] == [3, 4, 5]
    assert log.read(5) == [LogRecord(5, "k5", b"v5")]
    assert log.read(6) == []
    with pytest.raises(LogRewound, match="ends at offset 6, before offset 100 already read"):
        log.read(100)  # no reader's cursor is past the end it saw: the topic is not the log it read


def test_a_topic_deleted_and_created_again_is_reported_to_a_reader_past_its_end(broker, unique_name):
    first = KafkaLog(broker.bootstrap, unique_name, timeout_s=10)
    first.append([(f"k{i}", b"v") for i in range(5)])
    records, cursor = first.read_since(None)
    assert cursor == 5
    first.close()
    admin = _admin(broker.bootstrap)  # alive until its future resolves
    admin.delete_topics([unique_name])[unique_name].result(timeout=10)
    again = KafkaLog(broker.bootstrap, unique_name, timeout_s=10)
    deadline = time.monotonic() + 30
    while True:  # the deletion completes in the background; creating the topic again waits for it
        try:
            again.append([("new", b"v")])
            break
        except StorageError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    try:
        with pytest.raises(LogRewound, match=f"{unique_name}.*ends at offset 1, before offset 5"):
            again.read_since(cursor)
        assert [r.key for r in again.read_since(None)[0]] == ["new"]
    finally:
        again.close()


def _recreate(bootstrap: str, topic: str, records: list[tuple[str, bytes]]) -> KafkaLog:
    """Delete ``topic``, create it again and write ``records`` into it; the new topic's writer."""
    admin = _admin(bootstrap)  # alive until its future resolves
    admin.delete_topics([topic])[topic].result(timeout=10)
    again = KafkaLog(bootstrap, topic, timeout_s=10)
    deadline = time.monotonic() + 30
    while True:  # the deletion completes in the background; creating the topic again waits for it
        try:
            again.append(records)
            return again
        except StorageError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def test_a_topic_created_again_with_more_records_than_were_read_is_a_new_log(broker, unique_name):
    """Its end is not below the reader's position, so only its topic id says it is another log: a reader must
    not take its records from the old position on as if they followed what it read."""
    reader = KafkaLog(broker.bootstrap, unique_name, timeout_s=10)
    reader.append([(f"old{i}", b"v") for i in range(3)])
    records, cursor = reader.read_since(None)
    assert cursor == 3
    again = _recreate(broker.bootstrap, unique_name, [(f"new{i}", b"v") for i in range(5)])
    try:
        with pytest.raises(LogRewound, match=f"{unique_name}.*is a new topic .*deleted and created again"):
            reader.read_since(cursor)  # the same reader (its clients, its cursor), as the config follower holds it
        assert [r.key for r in reader.read_since(None)[0]] == [f"new{i}" for i in range(5)]
        again.append([("next", b"v")])
        assert [r.key for r in reader.read_since(5)[0]] == ["next"]  # the new topic, followed from there
    finally:
        reader.close()
        again.close()


def test_end_offset_grows_with_multi_record_appends(log):
    assert log.end_offset() == 0
    log.append([("a", b"1"), ("b", b"2"), ("c", b"3")])
    assert log.end_offset() == 3
    log.append([("d", b"4")])
    log.append([("e", b"5"), ("f", b"6")])
    assert log.end_offset() == 6
    assert [r.key for r in log.read(log.end_offset() - 2)] == ["e", "f"]


def test_concurrent_reads_of_one_log_each_see_the_whole_log(log):
    """REST threads and the herder read the same KafkaLog at once; no read may lose its partition."""
    from concurrent.futures import ThreadPoolExecutor
    log.append([(f"k{i}", f"v{i}".encode()) for i in range(20)])

    def read_and_end(i: int) -> tuple[int, int]:
        return (len(log.read()), log.end_offset()) if i % 2 else (log.end_offset(), len(log.read(10)) + 10)

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(read_and_end, range(40)))
    assert set(results) == {(20, 20)}


def test_second_client_sees_first_clients_records(broker, log, unique_name):
    log.append([("x", b"1"), ("y", None)])
    log.close()
    other = KafkaLog(broker.bootstrap, unique_name, timeout_s=10)
    try:
        assert other.read() == [LogRecord(0, "x", b"1"), LogRecord(1, "y", None)]
        other.append([("z", b"3")])
        assert log.read(2) == [LogRecord(2, "z", b"3")]  # reopened after close
    finally:
        other.close()


def test_existing_multi_partition_topic_is_rejected(broker, unique_name):
    _create(broker.bootstrap, unique_name, partitions=3)
    kafka_log = KafkaLog(broker.bootstrap, unique_name, timeout_s=10)
    with pytest.raises(StorageError, match=f"{unique_name}.*3 partitions"):
        kafka_log.read()
    kafka_log.close()


def test_a_single_partition_log_never_creates_a_multi_partition_topic(broker, unique_name):
    missing = KafkaLog(broker.bootstrap, unique_name + "-missing", partitions=3, timeout_s=10)
    with pytest.raises(StorageError, match="single-partition"):
        missing.open()
    missing.close()


def test_multi_partition_log_writes_each_key_where_javas_partitioner_puts_it(broker, unique_name):
    """Connect's offsets/status topics: any count, keyed partitioning, every partition read, last write per key."""
    from confluent_kafka import Consumer, TopicPartition

    from sparkcat.kafka.partitioner import partition_for

    kafka_log = KafkaLog(broker.bootstrap, unique_name, partitions=5, multi_partition=True, timeout_s=10)
    other = KafkaLog(broker.bootstrap, unique_name, partitions=1, multi_partition=True, timeout_s=10)
    try:
        keys = [f"status-task-conn-{i}" for i in range(20)]
        kafka_log.append([(k, b"1") for k in keys])
        kafka_log.append([(k, b"2") for k in keys[:10]])
        records, cursor = other.read_since(None)
        assert sorted(r.key for r in records) == sorted(keys + keys[:10])
        last = {r.key: r.value for r in records}
        assert last == {k: (b"2" if i < 10 else b"1") for i, k in enumerate(keys)}
        assert len(cursor) > 1  # spread over several partitions
        kafka_log.append([("status-task-conn-0", b"3")])
        assert [(r.key, r.value) for r in other.read_since(cursor)[0]] == [("status-task-conn-0", b"3")]
        consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": unique_name})
        try:  # where each record is, read by partition to its end offset: Java's toPositive(murmur2(key)) % 5
            total = 0
            for p in range(5):
                low, high = consumer.get_watermark_offsets(TopicPartition(unique_name, p), timeout=10)
                consumer.assign([TopicPartition(unique_name, p, low)])
                got: list = []
                wait_until(lambda: got.extend(m for m in consumer.consume(100, timeout=0.2) if m.error() is None)
                           or len(got) >= high - low, timeout_s=20, interval_s=0,  # no transactions: dense offsets
                           message=lambda: f"partition {p} read to its end offset {high} (from {low}): {len(got)}")
                assert {m.key().decode() for m in got} <= {k for k in keys if partition_for(k.encode(), 5) == p}
                total += len(got)
            assert total == 31  # every record was read, each in its key's partition
        finally:
            consumer.close()
    finally:
        kafka_log.close()
        other.close()


def test_unreachable_broker_raises_a_clear_storage_error(unique_name):
    bootstrap = f"127.0.0.1:{free_port()}"
    kafka_log = KafkaLog(
        bootstrap, unique_name, timeout_s=2, client_config={"socket.connection.setup.timeout.ms": 1000}
    )
    started = time.monotonic()
    with pytest.raises(StorageError) as raised:
        kafka_log.append([("a", b"1")])
    assert unique_name in str(raised.value) and bootstrap in str(raised.value)
    assert time.monotonic() - started < 15
    kafka_log.close()


def test_transactional_appends_are_read_back(broker, unique_name):
    kafka_log = KafkaLog(broker.bootstrap, unique_name, transactional_id=unique_name, timeout_s=10)
    try:
        kafka_log.append([("a", b"1"), ("b", None)])
        kafka_log.append([("c", b"3")])
        assert [(r.key, r.value) for r in kafka_log.read()] == [("a", b"1"), ("b", None), ("c", b"3")]
        assert kafka_log.end_offset() > kafka_log.read()[-1].offset  # commit markers take offsets
    finally:
        kafka_log.close()


def test_transactional_appends_from_several_threads_each_commit(broker, unique_name):
    """The leader's herder and REST threads append to the config log at once: a transaction is not shared.

    librdkafka allows one transaction API call at a time per producer; two threads' commits at once
    failed one append with "Conflicting commit_transaction API call is already in progress"."""
    from concurrent.futures import ThreadPoolExecutor
    kafka_log = KafkaLog(broker.bootstrap, unique_name, transactional_id=unique_name, timeout_s=10)
    try:
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(lambda i: kafka_log.append([(f"k{i}", b"a"), (f"k{i}", b"b")]), range(40)))
        records = kafka_log.read()
        assert len(records) == 80
        for i in range(40):  # each append's records together, in order
            assert [r.value for r in records if r.key == f"k{i}"] == [b"a", b"b"]
    finally:
        kafka_log.close()


def test_newer_transactional_writer_fences_the_older(broker, unique_name):
    first = KafkaLog(broker.bootstrap, unique_name, transactional_id=unique_name, timeout_s=10)
    second = KafkaLog(broker.bootstrap, unique_name, transactional_id=unique_name, timeout_s=10)
    try:
        first.append([("a", b"1")])
        second.append([("b", b"2")])
        with pytest.raises(FencedError, match=unique_name):
            first.append([("c", b"3")])
        with pytest.raises(FencedError):
            first.append([("d", b"4")])
        assert [r.key for r in second.read()] == ["a", "b"]
    finally:
        first.close()
        second.close()


def test_wait_stable_returns_once_every_transaction_open_now_has_ended(broker, unique_name):
    """A committed record behind another writer's open transaction is invisible read_committed until it ends."""
    import threading

    from confluent_kafka import Producer

    log = KafkaLog(broker.bootstrap, unique_name, timeout_s=10)
    log.append([("first", b"1")])
    zombie = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": f"{unique_name}-zombie"})
    zombie.init_transactions(30)
    zombie.begin_transaction()
    zombie.produce(unique_name, key=b"open", value=b"x", partition=0)
    zombie.flush(10)
    log.append([("after", b"2")])  # committed, but behind the open transaction
    assert [r.key for r in log.read()] == ["first"]
    with pytest.raises(StorageError, match="not stable"):
        log.wait_stable(timeout_s=1.0)
    threading.Timer(1.0, lambda: zombie.abort_transaction(10)).start()
    started = time.monotonic()
    log.wait_stable(timeout_s=30)
    assert time.monotonic() - started >= 0.5
    assert [r.key for r in log.read()] == ["first", "after"]
    log.close()
