"""Which topic a reader of a Kafka log has been reading: its topic id, checked again before it reads on.

A topic deleted and created again under the same name is a different log whose offsets start at 0 again.
When the new topic already holds as many records as the reader had read (its leader kept writing, or an
operator restored a backup into it), its end is not below the reader's position, so the offsets alone do
not show it: the reader would take the new topic's records from its old position on and apply them over
the state it built from the old topic. Kafka gives every topic a new id when it is created (KIP-516); a
reader that remembers the id it started from sees the change and starts over (``LogRewound``).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from confluent_kafka import TopicCollection
from confluent_kafka.admin import AdminClient

from sparkcat.errors import LogRewound

#: While a reader is up to date (nothing new to read) the topic id is asked again at most this often: a new
#: topic that already holds exactly as many records as the old one is seen within this time.
IDLE_CHECK_S = 5.0
_NO_ID = "AAAAAAAAAAAAAAAAAAAAAA"  # the zero Uuid: a broker without topic ids (before Kafka 2.8)


class TopicIdentity:
    """The id of the topic a reader started from, and the check that it still reads that topic."""

    def __init__(self, topic: str, admin: Callable[[], AdminClient], timeout_s: float):
        """``admin``: the log's admin client (created on first use)."""
        self.topic = topic
        self._admin = admin
        self._timeout_s = timeout_s
        self.topic_id: str | None = None
        self._checked_at = 0.0

    def remember(self) -> None:
        """A read from the beginning: the topic it reads is the one later reads must find. A reader of an empty
        log reads from the beginning at every poll: the broker is asked again only every ``IDLE_CHECK_S``."""
        if self.topic_id is not None and time.monotonic() - self._checked_at < IDLE_CHECK_S:
            return
        self.topic_id = self._current()
        self._checked_at = time.monotonic()

    def forget(self) -> None:
        """The reader was closed or starts over: its next read from the beginning takes the topic there now."""
        self.topic_id = None

    def check(self, idle: bool) -> None:
        """Raise ``LogRewound`` when the topic is not the one read so far. ``idle``: nothing new to read, so
        ask the broker only every ``IDLE_CHECK_S``; a read that finds records always asks first."""
        if idle and time.monotonic() - self._checked_at < IDLE_CHECK_S:
            return
        current = self._current()
        self._checked_at = time.monotonic()
        if self.topic_id is None:
            self.topic_id = current
        elif current is not None and current != self.topic_id:
            was, self.topic_id = self.topic_id, None  # the reader starts over: its next read from 0 takes the new id
            raise LogRewound(f"Kafka log {self.topic!r} is a new topic (topic id {current}, was {was}): "
                             "the topic was deleted and created again")

    def _current(self) -> str | None:
        """The topic's id as the broker says now; None when the broker has no topic ids."""
        futures = self._admin().describe_topics(TopicCollection([self.topic]), request_timeout=self._timeout_s)
        description = futures[self.topic].result(timeout=self._timeout_s + 5)
        topic_id = str(description.topic_id) if description.topic_id is not None else None
        return None if topic_id in (None, _NO_ID) else topic_id
