"""A sink task that records what it was given, one JSON file per task instance and batch (executors import it)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from sparkcat.api.connector import SinkTask
from sparkcat.api.records import SinkRecord

DIR_CONFIG = "record.dir"
FAIL_AT_CONFIG = "fail.at.offset"  # "topic:partition:offset": put raises when it gets that record


class RecordingSinkTask(SinkTask):
    """Keeps the records of a batch; ``flush`` writes them to ``DIR/<batch>-<task>-<instance>.json``."""

    wants_raw_bytes = True

    def start(self, config: dict[str, str]) -> None:
        self.dir = Path(config[DIR_CONFIG])
        self.task = int(config["task.id"])
        self.fail_at = config.get(FAIL_AT_CONFIG)
        self.instance = uuid.uuid4().hex[:8]
        self.records: list[SinkRecord] = []

    def put(self, records: list[SinkRecord]) -> None:
        for r in records:
            if self.fail_at == f"{r.topic}:{r.kafka_partition}:{r.kafka_offset}":
                raise ValueError(f"injected failure at {self.fail_at}")
        self.records.extend(records)

    def flush(self, batch_id: int) -> None:
        rows = [{"topic": r.topic, "partition": r.kafka_partition, "offset": r.kafka_offset,
                 "key": None if r.key is None else r.key.decode(), "value": None if r.value is None else r.value.decode(),
                 "timestamp": r.timestamp_ms} for r in self.records]
        path = self.dir / f"{batch_id}-{self.task}-{self.instance}.json"
        path.write_text(json.dumps({"batch": batch_id, "task": self.task, "instance": self.instance, "records": rows}))
        self.records = []

    def stop(self) -> None:
        pass


def recorded(directory: Path) -> list[dict]:
    """Every file the tasks wrote, as dicts (batch, task, instance, records)."""
    return [json.loads(p.read_text()) for p in sorted(directory.glob("*.json"))]
