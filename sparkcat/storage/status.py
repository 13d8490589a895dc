"""The status store: Kafka Connect's status topic format, with generation-safe updates.

A status write carries the generation of the assignment it came from; a newer
generation always wins, so a late write from an old query cannot hide a newer state.

Writes apply their own records to the in-memory view, and a write reads what others wrote at most
once per ``REFRESH_S``: reading a five-partition status topic back costs a fetch per partition, and
a driver starting 100 connectors writes hundreds of statuses. Readers keep the newest generation
whatever arrives late, so a write that missed another's newer record a moment ago hides nothing.
"""

from __future__ import annotations

import logging
import time

from sparkcat.model.status import State, Status, TopicStatus
from sparkcat.storage import json_codec
from sparkcat.storage.log import KeyedLog, LogView

log = logging.getLogger(__name__)

CONNECTOR_PREFIX = "status-connector-"
TASK_PREFIX = "status-task-"
TOPIC_PREFIX = "status-topic-"
#: A write reads what others wrote when its last read is older than this.
REFRESH_S = 1.0


class StatusStore(LogView):
    """Connector, task and topic statuses, read from and written to a keyed log."""

    def __init__(self, backend: KeyedLog):
        super().__init__(backend)
        self._connectors: dict[str, Status] = {}
        self._tasks: dict[tuple[str, int], Status] = {}
        self._topics: dict[tuple[str, str], TopicStatus] = {}
        self._read_at: float | None = None  # monotonic time of the last refresh

    def _refresh(self) -> None:
        super()._refresh()
        self._read_at = time.monotonic()

    def _refresh_if_stale(self) -> None:
        if self._read_at is None or time.monotonic() - self._read_at >= REFRESH_S:
            self._refresh()

    def _apply(self, key: str, raw: bytes | None) -> None:
        try:
            value = json_codec.loads(raw)
        except ValueError:
            log.warning("Ignoring unreadable status record %r", key)
            return
        if key.startswith(CONNECTOR_PREFIX):
            self._apply_status(self._connectors, key[len(CONNECTOR_PREFIX):], None, value)
        elif key.startswith(TASK_PREFIX):
            name, sep, num = key[len(TASK_PREFIX):].rpartition("-")
            if sep and num.isdigit():
                self._apply_status(self._tasks, name, int(num), value)
        elif key.startswith(TOPIC_PREFIX):
            self._apply_topic(key, value)

    def _apply_status(self, table: dict, name: str, task: int | None, value: object) -> None:
        k = name if task is None else (name, task)
        if value is None:
            table.pop(k, None)
            return
        try:
            status = Status(name, task, State(value["state"]), str(value.get("worker_id") or ""),
                            int(value.get("generation") or 0), value.get("trace"))
        except (KeyError, ValueError, TypeError):
            log.warning("Ignoring malformed status for %s/%s: %r", name, task, value)
            return
        current = table.get(k)
        if current is None or status.generation >= current.generation:
            table[k] = status

    def _apply_topic(self, key: str, value: object) -> None:
        topic, _, rest = key[len(TOPIC_PREFIX):].partition(":connector-")
        if value is None:
            self._topics.pop((rest, topic), None)
        elif isinstance(value, dict) and isinstance(value.get("topic"), dict):
            t = value["topic"]
            self._topics[(rest, topic)] = TopicStatus(topic, rest, int(t.get("task", 0)),
                                                     int(t.get("discoverTimestamp", 0)))

    def put(self, status: Status) -> bool:
        """Write ``status`` unless a newer generation is already stored; True when written."""
        with self._lock:
            return self._put(status)

    def _put(self, status: Status) -> bool:
        self._refresh_if_stale()
        table = self._connectors if status.task is None else self._tasks
        current = table.get(status.connector if status.task is None else (status.connector, status.task))
        if current is not None and current.generation > status.generation:
            log.debug("Not writing %s: generation %d is older than %d", status.key, status.generation,
                      current.generation)
            return False
        raw = json_codec.dumps(status.to_json())
        self.backend.append([(status.key, raw)])
        self._apply(status.key, raw)  # read back in log order by the next refresh: the newest generation wins
        return True

    def put_topic(self, topic: TopicStatus) -> None:
        value = {"topic": {"name": topic.topic, "connector": topic.connector, "task": topic.task,
                           "discoverTimestamp": topic.discover_timestamp}}
        key, raw = f"{TOPIC_PREFIX}{topic.topic}:connector-{topic.connector}", json_codec.dumps(value)
        with self._lock:
            self.backend.append([(key, raw)])
            self._apply(key, raw)

    def known_topics(self, connector: str) -> list[str]:
        """The topics this view knows the connector used, read from the log at most once per ``REFRESH_S``
        (each committed batch of a sink asks, ``runtime/active_topics``)."""
        with self._lock:
            self._refresh_if_stale()
            return sorted(t for (c, t) in self._topics if c == connector)

    def delete_topics(self, connector: str) -> None:
        """Forget the topics a connector used (``PUT /connectors/NAME/topics/reset``)."""
        keys = [f"{TOPIC_PREFIX}{t}:connector-{connector}" for (c, t) in self.topic_keys() if c == connector]
        if keys:
            self.backend.append([(k, None) for k in keys])

    def topic_keys(self) -> list[tuple[str, str]]:
        self.refresh()
        return list(self._topics)

    def topics(self, connector: str) -> list[str]:
        self.refresh()
        return sorted(t for (c, t) in self._topics if c == connector)

    def delete(self, connector: str) -> None:
        """Tombstone the connector's and its tasks' statuses (after the connector is deleted)."""
        self.refresh()
        keys = [CONNECTOR_PREFIX + connector] if connector in self._connectors else []
        keys += [f"{TASK_PREFIX}{c}-{t}" for (c, t) in self._tasks if c == connector]
        if keys:
            self.backend.append([(k, None) for k in keys])
        self.refresh()

    def get(self, connector: str) -> Status | None:
        self.refresh()
        return self._connectors.get(connector)

    def get_task(self, connector: str, task: int) -> Status | None:
        self.refresh()
        return self._tasks.get((connector, task))

    def tasks(self, connector: str) -> list[Status]:
        self.refresh()
        return sorted((s for (c, _), s in self._tasks.items() if c == connector), key=lambda s: s.task)

    def connectors(self) -> list[str]:
        self.refresh()
        return sorted(self._connectors)
