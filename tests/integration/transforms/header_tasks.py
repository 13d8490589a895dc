"""Test tasks for headers end to end (executors import them): an increment source that sets headers, a sink that keeps them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from sparkcat.api.records import SourceRecord
from sparkcat.connectors.increment import IncrementSourceTask
from tests.integration.spark.recording_sink import RecordingSinkTask


class HeaderIncrementTask(IncrementSourceTask):
    """The increment source's records, each with a text, a binary and a boolean header."""

    def poll(self, partition: dict[str, Any], start: Any, end: Any) -> Iterator[SourceRecord]:
        for record in super().poll(partition, start, end):
            record.headers = [("position", str(record.source_offset["position"])), ("raw", b"\x00\xff"),
                              ("flag", True)]
            yield record


class HeaderRecordingTask(RecordingSinkTask):
    """RecordingSinkTask that writes each record's headers (values as hex) instead of its key and value."""

    def flush(self, batch_id: int) -> None:
        rows = [{"offset": r.kafka_offset, "headers": [[k, None if v is None else bytes(v).hex()] for k, v in r.headers]}
                for r in self.records]
        (self.dir / f"{batch_id}-{self.task}-{self.instance}.json").write_text(json.dumps({"records": rows}))
        self.records = []
