"""An increment source whose records have keys, for the Delta sink's merge tests.

Position ``p`` has key ``{"id": p % 5}`` and value ``{"id", "position", "increment"}``, so keys
repeat and a merge keeps one row per id. With ``keyed.note=true`` in the task config the value has
one more field, ``note STRING`` (a schema change between runs).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sparkcat.api.records import SourceRecord
from sparkcat.connectors.increment import IncrementSourceTask

KEYS = 5


class KeyedSourceTask(IncrementSourceTask):
    def start(self, config: dict[str, str]) -> None:
        super().start(config)
        self._note = config.get("keyed.note", "false") == "true"

    def poll(self, partition: dict[str, Any], start: Any, end: Any) -> Iterator[SourceRecord]:
        for record in super().poll(partition, start, end):
            p = record.value["position"]
            record.key = {"id": p % KEYS}
            record.value = {"id": p % KEYS, **record.value}
            if self._note:
                record.value["note"] = f"note-{p}"
            yield record

    def value_schema(self) -> str:
        return "id BIGINT, position BIGINT, value BIGINT, increment BIGINT" + (", note STRING" if self._note else "")
