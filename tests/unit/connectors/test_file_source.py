"""The file source: complete lines only, Connect's partition/offset format, exact replayable ranges."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

import sparkcat.connectors.file_source as fs
from sparkcat.api import partition_key
from sparkcat.connectors.file_source import FileStreamSourceConnector, FileStreamSourceTask
from sparkcat.errors import ConfigError


def _task(path: Path, **extra: str) -> FileStreamSourceTask:
    task = FileStreamSourceTask()
    task.start({"file": str(path), "topic": "connect-test", **extra})
    return task


def _latest(task: FileStreamSourceTask, path: Path, current: dict | None = None) -> dict | None:
    key = partition_key({"filename": str(path)})
    return task.latest_offsets({key: current} if current is not None else {})[key]


def _connect_offsets(data: bytes, chunk: int) -> list[tuple[str, int]]:
    """What Connect's FileStreamSourceTask emits for ASCII ``data`` read ``chunk`` chars at a time (a model)."""
    out: list[tuple[str, int]] = []
    pending, offset = "", 0
    text = data.decode("ascii")
    for i in range(0, len(text), chunk):
        pending += text[i : i + chunk]
        while True:
            cut = None
            for j, ch in enumerate(pending):
                if ch == "\n":
                    cut = (j, j + 1)
                    break
                if ch == "\r":
                    if j + 1 >= len(pending):
                        break  # cannot tell \r from \r\n yet
                    cut = (j, j + 2 if pending[j + 1] == "\n" else j + 1)
                    break
            if cut is None:
                break
            offset += cut[1]
            out.append((pending[: cut[0]], offset))
            pending = pending[cut[1] :]
    return out


def test_partition_and_offsets_use_connects_keys(tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    path.write_bytes(b"a\nbb\r\nccc\rdd")
    task = _task(path)
    assert task.partitions() == [{"filename": str(path)}]
    end = _latest(task, path)
    assert end == {"position": 10}  # "dd" has no terminator yet
    records = list(task.poll({"filename": str(path)}, None, end))
    assert [(r.value, r.source_offset) for r in records] == [
        ("a", {"position": 2}),
        ("bb", {"position": 6}),
        ("ccc", {"position": 10}),
    ]
    assert all(r.source_partition == {"filename": str(path)} and r.topic == "connect-test" for r in records)
    assert task.value_schema() == "STRING"


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 1024])
def test_offsets_equal_connects_byte_positions(tmp_path: Path, chunk: int) -> None:
    data = b"first\nsecond\r\n\nthird\rfourth\r\r\nfifth\n\r\nsixth\r\n"
    path = tmp_path / "in.txt"
    path.write_bytes(data)
    task = _task(path)
    end = _latest(task, path)
    assert end == {"position": len(data)}
    ours = [(r.value, r.source_offset["position"]) for r in task.poll({"filename": str(path)}, None, end)]
    assert ours == _connect_offsets(data, chunk)


def test_only_complete_lines_are_read(tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    path.write_bytes(b"")
    task = _task(path)
    assert _latest(task, path) == {"position": 0}
    path.write_bytes(b"partial")
    assert _latest(task, path) == {"position": 0}
    path.write_bytes(b"partial\r")  # could still become \r\n
    assert _latest(task, path) == {"position": 0}
    with path.open("ab") as f:
        f.write(b"\nnext")
    assert _latest(task, path) == {"position": 9}
    assert [r.value for r in task.poll({"filename": str(path)}, None, {"position": 9})] == ["partial"]


def test_continues_from_a_committed_offset(tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    path.write_bytes(b"one\ntwo\n")
    task = _task(path)
    with path.open("ab") as f:
        f.write(b"three\nfour\nfi")
    assert _latest(task, path, {"position": 8}) == {"position": 19}
    records = list(task.poll({"filename": str(path)}, {"position": 8}, {"position": 19}))
    assert [(r.value, r.source_offset["position"]) for r in records] == [("three", 14), ("four", 19)]
    assert _latest(task, path, {"position": 19}) == {"position": 19}


def test_poll_is_deterministic_and_ranges_compose(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fs, "_READ_CHUNK", 3)
    monkeypatch.setattr(fs, "_TAIL_BLOCK", 2)
    path = tmp_path / "in.txt"
    lines = [f"line {i} " + "x" * (i % 5) for i in range(40)]
    path.write_bytes(("\r\n".join(lines) + "\r\n").encode())
    task = _task(path)
    p = {"filename": str(path)}
    end = _latest(task, path)
    whole = list(task.poll(p, None, end))
    assert [r.value for r in whole] == lines
    assert whole == list(task.poll(p, None, end))
    middle = whole[9].source_offset
    assert list(task.poll(p, None, middle)) + list(task.poll(p, middle, end)) == whole


def test_advance_counts_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fs, "_READ_CHUNK", 4)
    path = tmp_path / "in.txt"
    path.write_bytes(b"a\r\nb\nc\rd\ne\n")
    task = _task(path)
    p = {"filename": str(path)}
    end = _latest(task, path)
    assert end == {"position": 11}
    assert task.advance(p, None, end, 2) == {"position": 5}
    assert task.advance(p, {"position": 5}, end, 2) == {"position": 9}
    assert task.advance(p, {"position": 9}, end, 10) == end
    assert task.advance(p, {"position": 5}, end, 0) == {"position": 5}
    admitted = task.advance(p, {"position": 3}, end, 3)
    assert [r.value for r in task.poll(p, {"position": 3}, admitted)] == ["b", "c", "d"]


def test_positions_are_bytes_and_text_is_utf8(tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    path.write_bytes("héllo\nwörld\n".encode())
    task = _task(path)
    records = list(task.poll({"filename": str(path)}, None, _latest(task, path)))
    assert [(r.value, r.source_offset["position"]) for r in records] == [("héllo", 7), ("wörld", 14)]


def test_missing_file_keeps_the_offset_and_logs_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "later.txt"
    task = _task(path)
    with caplog.at_level(logging.WARNING, logger=fs.__name__):
        assert _latest(task, path) is None
        assert _latest(task, path, {"position": 4}) == {"position": 4}
    assert len([r for r in caplog.records if "Couldn't find file" in r.message]) == 1
    path.write_bytes(b"now\n")
    assert _latest(task, path) == {"position": 4}


def test_one_task_whatever_tasks_max(tmp_path: Path) -> None:
    connector = FileStreamSourceConnector()
    config = {"name": "src", "connector.class": "FileStreamSource", "file": str(tmp_path / "f"), "topic": "t"}
    connector.start(config)
    assert connector.task_configs(5) == [config]
    assert connector.task_class() is FileStreamSourceTask


def test_config_rules() -> None:
    with pytest.raises(ConfigError, match="requires definition of a single topic"):
        FileStreamSourceConnector().start({"file": "/tmp/x", "topic": "a,b"})
    with pytest.raises(ConfigError, match='Missing required configuration "file"'):
        FileStreamSourceConnector().start({"topic": "a"})
    with pytest.raises(ConfigError, match="topic"):
        FileStreamSourceConnector().start({"file": "/tmp/x", "topic": " "})
    parsed = FileStreamSourceConnector().config_def().parse({"file": "/tmp/x", "topic": "t"})
    assert parsed["batch.size"] == 2000
