"""The exactly-once copy's replay filter and the test-only kill points, without Spark or a broker."""

from __future__ import annotations

import pyarrow as pa

from sparkcat.spark import kill_points
from sparkcat.kafka.producers import task_transactional_id as transactional_id
from sparkcat.spark.kafka_copy_eos import _positions, _unwritten


def rows(topic: str, partitions: list[int], offsets: list[int]) -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict({"topic": [topic] * len(offsets), "partition": pa.array(partitions, pa.int32()),
                                       "offset": pa.array(offsets, pa.int64())})


def test_rows_below_their_partitions_committed_position_are_skipped_the_rest_rewritten():
    batch = rows("t", [0, 0, 0, 1, 1, 2], [10, 11, 12, 5, 6, 0])
    kept = _unwritten(batch, {"t:0": 12, "t:1": 7, "other:2": 99})  # t:2 never committed
    assert list(zip(kept.column("partition").to_pylist(), kept.column("offset").to_pylist())) == [(0, 12), (2, 0)]
    assert _unwritten(batch, {}).num_rows == 6


def test_positions_are_the_next_offset_per_source_partition():
    ends: dict = {}
    _positions(rows("t", [0, 1, 0], [4, 9, 7]), ends)
    _positions(rows("t", [0], [8]), ends)
    assert ends == {("t", 0): 9, ("t", 1): 10}


def test_transactional_ids_are_connects():
    assert transactional_id("connect-cluster", "orders-copy", 2) == "connect-cluster-orders-copy-2"


def test_kill_points_hold_only_where_the_environment_says(monkeypatch):
    monkeypatch.setenv(kill_points.HOLD_ENV, "a=copy-mid-write@1:0, b=delta-after-commit@2")
    assert kill_points._wanted("a", "copy-mid-write", 1, 0)
    assert not kill_points._wanted("a", "copy-mid-write", 1, 1)
    assert not kill_points._wanted("a", "copy-mid-write", 2, 0)
    assert kill_points._wanted("b", "delta-after-commit", 2, None)
    assert not kill_points._wanted("c", "delta-after-commit", 2, None)
    kill_points.hold("c", "copy-mid-write", 1, 0)  # returns at once
