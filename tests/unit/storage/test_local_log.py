"""LocalLog: the JSON-lines keyed log a single driver writes under its state directory."""

from __future__ import annotations

import json

import pytest

from sparkcat.errors import StorageError
from sparkcat.storage.local.log import LocalLog


@pytest.fixture
def log_dir(tmp_path):
    return tmp_path / "state"


def _pairs(records):
    return [(r.offset, r.key, r.value) for r in records]


def test_appended_records_read_back_in_order_with_dense_offsets(log_dir, unique_name):
    log = LocalLog(log_dir, unique_name)
    log.append([("a", b'{"x":1}'), ("b", b'{"x":2}')])
    log.append([("a", b'{"x":3}')])
    assert _pairs(log.read()) == [(0, "a", b'{"x":1}'), (1, "b", b'{"x":2}'), (2, "a", b'{"x":3}')]
    assert log.end_offset() == 3
    log.close()


def test_empty_log_reads_nothing_and_starts_at_offset_zero(log_dir, unique_name):
    log = LocalLog(log_dir, unique_name)
    assert log.read() == []
    assert log.end_offset() == 0


def test_tombstone_reads_back_as_none_value(log_dir, unique_name):
    log = LocalLog(log_dir, unique_name)
    log.append([("k", b'"v"'), ("k", None)])
    assert _pairs(log.read()) == [(0, "k", b'"v"'), (1, "k", None)]
    log.close()


def test_non_ascii_text_round_trips(log_dir, unique_name):
    log = LocalLog(log_dir, unique_name)
    log.append([("clé", '{"v":"çà ✓"}'.encode())])
    assert log.read()[0].value.decode() == '{"v":"çà ✓"}'
    log.close()


def test_non_utf8_value_is_rejected_with_storage_error(log_dir, unique_name):
    log = LocalLog(log_dir, unique_name)
    with pytest.raises(StorageError, match="UTF-8"):
        log.append([("k", b"\xff\xfe")])
    log.close()


def test_new_instance_after_restart_reads_everything_and_continues_offsets(log_dir, unique_name):
    first = LocalLog(log_dir, unique_name)
    first.append([("a", b"1"), ("b", b"2")])
    first.close()

    second = LocalLog(log_dir, unique_name)
    assert _pairs(second.read()) == [(0, "a", b"1"), (1, "b", b"2")]
    assert second.end_offset() == 2
    second.append([("c", b"3")])
    assert _pairs(second.read(2)) == [(2, "c", b"3")]
    second.close()


def test_second_writer_on_same_directory_fails_naming_lock_file(log_dir, unique_name):
    writer = LocalLog(log_dir, unique_name)
    writer.append([("a", b"1")])
    intruder = LocalLog(log_dir, unique_name)
    with pytest.raises(StorageError) as excinfo:
        intruder.append([("b", b"2")])
    assert str(log_dir / f"{unique_name}.lock") in excinfo.value.message
    assert _pairs(writer.read()) == [(0, "a", b"1")]  # nothing of the intruder's was written
    writer.close()


def test_writer_lock_is_released_on_close(log_dir, unique_name):
    writer = LocalLog(log_dir, unique_name)
    writer.append([("a", b"1")])
    writer.close()
    successor = LocalLog(log_dir, unique_name)
    successor.append([("b", b"2")])
    assert [r.key for r in successor.read()] == ["a", "b"]
    successor.close()


def test_reader_sees_records_while_writer_holds_lock(log_dir, unique_name):
    writer = LocalLog(log_dir, unique_name)
    writer.append([("a", b"1")])
    reader = LocalLog(log_dir, unique_name)
    assert _pairs(reader.read()) == [(0, "a", b"1")]
    writer.append([("b", b"2")])
    assert _pairs(reader.read(1)) == [(1, "b", b"2")]
    assert reader.end_offset() == 2
    writer.close()


def test_torn_last_line_is_ignored_then_cut_by_next_writer(log_dir, unique_name):
    first = LocalLog(log_dir, unique_name)
    first.append([("a", b"1"), ("b", b"2")])
    first.close()
    with open(log_dir / f"{unique_name}.log", "a", encoding="utf-8") as f:
        f.write('{"o": 2, "k": "torn", "v": "{\\"hal')  # a crash mid-write: no newline

    reader = LocalLog(log_dir, unique_name)
    assert [r.key for r in reader.read()] == ["a", "b"]
    assert reader.end_offset() == 2

    writer = LocalLog(log_dir, unique_name)
    writer.append([("c", b"3")])
    assert _pairs(writer.read()) == [(0, "a", b"1"), (1, "b", b"2"), (2, "c", b"3")]
    assert _pairs(LocalLog(log_dir, unique_name).read()) == [(0, "a", b"1"), (1, "b", b"2"), (2, "c", b"3")]
    lines = (log_dir / f"{unique_name}.log").read_text().splitlines()
    assert [json.loads(line)["k"] for line in lines] == ["a", "b", "c"]
    writer.close()


def test_compact_keeps_newest_per_key_and_offsets_keep_increasing(log_dir, unique_name):
    log = LocalLog(log_dir, unique_name)
    log.append([("a", b"1"), ("b", b"1"), ("a", b"2"), ("c", b"1"), ("c", None), ("b", b"2")])
    log.compact()
    assert _pairs(log.read()) == [(2, "a", b"2"), (5, "b", b"2")]
    log.append([("d", b"1")])
    assert _pairs(log.read(6)) == [(6, "d", b"1")]
    assert log.end_offset() == 7
    log.close()
    assert _pairs(LocalLog(log_dir, unique_name).read()) == [(2, "a", b"2"), (5, "b", b"2"), (6, "d", b"1")]


def test_compact_keeps_a_trailing_tombstone_so_offsets_do_not_go_back_after_restart(log_dir, unique_name):
    log = LocalLog(log_dir, unique_name)
    log.append([("a", b"1"), ("b", b"1"), ("b", None)])
    log.compact()
    log.close()
    reopened = LocalLog(log_dir, unique_name)
    assert reopened.end_offset() == 3
    reopened.append([("c", b"1")])
    assert reopened.read()[-1].offset == 3
    reopened.close()


def test_read_from_the_middle_returns_only_later_records(log_dir, unique_name):
    log = LocalLog(log_dir, unique_name)
    log.append([(f"k{i}", str(i).encode()) for i in range(5)])
    assert [r.offset for r in log.read(3)] == [3, 4]
    assert [r.offset for r in log.read(1)] == [1, 2, 3, 4]  # going back re-reads
    assert log.read(5) == []
    log.close()


def test_reader_picks_up_a_line_once_its_write_completes(log_dir, unique_name):
    writer = LocalLog(log_dir, unique_name)
    writer.append([("a", b"1")])
    path = log_dir / f"{unique_name}.log"
    line = json.dumps({"o": 1, "k": "b", "v": "2"}) + "\n"
    reader = LocalLog(log_dir, unique_name)
    with open(path, "a", encoding="utf-8") as f:
        f.write(line[:10])
    assert [r.key for r in reader.read()] == ["a"]
    with open(path, "a", encoding="utf-8") as f:
        f.write(line[10:])
    assert _pairs(reader.read(1)) == [(1, "b", b"2")]
    writer.close()
