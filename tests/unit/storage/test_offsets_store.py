"""OffsetStore: source offsets per (connector, source partition) in Kafka Connect's offsets-topic format."""

from __future__ import annotations

import json

from sparkcat.storage.local.log import LocalLog
from sparkcat.storage.log import MemoryLog
from sparkcat.storage.offsets import OffsetStore, partition_key


def test_records_use_connects_exact_key_and_value_format(unique_name):
    backend = MemoryLog()
    OffsetStore(backend).put(unique_name, [({"increment": 1}, {"position": 3471})])
    [record] = backend.read()
    assert record.key == f'["{unique_name}",{{"increment":1}}]'
    assert record.value == b'{"position":3471}'


def test_put_offset_reads_back_per_partition(unique_name):
    store = OffsetStore(MemoryLog())
    store.put(unique_name, [({"increment": 1}, {"position": 5}), ({"increment": 2}, {"position": 7})])
    store.put(unique_name, [({"increment": 1}, {"position": 6})])
    assert store.get(unique_name) == {'{"increment":1}': {"position": 6}, '{"increment":2}': {"position": 7}}
    assert sorted(store.partitions(unique_name), key=lambda p: p[0]["increment"]) == [
        ({"increment": 1}, {"position": 6}), ({"increment": 2}, {"position": 7})]


def test_same_partition_in_different_key_order_is_one_partition(unique_name):
    store = OffsetStore(MemoryLog())
    store.put(unique_name, [({"file": "a.txt", "line": 0}, {"pos": 1})])
    store.put(unique_name, [({"line": 0, "file": "a.txt"}, {"pos": 2})])
    assert store.get(unique_name) == {partition_key({"file": "a.txt", "line": 0}): {"pos": 2}}
    assert len(store.partitions(unique_name)) == 1


def test_reset_of_partition_written_in_other_key_order_survives_compaction_and_restart(tmp_path, unique_name):
    """A reset must not be undone when the log is compacted (as Kafka's cleaner does) and re-read."""
    store = OffsetStore(LocalLog(tmp_path, unique_name))
    store.put("c", [({"file": "a.txt", "line": 0}, {"pos": 1})])
    store.put("c", [({"line": 0, "file": "a.txt"}, {"pos": 2})])
    store.reset("c")
    store.put("other", [({"p": 1}, {"pos": 9})])  # the reset is no longer the last record
    assert store.get("c") == {}
    store.backend.compact()
    store.close()
    assert OffsetStore(LocalLog(tmp_path, unique_name)).get("c") == {}


def test_null_offset_resets_one_partition(unique_name):
    backend = MemoryLog()
    store = OffsetStore(backend)
    store.put(unique_name, [({"p": 1}, {"pos": 1}), ({"p": 2}, {"pos": 2})])
    store.put(unique_name, [({"p": 1}, None)])
    assert store.get(unique_name) == {'{"p":2}': {"pos": 2}}
    assert backend.read()[-1].value is None
    assert OffsetStore(backend).get(unique_name) == {'{"p":2}': {"pos": 2}}  # a fresh reader agrees


def test_reset_connector_tombstones_every_partition(unique_name):
    backend = MemoryLog()
    store = OffsetStore(backend)
    store.put(unique_name, [({"p": 1}, {"pos": 1}), ({"p": 2}, {"pos": 2})])
    store.reset(unique_name)
    assert store.get(unique_name) == {}
    assert sorted((r.key, r.value) for r in backend.read(2)) == [
        (f'["{unique_name}",{{"p":1}}]', None), (f'["{unique_name}",{{"p":2}}]', None)]
    assert OffsetStore(backend).get(unique_name) == {}


def test_offsets_of_two_connectors_are_separate(unique_name):
    store = OffsetStore(MemoryLog())
    store.put(f"{unique_name}-a", [({"p": 1}, {"pos": 10})])
    store.put(f"{unique_name}-b", [({"p": 1}, {"pos": 20})])
    store.reset(f"{unique_name}-a")
    assert store.get(f"{unique_name}-a") == {}
    assert store.get(f"{unique_name}-b") == {'{"p":1}': {"pos": 20}}


def test_reads_records_exactly_as_kafka_connect_writes_them():
    backend = MemoryLog()
    key = b'["kafka-connect-increment",{"increment":1}]'
    backend.append([(key.decode("utf-8"), b'{"position":3471}')])
    store = OffsetStore(backend)
    assert store.partitions("kafka-connect-increment") == [({"increment": 1}, {"position": 3471})]
    assert store.get("kafka-connect-increment") == {'{"increment":1}': {"position": 3471}}


def test_unreadable_records_are_skipped_not_fatal(unique_name):
    backend = MemoryLog()
    backend.append([("not json", b"{}"), ('{"not":"a list"}', b"{}")])
    store = OffsetStore(backend)
    store.put(unique_name, [({"p": 1}, {"pos": 1})])
    assert store.get(unique_name) == {'{"p":1}': {"pos": 1}}


def test_offsets_written_by_another_store_are_seen_on_next_read(unique_name):
    backend = MemoryLog()
    reader, writer = OffsetStore(backend), OffsetStore(backend)
    assert reader.get(unique_name) == {}
    writer.put(unique_name, [({"p": 1}, {"pos": 4})])
    assert reader.get(unique_name) == {'{"p":1}': {"pos": 4}}


def test_offsets_survive_restart_on_local_log(tmp_path, unique_name):
    store = OffsetStore(LocalLog(tmp_path, "offsets"))
    store.put(unique_name, [({"increment": 1}, {"position": 3471})])
    store.put(unique_name, [({"increment": 2}, {"position": 1}), ({"increment": 2}, None)])
    store.close()
    reopened = OffsetStore(LocalLog(tmp_path, "offsets"))
    assert reopened.partitions(unique_name) == [({"increment": 1}, {"position": 3471})]
    first_line = json.loads((tmp_path / "offsets.log").read_text().splitlines()[0])
    assert (first_line["k"], first_line["v"]) == (f'["{unique_name}",{{"increment":1}}]', '{"position":3471}')
