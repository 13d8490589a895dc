"""Where Kafka partitions' committed records end, watched by a consumer instead of asked for at every trigger.

A shared sink query used to send one ListOffsets request for every subscribed partition at each trigger, idle
or not: with a hundred idle sinks that was the largest Python cost of an idle driver. ``EndWatch`` keeps a
non-joining consumer (``read_committed``) positioned at each watched partition's last listed end. A partition
that gets a committed record after its listing delivers it to that consumer; only such partitions, and new
ones, are listed again. An idle round costs one empty ``consume``. The watch is a shortcut, never the only
source: every partition is listed again at least every ``FULL_LIST_S``, so a missed signal (a topic deleted and
created again, a consumer error) delays a member by that much at most and loses nothing.

A partition that signalled is paused until its listing: librdkafka drops what it had already fetched for it,
so the driver takes about one message per changed partition per round. A partition that moved in the last
``WARM_S`` stays paused and is listed at every round: under steady throughput or a trickle the watch fetches
nothing, and a partition costs a ListOffsets entry per round, as it did before the watch. The watch is for the
first record after a quiet spell: a resumed partition's signal was measured to take one to two seconds to come
(100 partitions of one record each: at one round per second, 0-3 of them signalled at the first round after
the records were acknowledged, all at the second), against the next round for a listed one.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["EndWatch", "watch_consumer_settings", "FULL_LIST_S", "WARM_S"]

log = logging.getLogger(__name__)

TopicPartitionKey = tuple[str, int]
FULL_LIST_S = 10.0   # every watched partition is listed at least this often
WARM_S = 30.0        # a partition that moved this recently is listed at every round rather than watched
_DRAIN_BATCH = 500   # messages taken per consume() call while draining
_DRAIN_CALLS = 20    # at most this many calls per round: a flood cannot hold the planner

# The watch needs to learn that a record arrived, not the record: prefetch no more than one fetch per partition,
# never commit, never join the group. The per-partition fetch size stays librdkafka's (1 MB): below a record
# batch's size the broker returns that batch for the first partition of a fetch response only (KIP-74), and the
# watch would learn of one partition per fetch.
_WATCH_SETTINGS = {
    "group.id": "sparkcat-end-watch",  # librdkafka wants one; nothing joins it or commits to it
    "enable.auto.commit": False,
    "enable.auto.offset.store": False,
    "enable.partition.eof": False,
    "auto.offset.reset": "error",      # a position gone (topic recreated) is an error event: a signal, not a skip
    "isolation.level": "read_committed",
    "queued.min.messages": 1,
    # A record ends the broker's wait at once, so this only paces an idle watch: one fetch of every watched
    # partition per 2 s (at 500 ms, the watch of 100 idle partitions was the busiest Kafka client thread of an idle
    # driver). A partition assigned or resumed joins at the next fetch, up to that much later; a partition that
    # moved in the last WARM_S is listed at every round instead, and every one is listed each FULL_LIST_S.
    "fetch.wait.max.ms": 2000,
}


def watch_consumer_settings(consumer: Mapping[str, Any]) -> dict[str, Any]:
    """A watch consumer's settings from a member's consumer settings (its connection and security keys)."""
    dropped = ("group.id", "group.instance.id", "client.id", "partition.assignment.strategy", "max.poll.interval.ms",
               "fetch.max.bytes", "receive.message.max.bytes", "fetch.min.bytes")
    return {**{k: v for k, v in consumer.items() if k not in dropped}, **_WATCH_SETTINGS}


class EndWatch:
    """The ends of the partitions a group asks about, listed only where the watch consumer saw them move."""

    def __init__(self, consumer: Any, list_ends: Callable[[list[TopicPartitionKey]], dict[TopicPartitionKey, int]],
                 clock: Callable[[], float] = time.monotonic, warm_s: float = WARM_S) -> None:
        self._consumer = consumer
        self._list = list_ends
        self._clock = clock
        self._warm_s = warm_s
        self._ends: dict[TopicPartitionKey, int] = {}   # watched partition -> its last listed end
        self._paused: set[TopicPartitionKey] = set()    # listed at every round, not watched
        self._moved_at: dict[TopicPartitionKey, float] = {}  # when a listing last found a partition moved
        self._listed_all_at = float("-inf")
        self._answer: tuple[Any, dict[TopicPartitionKey, int]] | None = None  # (wanted, its ends): until ends change
        self.listed = 0  # partitions listed so far (the cost the watch saves shows here)

    def ends(self, wanted: Iterable[TopicPartitionKey]) -> dict[TopicPartitionKey, int]:
        """Each of ``wanted``'s committed end now, listing the partitions that moved, new ones, and every one
        once per ``FULL_LIST_S``. A listing error propagates; the partitions it was for are listed next time.
        The answer is the watch's own (read it, do not change it): the same dict as the last call's while no end
        changed."""
        wanted = wanted if isinstance(wanted, (set, frozenset)) else set(wanted)
        moved = self._drain()
        self._unwatch(self._ends.keys() - wanted)
        now = self._clock()
        if now - self._listed_all_at >= FULL_LIST_S:
            ask = wanted
        else:
            ask = (moved & wanted) | (wanted - self._ends.keys()) | (self._paused & wanted)
        if ask:
            listed = self._list(sorted(ask))
            self.listed += len(listed)
            self._watch_from(listed, now)
            if ask is wanted:
                self._listed_all_at = now
        if self._answer is None or self._answer[0] is not wanted:
            self._answer = (wanted, {tp: self._ends[tp] for tp in wanted if tp in self._ends})
        return self._answer[1]  # the last round's own dict when nothing moved: the caller sees it is the same

    def close(self) -> None:
        try:
            self._consumer.close()
        except Exception as e:  # closing a consumer whose cluster went away
            log.debug("Closing the end watch's consumer: %s", e)

    def _drain(self) -> set[TopicPartitionKey]:
        """The watched partitions that delivered a record or an error since the last round, now paused."""
        from confluent_kafka import TopicPartition
        moved: set[TopicPartitionKey] = set()
        for _ in range(_DRAIN_CALLS):
            messages = self._consumer.consume(num_messages=_DRAIN_BATCH, timeout=0)
            if not messages:
                break
            fresh = {(m.topic(), m.partition()) for m in messages if m.topic() is not None} - moved
            fresh &= set(self._ends)
            if fresh:
                moved |= fresh
                self._consumer.pause([TopicPartition(t, p) for t, p in sorted(fresh - self._paused)])
                self._paused |= fresh
        return moved

    def _unwatch(self, gone: set[TopicPartitionKey]) -> None:
        from confluent_kafka import TopicPartition
        if gone:
            self._consumer.incremental_unassign([TopicPartition(t, p) for t, p in sorted(gone)])
            self._answer = None
            for tp in gone:
                del self._ends[tp]
                self._moved_at.pop(tp, None)
            self._paused -= gone

    def _watch_from(self, listed: dict[TopicPartitionKey, int], now: float) -> None:
        """Watch each listed partition that is new or did not move for ``warm_s`` from its end; one that moved
        more recently stays paused and is listed again next round (a busy partition costs a ListOffsets entry per
        round, as before, and the watch fetches nothing of it)."""
        from confluent_kafka import TopicPartition
        for tp, end in listed.items():
            if tp in self._ends and end != self._ends[tp]:
                self._moved_at[tp] = now
        hot = {tp for tp in listed if now - self._moved_at.get(tp, float("-inf")) < self._warm_s}
        cold = {tp: end for tp, end in listed.items() if tp not in hot}
        new = [TopicPartition(t, p, end) for (t, p), end in sorted(cold.items()) if (t, p) not in self._ends]
        if new:
            self._consumer.incremental_assign(new)
        for tp, end in sorted(cold.items()):
            # one that neither moved nor signalled is still positioned at its end: no seek (a full listing
            # would otherwise reposition every watched partition)
            if tp in self._ends and (end != self._ends[tp] or tp in self._paused):
                self._move(TopicPartition(*tp, end))
        pause = sorted(hot - self._paused)
        if pause:
            self._consumer.pause([TopicPartition(t, p) for t, p in pause])
            self._paused |= hot
        resumed = sorted(self._paused & set(cold))
        if resumed:
            self._consumer.resume([TopicPartition(t, p) for t, p in resumed])
            self._paused -= set(resumed)
        self._ends.update(listed)
        self._answer = None

    def _move(self, at: Any) -> None:
        """Watch ``at``'s partition from ``at``'s offset; a partition whose fetch has not started yet refuses a
        seek, so it is assigned again there."""
        try:
            self._consumer.seek(at)
        except Exception:
            self._consumer.incremental_unassign([at])
            self._consumer.incremental_assign([at])
