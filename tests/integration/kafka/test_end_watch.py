"""``EndWatch`` against a real broker: partitions' committed ends follow records, and idle rounds list nothing."""

from __future__ import annotations

import time
import uuid

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, OffsetSpec

from sparkcat.kafka.end_watch import FULL_LIST_S, WARM_S, EndWatch, watch_consumer_settings
from sparkcat.spark.driver.shared_sinks import _list_offsets
from tests.kafka_helpers import create_topic


def _produce(bootstrap: str, topic: str, partition: int, count: int, transactional: bool = False,
             commit: bool = True) -> None:
    conf = {"bootstrap.servers": bootstrap, "enable.idempotence": True}
    producer = Producer({**conf, "transactional.id": uuid.uuid4().hex} if transactional else conf)
    if transactional:
        producer.init_transactions(30)
        producer.begin_transaction()
    for i in range(count):
        producer.produce(topic, value=b"v%d" % i, partition=partition)
    producer.flush(30)  # every record sent (an abort would purge those still queued)
    if transactional:
        producer.commit_transaction(30) if commit else producer.abort_transaction(30)


def _watch(broker, warm_s: float = WARM_S, clock=time.monotonic) -> tuple[EndWatch, list[list[tuple[str, int]]]]:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    asked: list[list[tuple[str, int]]] = []

    def list_ends(tps):
        asked.append(list(tps))
        return _list_offsets(admin, {tp: OffsetSpec.latest() for tp in tps})
    consumer = Consumer(watch_consumer_settings({"bootstrap.servers": broker.bootstrap}))
    return EndWatch(consumer, list_ends, clock=clock, warm_s=warm_s), asked


def _until_end(watch: EndWatch, wanted, tp, end: int, timeout_s: float = FULL_LIST_S / 2) -> dict:
    """Rounds until ``tp`` ends at ``end``: within half of ``FULL_LIST_S``, so the watch saw it, not the listing of
    every partition that comes at last."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        ends = watch.ends(wanted)
        if ends.get(tp) == end:
            return ends
        time.sleep(0.1)
    raise AssertionError(f"{tp} never reached end {end}: {watch.ends(wanted)}")


def test_ends_follow_records_and_only_partitions_that_moved_are_listed(broker, unique_name):
    create_topic(broker.bootstrap, unique_name, 3)
    _produce(broker.bootstrap, unique_name, 1, 4)
    watch, asked = _watch(broker, warm_s=0)  # a partition that moved is watched again at once
    wanted = {(unique_name, p) for p in range(3)}
    try:
        assert watch.ends(wanted) == {(unique_name, 0): 0, (unique_name, 1): 4, (unique_name, 2): 0}
        assert sorted(asked[0]) == sorted(wanted)
        _produce(broker.bootstrap, unique_name, 2, 7)
        ends = _until_end(watch, wanted, (unique_name, 2), 7)
        assert ends == {(unique_name, 0): 0, (unique_name, 1): 4, (unique_name, 2): 7}
        assert [(unique_name, 0)] not in asked and all((unique_name, 0) not in a for a in asked[1:])
        assert watch.ends(wanted) == ends  # a partition that moved is listed once more, found still, watched again
        calls = len(asked)
        for _ in range(5):  # idle rounds: nothing moved, nothing listed
            assert watch.ends(wanted) == ends
        assert len(asked) == calls
        _produce(broker.bootstrap, unique_name, 2, 3)  # the same partition moves again after its listing
        _until_end(watch, wanted, (unique_name, 2), 10)
    finally:
        watch.close()


def test_an_aborted_transaction_signals_nothing_and_a_committed_one_moves_the_end(broker, unique_name):
    create_topic(broker.bootstrap, unique_name, 2)
    aborted, committed = (unique_name, 0), (unique_name, 1)
    watch, asked = _watch(broker)
    try:
        assert watch.ends({aborted, committed}) == {aborted: 0, committed: 0}
        _produce(broker.bootstrap, unique_name, 0, 5, transactional=True, commit=False)
        _produce(broker.bootstrap, unique_name, 1, 2, transactional=True)
        # the committed partition's records come in the same fetches as anything of the aborted one would
        _until_end(watch, {aborted, committed}, committed, 3)  # 2 records and the commit marker
        assert all(aborted not in listed for listed in asked[1:]), asked
        _produce(broker.bootstrap, unique_name, 0, 2, transactional=True)
        # 5 aborted records, their marker, 2 committed records and theirs: the committed end is past them all
        _until_end(watch, {aborted, committed}, aborted, 9)
    finally:
        watch.close()


def test_a_partition_no_longer_wanted_is_dropped_and_a_new_one_is_listed(broker, unique_name):
    create_topic(broker.bootstrap, unique_name, 2)
    a, b = (unique_name, 0), (unique_name, 1)
    _produce(broker.bootstrap, unique_name, 1, 2)
    watch, asked = _watch(broker)
    try:
        assert watch.ends({a}) == {a: 0}
        assert watch.ends({b}) == {b: 2}
        assert asked[-1] == [b]
        _produce(broker.bootstrap, unique_name, 0, 3)  # a is not watched any more: nothing of it comes back
        _produce(broker.bootstrap, unique_name, 1, 1)
        _until_end(watch, {b}, b, 3)
        assert all(a not in listed for listed in asked[1:])
    finally:
        watch.close()


def test_every_partition_that_gets_records_at_once_is_seen_in_the_same_round(broker, unique_name):
    create_topic(broker.bootstrap, unique_name, 12)
    wanted = {(unique_name, p) for p in range(12)}
    watch, asked = _watch(broker)
    try:
        assert set(watch.ends(wanted).values()) == {0}
        for p in range(12):
            _produce(broker.bootstrap, unique_name, p, 2 + p)
        deadline = time.monotonic() + FULL_LIST_S / 2
        ends = watch.ends(wanted)
        while any(ends[(unique_name, p)] != 2 + p for p in range(12)) and time.monotonic() < deadline:
            time.sleep(0.2)
            ends = watch.ends(wanted)
        assert ends == {(unique_name, p): 2 + p for p in range(12)}
        # seen together: a fetch brings every partition's first records, not one partition's per fetch
        assert len([a for a in asked[1:] if a]) <= 3
    finally:
        watch.close()


def test_a_partition_that_moved_lately_is_listed_at_every_round_then_watched_again(broker, unique_name):
    create_topic(broker.bootstrap, unique_name, 2)
    still, busy = (unique_name, 0), (unique_name, 1)
    now = [0.0]  # the watch's clock, moved by hand: no listing of every partition (FULL_LIST_S) comes in between
    watch, asked = _watch(broker, warm_s=3.0, clock=lambda: now[0])
    try:
        assert watch.ends({still, busy}) == {still: 0, busy: 0}
        _produce(broker.bootstrap, unique_name, 1, 2)
        _until_end(watch, {still, busy}, busy, 2)
        for end in (3, 4):  # while warm, each record is seen at the very next round: the listing, not the watch
            calls = len(asked)
            _produce(broker.bootstrap, unique_name, 1, 1)
            assert watch.ends({still, busy})[busy] == end
            assert asked[calls:] == [[busy]]
        now[0] = 4.0  # past warm_s, short of FULL_LIST_S
        watch.ends({still, busy})  # warm no more: listed once, found still, watched from its end
        calls = len(asked)
        for _ in range(3):
            assert watch.ends({still, busy}) == {still: 0, busy: 4}
        assert len(asked) == calls
        _produce(broker.bootstrap, unique_name, 1, 1)
        _until_end(watch, {still, busy}, busy, 5)  # the watch signals it: with the clock still, nothing else lists it
    finally:
        watch.close()
