"""Increment source: endless integer sequences, the connector of Kafka Connect's source-connector tutorial.

Each configured increment ``k`` is one source partition ``{"increment": k}`` and
one topic ``<topic.prefix><k>``. Its records count up: the record at position
``p`` (1, 2, 3, ...) has the value ``p * k``. Nothing is read from outside, so the
connector is handy for demos, benchmarks and tests of the runtime itself.

Name: ``increment`` (also ``IncrementSourceConnector``, ``IncrementSource``).

Options
-------
- ``increments`` (LIST, required): the increments, each a positive integer, e.g.
  ``1,100``. The tasks share them out (at most one task per increment), as
  Connect's ``ConnectorUtils.groupPartitions`` would.
- ``topic.prefix`` (STRING, default ``seq_``): records of increment ``k`` go to
  topic ``<topic.prefix><k>``.
- ``records.per.poll`` (INT, default 1000): how far ahead of its committed
  position each partition reports data as available, i.e. the most records one
  partition adds to a micro-batch when ``batch.max.records`` does not bound it
  further. The sequence is unbounded, so something must.
- ``throughput`` (DOUBLE, default -1 = unlimited): records per second per
  partition. When set, the driver admits only ``elapsed_seconds * throughput``
  records per partition since the task started (wall clock), for demos that
  should look like a live feed.
- ``tasks.max`` is the runtime's common key, not defined here.

Offsets
-------
Source partition ``{"increment": k}``, source offset ``{"position": p}`` where
``p`` is the last position written, i.e. how many records of that increment were
written so far (no offset yet means position 0). These are the key names of the
"kafka-connect-increment" tutorial, whose stored offset is also the count of
records emitted, so its offsets resume here; the tutorial's values are
``(p - 1) * k``, here they are ``p * k``.

Record value schema: ``position BIGINT, value BIGINT, increment BIGINT``; key: none.

Example
-------
::

    {"name": "seq", "config": {"connector.class": "increment", "increments": "1,100",
                               "tasks.max": "2", "topic.prefix": "seq_"}}
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterator
from typing import Any

from sparkcat import __version__
from sparkcat.api import partition_key
from sparkcat.api.config import ConfigDef, Custom, Importance, Range, Type
from sparkcat.api.configured import ConfiguredConnector, Versioned
from sparkcat.api.connector import ExactlyOnceSupport, SourceConnector, SourceTask
from sparkcat.api.records import SourceRecord
from sparkcat.api.util import group_partitions

__all__ = ["IncrementSourceConnector", "IncrementSourceTask", "CONFIG_DEF"]

log = logging.getLogger(__name__)

INCREMENTS_CONFIG = "increments"
TOPIC_PREFIX_CONFIG = "topic.prefix"
RECORDS_PER_POLL_CONFIG = "records.per.poll"
THROUGHPUT_CONFIG = "throughput"

INCREMENT_FIELD = "increment"
POSITION_FIELD = "position"
VALUE_SCHEMA = "position BIGINT, value BIGINT, increment BIGINT"

_POSITIVE_INT = re.compile(r"\+?[0-9]+")


def _check_increments(name: str, value: list[str] | None) -> str | None:
    """Name the first item that is not a positive integer, or is listed twice."""
    if not value:
        return "at least one increment is required"
    seen: set[int] = set()
    for item in value:
        if not _POSITIVE_INT.fullmatch(item):
            return f"increment '{item}' is not a positive integer"
        number = int(item)
        if number <= 0:
            return f"increment '{item}' is not a positive integer"
        if number >= 2**63:
            return f"increment '{item}' does not fit in a 64-bit integer"
        if number in seen:
            return f"increment '{item}' is listed more than once"
        seen.add(number)
    return None


def _check_throughput(name: str, value: float) -> str | None:
    return None if value == -1 or value > 0 else "must be positive, or -1 for unlimited"


CONFIG_DEF: ConfigDef = (
    ConfigDef()
    .define(INCREMENTS_CONFIG, Type.LIST, validator=Custom(_check_increments, "positive integers"),
            importance=Importance.HIGH,
            documentation="A list of increments for the sequences; each is one source partition and one topic.")
    .define(TOPIC_PREFIX_CONFIG, Type.STRING, "seq_", None, Importance.MEDIUM,
            "Prefix for topics to publish data to: increment k goes to <prefix>k.")
    .define(RECORDS_PER_POLL_CONFIG, Type.INT, 1000, Range.at_least(1), Importance.LOW,
            "How many records past its committed position each partition reports as available; bounds one"
            " partition's share of a micro-batch when batch.max.records does not.")
    .define(THROUGHPUT_CONFIG, Type.DOUBLE, -1, Custom(_check_throughput, "-1 or a positive number"),
            Importance.LOW,
            "Records per second per partition, measured on the driver's wall clock since the task started;"
            " -1 means unlimited.")
    .freeze()
)
"""The connector's keys; task configs use the same keys (with ``increments`` narrowed to the task's share)."""


def _double_str(value: float) -> str:
    """A DOUBLE as text that ``parse_type`` reads back (Java spells infinity ``Infinity``)."""
    return "Infinity" if value == float("inf") else repr(float(value))


def _position(offset: Any) -> int:
    """The position in an offset dict (None, before the first record, is position 0)."""
    if offset is None:
        return 0
    if isinstance(offset, dict):
        value = offset.get(POSITION_FIELD)
        if value is None:
            return 0
        return int(value)
    return int(offset)


class IncrementSourceConnector(ConfiguredConnector, SourceConnector):
    """Spreads the configured increments over at most ``tasks.max`` tasks."""

    plugin_version = __version__
    definition = CONFIG_DEF

    def __init__(self) -> None:
        self._increments: list[str] = []
        self._task_props: dict[str, str] = {}

    def start(self, config: dict[str, str]) -> None:
        parsed = CONFIG_DEF.parse(config)
        self._increments = [str(int(item)) for item in parsed[INCREMENTS_CONFIG]]
        self._task_props = {
            TOPIC_PREFIX_CONFIG: parsed[TOPIC_PREFIX_CONFIG],
            RECORDS_PER_POLL_CONFIG: str(parsed[RECORDS_PER_POLL_CONFIG]),
            THROUGHPUT_CONFIG: _double_str(parsed[THROUGHPUT_CONFIG]),
        }
        log.info("Increment source started with increments %s", ",".join(self._increments))

    def task_class(self) -> type[IncrementSourceTask]:
        return IncrementSourceTask

    def exactly_once_support(self, config: Any) -> ExactlyOnceSupport:
        """Supported: a range of positions always gives the same records, so a batch can be replayed exactly."""
        return ExactlyOnceSupport.SUPPORTED

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        """One config per group of increments, ``min(max_tasks, len(increments))`` of them."""
        num_groups = min(max_tasks, len(self._increments))
        if num_groups <= 0:
            return []
        return [
            {INCREMENTS_CONFIG: ",".join(group), **self._task_props}
            for group in group_partitions(self._increments, num_groups)
        ]


class IncrementSourceTask(Versioned, SourceTask):
    """Generates the sequences of its increments; any range of positions can be replayed exactly."""

    plugin_version = __version__

    def __init__(self) -> None:
        self._increments: list[int] = []
        self._prefix = "seq_"
        self._records_per_poll = 1000
        self._throughput = -1.0
        self._clock: Callable[[], float] = time.monotonic
        self._started = 0.0
        self._base_positions: dict[str, int] = {}

    def start(self, config: dict[str, str]) -> None:
        parsed = CONFIG_DEF.parse(config)
        self._increments = [int(item) for item in parsed[INCREMENTS_CONFIG]]
        self._prefix = parsed[TOPIC_PREFIX_CONFIG]
        self._records_per_poll = parsed[RECORDS_PER_POLL_CONFIG]
        self._throughput = parsed[THROUGHPUT_CONFIG]
        self._started = self._clock()
        self._base_positions = {}

    def partitions(self) -> list[dict[str, Any]]:
        return [{INCREMENT_FIELD: k} for k in self._increments]

    def latest_offsets(self, current: dict[str, Any]) -> dict[str, Any]:
        """Each partition's position plus ``records.per.poll``, held back by ``throughput`` when set."""
        now = self._clock()
        latest: dict[str, Any] = {}
        for partition in self.partitions():
            key = partition_key(partition)
            position = _position(current.get(key))
            target = position + self._records_per_poll
            if self._throughput > 0:
                base = self._base_positions.setdefault(key, position)
                allowed = base + int((now - self._started) * self._throughput)
                target = max(position, min(target, allowed))
            latest[key] = {POSITION_FIELD: target}
        return latest

    def advance(self, partition: dict[str, Any], start: Any, end: Any, max_records: int) -> Any:
        """Positions are record counts, so ``max_records`` records past ``start`` is simple arithmetic."""
        start_pos, end_pos = _position(start), _position(end)
        return {POSITION_FIELD: max(start_pos, min(end_pos, start_pos + max(0, max_records)))}

    def poll(self, partition: dict[str, Any], start: Any, end: Any) -> Iterator[SourceRecord]:
        """The records at positions ``start + 1`` to ``end`` of the partition's sequence."""
        k = int(partition[INCREMENT_FIELD])
        topic = f"{self._prefix}{k}"
        for p in range(_position(start) + 1, _position(end) + 1):
            yield SourceRecord(
                source_partition={INCREMENT_FIELD: k},
                source_offset={POSITION_FIELD: p},
                topic=topic,
                key=None,
                value={"position": p, "value": p * k, "increment": k},
            )

    def value_schema(self) -> str:
        return VALUE_SCHEMA
