"""The file sink: Connect's task layout, line rendering, and batches written once across crashes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sparkcat.api.records import SinkRecord, record_text
from sparkcat.connectors.file_sink import FileStreamSinkConnector, FileStreamSinkTask, sidecar_path
from sparkcat.errors import ConfigError


def _records(*values: Any) -> list[SinkRecord]:
    return [SinkRecord("t", 0, i, value=v) for i, v in enumerate(values)]


def _task(path: Path, task_id: str = "0", count: str = "1") -> FileStreamSinkTask:
    task = FileStreamSinkTask()
    task.start({"file": str(path), "task.id": task_id, "task.count": count})
    return task


def _run_batch(task: FileStreamSinkTask, batch_id: int, *values: Any) -> bool:
    if not task.begin_batch(batch_id):
        task.put(_records(*values))
        task.flush(batch_id)
        return False
    task.put(_records(*values))
    task.flush(batch_id)
    return True


def _crash_mid_batch(path: Path, batch_id: int, *values: Any) -> None:
    """Write part of a batch to disk and die before flush records it."""
    task = _task(path)
    assert task.begin_batch(batch_id)
    task.put(_records(*values))
    assert task._out is not None
    task._out.close()  # the lines reached the file, the commit never happened
    task._out = None


def test_task_configs_are_identical_but_numbered(tmp_path: Path) -> None:
    connector = FileStreamSinkConnector()
    config = {"name": "sink", "connector.class": "FileStreamSink", "topics": "t", "file": str(tmp_path / "o")}
    connector.start(config)
    configs = connector.task_configs(3)
    assert [c["task.id"] for c in configs] == ["0", "1", "2"]
    assert all(c["task.count"] == "3" and {k: c[k] for k in config} == config for c in configs)
    assert connector.task_class() is FileStreamSinkTask


def test_file_is_required() -> None:
    with pytest.raises(ConfigError, match='Missing required configuration "file"'):
        FileStreamSinkConnector().start({"topics": "t"})


def test_values_become_lines(tmp_path: Path) -> None:
    path = tmp_path / "out.txt"
    task = _task(path)
    assert _run_batch(task, 0, "plain", {"a": 1, "b": [1, "é"]}, [1, 2], None, True, 3.5, b"raw")
    task.stop()
    assert path.read_text(encoding="utf-8").splitlines() == [
        "plain", '{"a":1,"b":[1,"é"]}', "[1,2]", "null", "true", "3.5", "raw",
    ]


def test_a_row_like_value_is_written_as_json() -> None:
    class Row:
        def asDict(self, recursive: bool = False) -> dict[str, Any]:
            return {"x": 1}

    assert record_text(Row()) == '{"x":1}'


def test_committed_batch_is_skipped_on_replay(tmp_path: Path) -> None:
    path = tmp_path / "out.txt"
    task = _task(path)
    assert _run_batch(task, 0, "a", "b")
    assert _run_batch(task, 1, "c")
    task.stop()
    again = _task(path)
    assert not _run_batch(again, 1, "c")
    assert not _run_batch(again, 0, "a", "b")
    assert _run_batch(again, 2, "d")
    again.stop()
    assert path.read_text().splitlines() == ["a", "b", "c", "d"]
    state = json.loads(Path(sidecar_path(str(path), "0")).read_text())
    assert state["batch"] == 2 and state["state"] == "committed"


def test_replay_after_crash_mid_batch_leaves_no_duplicates(tmp_path: Path) -> None:
    path = tmp_path / "out.txt"
    task = _task(path)
    assert _run_batch(task, 0, "a", "b")
    task.stop()
    _crash_mid_batch(path, 1, "c", "d")
    assert path.read_text().splitlines() == ["a", "b", "c", "d"]
    replay = _task(path)
    assert _run_batch(replay, 1, "c", "d", "e")
    replay.stop()
    assert path.read_text().splitlines() == ["a", "b", "c", "d", "e"]


def test_crash_after_fsync_before_commit_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "out.txt"
    task = _task(path)
    assert _run_batch(task, 0, "a")
    real_write = FileStreamSinkTask._write_state

    def failing_commit(self: FileStreamSinkTask, state: dict[str, Any]) -> None:
        if state["state"] == "committed":
            raise OSError("crash")
        real_write(self, state)

    monkeypatch.setattr(FileStreamSinkTask, "_write_state", failing_commit)
    assert task.begin_batch(1)
    task.put(_records("b", "c"))
    with pytest.raises(OSError):
        task.flush(1)
    task.stop()
    monkeypatch.setattr(FileStreamSinkTask, "_write_state", real_write)
    replay = _task(path)
    assert _run_batch(replay, 1, "b", "c")
    replay.stop()
    assert path.read_text().splitlines() == ["a", "b", "c"]


def test_shared_file_is_never_cut_back(tmp_path: Path) -> None:
    path = tmp_path / "out.txt"
    first, second = _task(path, "0", "2"), _task(path, "1", "2")
    assert first.begin_batch(0)
    first.put(_records("from-0"))
    assert first._out is not None
    first._out.close()
    first._out = None  # task 0 dies mid-batch
    assert _run_batch(second, 0, "from-1")
    replay = _task(path, "0", "2")
    assert _run_batch(replay, 0, "from-0")
    for t in (second, replay):
        t.stop()
    lines = path.read_text().splitlines()
    assert "from-1" in lines and lines.count("from-0") == 2  # at-least-once for the crash window


def test_without_begin_batch_it_appends_like_connect(tmp_path: Path) -> None:
    path = tmp_path / "out.txt"
    path.write_text("existing\n")
    task = _task(path)
    task.put(_records("x"))
    task.flush(0)
    task.stop()
    assert path.read_text().splitlines() == ["existing", "x"]


# ---- in a query shared with other sinks: replays come with new ids, records are skipped by Kafka position


def _shared_task(path: Path) -> FileStreamSinkTask:
    from sparkcat.api.task_context import SinkTaskContext
    task = FileStreamSinkTask()
    task.initialize(SinkTaskContext("files", 0, shared_query=True))
    task.start({"file": str(path), "task.id": "0", "task.count": "1"})
    return task


def _kafka(first: int, *values: str, partition: int = 0) -> list[SinkRecord]:
    return [SinkRecord("t", partition, first + i, value=v) for i, v in enumerate(values)]


def test_in_a_shared_query_records_made_durable_before_are_skipped_whatever_the_batch_id(tmp_path: Path) -> None:
    path = tmp_path / "out.txt"
    task = _shared_task(path)
    assert task.begin_batch(9_000)
    task.put(_kafka(0, "a", "b") + _kafka(0, "x", partition=1))
    task.flush(9_000)
    task.stop()
    # the driver died before storing the positions: the same records come again, in a batch of a lower id
    again = _shared_task(path)
    assert again.begin_batch(5)
    again.put(_kafka(0, "a", "b", "c") + _kafka(0, "x", "y", partition=1))
    again.flush(5)
    assert path.read_text().splitlines() == ["a", "b", "x", "c", "y"]
    assert json.loads(Path(sidecar_path(str(path), "0")).read_text())["positions"] == {"t:0": 3, "t:1": 2}


def test_in_a_shared_query_a_batch_that_died_is_cut_back_whatever_the_next_id(tmp_path: Path) -> None:
    path = tmp_path / "out.txt"
    task = _shared_task(path)
    assert task.begin_batch(1)
    task.put(_kafka(0, "a"))
    task.flush(1)
    assert task.begin_batch(2)
    task.put(_kafka(1, "b", "c"))
    assert task._out is not None
    task._out.close()  # "b" and "c" reached the file; the commit never happened
    task._out = None
    again = _shared_task(path)
    assert again.begin_batch(7)
    again.put(_kafka(1, "b", "c", "d"))
    again.flush(7)
    assert path.read_text().splitlines() == ["a", "b", "c", "d"]


def test_a_query_of_its_own_keeps_skipping_by_batch_id(tmp_path: Path) -> None:
    path = tmp_path / "out.txt"
    task = _task(path)
    assert _run_batch(task, 3, "a")
    assert not task.begin_batch(2)  # a replayed id below the committed one: its records are skipped


def test_a_task_moved_from_a_shared_query_to_its_own_skips_by_position_not_by_the_shared_batch_ids(tmp_path: Path):
    # A shared query's batch ids run far ahead of a new query's (which starts at 0): compared by id, the own query's
    # first batches were "already committed" and their records lost.
    path = tmp_path / "out.txt"
    task = _shared_task(path)
    assert task.begin_batch(900)
    task.put(_kafka(0, "a", "b"))
    task.flush(900)
    task.stop()
    alone = _task(path)  # no shared query: a connector evicted for a slow task, or given transforms
    assert alone.begin_batch(0)
    alone.put(_kafka(0, "a", "b", "c"))  # from its stored positions, which the driver had not stored yet
    alone.flush(0)
    assert alone.begin_batch(1)
    alone.put(_kafka(3, "d"))
    alone.flush(1)
    assert path.read_text().splitlines() == ["a", "b", "c", "d"]
