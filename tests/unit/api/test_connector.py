"""The connector API's shared behaviour: config copies for tasks, and the sink task hooks' defaults."""

from __future__ import annotations

import pytest

from sparkcat.api import (
    BatchWriteContext, BatchWriter, ConfigDef, CopiesConfigToTasks, SinkConnector, SinkTask, SinkTaskContext, Type,
)
from sparkcat.errors import ConfigError


class _Sink(CopiesConfigToTasks, SinkConnector):
    task_count_key = "task.count"

    def config_def(self) -> ConfigDef:
        return ConfigDef().define("file", Type.STRING)

    def task_class(self) -> type[SinkTask]:
        return _Task


class _Task(SinkTask):
    def start(self, config: dict[str, str]) -> None:
        self.started = config

    def put(self, records: list) -> None:
        raise AssertionError("not called here")


def test_start_refuses_a_config_its_definition_refuses() -> None:
    with pytest.raises(ConfigError) as info:
        _Sink().start({"topics": "t"})
    assert "file" in info.value.errors


def test_task_configs_are_numbered_copies_with_the_count() -> None:
    sink = _Sink()
    sink.start({"file": "out.txt"})
    configs = sink.task_configs(2)
    assert configs == [{"file": "out.txt", "task.id": "0", "task.count": "2"},
                       {"file": "out.txt", "task.id": "1", "task.count": "2"}]
    configs[0]["file"] = "changed"
    assert sink.task_configs(1)[0]["file"] == "out.txt"


def test_sink_task_hooks_default_to_what_the_runtime_does_without_them() -> None:
    task = _Task()
    assert task.begin_batch(5) is True
    assert task.wants_raw_bytes is False
    context = SinkTaskContext("c", 1)
    task.initialize(context)
    assert task.context is context


def test_a_sink_connector_takes_records_through_put_unless_it_answers_native_write_or_batch_writer() -> None:
    assert not _Sink.writes_natively() and not _Sink.writes_batches()
    assert _Sink().batch_writer(BatchWriteContext("c", {}, "kafka")) is None

    class _Batches(_Sink):
        def batch_writer(self, context: BatchWriteContext) -> BatchWriter:
            raise AssertionError("not called here")

    assert _Batches.writes_batches() and not _Batches.writes_natively()
