"""Which checkpoint a query resumes from after leadership moved (sparkcat/runtime/execution/resume.py): pure logic on
offset logs given in memory (the real checkpoint and stores are in tests/integration/runtime/test_leadership_return.py)."""

from __future__ import annotations

from sparkcat.runtime.execution.resume import sink_divergence, source_divergence
from sparkcat.spark.driver.checkpoint_log import OffsetLog


def source_log(*ends: dict, committed: int | None = None) -> OffsetLog:
    """Batch i ends at ``ends[i]`` ({partition key: offset}); committed up to ``committed`` (default: the last)."""
    last = len(ends) - 1 if committed is None else committed
    return OffsetLog.of({i: {"offsets": e} for i, e in enumerate(ends)}, last)


def test_a_checkpoint_that_planned_every_stored_offset_is_kept():
    ck = source_log({"a": {"n": 5}, "b": {"n": 1}}, {"a": {"n": 9}, "b": {"n": 4}})
    # the store holds the last batch (written before Spark's commit), or lags by a batch (progress-written)
    assert source_divergence(ck, {"a": {"n": 9}, "b": {"n": 4}}) == []
    assert source_divergence(ck, {"a": {"n": 5}, "b": {"n": 4}}) == []


def test_an_offset_another_driver_committed_is_noticed_per_partition():
    ck = source_log({"a": {"n": 5}, "b": {"n": 1}}, {"a": {"n": 9}, "b": {"n": 4}})
    found = source_divergence(ck, {"a": {"n": 30}, "b": {"n": 4}})
    assert [(d.partition, d.checkpoint, d.committed) for d in found] == [("a", {"n": 9}, {"n": 30})]


def test_a_pending_batch_the_store_already_holds_is_not_a_divergence():
    # batch 1 was planned and written (an exactly-once transaction committed) but Spark did not commit it
    ck = source_log({"a": {"n": 5}}, {"a": {"n": 9}}, committed=0)
    assert source_divergence(ck, {"a": {"n": 9}}) == []


def test_a_partition_reset_in_the_store_is_noticed_but_one_never_committed_is_not():
    ck = source_log({"a": {"n": 5}, "b": None}, {"a": {"n": 9}, "b": None})
    assert [d.partition for d in source_divergence(ck, {})] == ["a"]  # b never had an offset
    first_batch_pending = source_log({"a": {"n": 5}}, committed=-1)
    assert source_divergence(first_batch_pending, {}) == []


def test_a_partition_new_to_the_checkpoint_starts_from_the_store_without_dropping_it():
    # a task config changed under the same checkpoint: the source reader joins "c" at its stored offset
    ck = source_log({"a": {"n": 5}})
    assert source_divergence(ck, {"a": {"n": 5}, "c": {"n": 77}}) == []


def test_only_as_many_batch_ends_are_read_as_needed():
    reads: list[int] = []
    ends = {i: {"offsets": {"a": {"n": i}}} for i in range(100)}
    ck = OffsetLog(list(ends), 99, lambda b: reads.append(b) or ends[b])
    assert source_divergence(ck, {"a": {"n": 99}}) == []
    assert reads == [99]  # the newest end held it


def test_kafka_positions_beyond_the_newest_planned_batch_are_noticed():
    ck = OffsetLog.of({7: {"orders": {"0": 100, "1": 50}}, 8: {"orders": {"0": 120, "1": 60}}}, 7)
    assert sink_divergence(ck, {"orders:0": 120, "orders:1": 55}) == []  # at or behind the checkpoint
    found = sink_divergence(ck, {"orders:0": 121, "orders:1": 60, "orders:2": 3})
    assert [(d.partition, d.checkpoint, d.committed) for d in found] == [("orders:0", 120, 121), ("orders:2", None, 3)]
