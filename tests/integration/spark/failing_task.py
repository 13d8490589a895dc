"""An increment task that fails on purpose; importable on executors (the repo is on PYTHONPATH)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sparkcat.api.records import SourceRecord
from sparkcat.connectors.increment import IncrementSourceTask

FAIL_AFTER_CONFIG = "fail.after.position"


class FailingSourceTask(IncrementSourceTask):
    """Raises in ``poll`` once a range goes past position ``fail.after.position`` (unset: never)."""

    def start(self, config: dict[str, str]) -> None:
        super().start(config)
        value = config.get(FAIL_AFTER_CONFIG)
        self._fail_after = None if value is None else int(value)

    def poll(self, partition: dict[str, Any], start: Any, end: Any) -> Iterator[SourceRecord]:
        if self._fail_after is not None and int(end["position"]) > self._fail_after:
            raise ValueError(f"injected failure past position {self._fail_after}")
        yield from super().poll(partition, start, end)
