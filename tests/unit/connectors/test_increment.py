"""The increment source: task grouping, exact replayable ranges, admission and validation."""

from __future__ import annotations

import pytest

from sparkcat.api import partition_key
from sparkcat.connectors.increment import IncrementSourceConnector, IncrementSourceTask
from sparkcat.errors import ConfigError


def _task(**config: str) -> IncrementSourceTask:
    task = IncrementSourceTask()
    task.start({"increments": "1,100", **config})
    return task


def _configs(increments: str, max_tasks: int, **extra: str) -> list[dict[str, str]]:
    connector = IncrementSourceConnector()
    connector.start({"name": "seq", "connector.class": "increment", "increments": increments, **extra})
    return connector.task_configs(max_tasks)


def test_one_task_gets_every_increment() -> None:
    configs = _configs("1,100", 1)
    assert [c["increments"] for c in configs] == ["1,100"]
    assert configs[0]["topic.prefix"] == "seq_"


def test_two_tasks_get_one_increment_each() -> None:
    configs = _configs("1,100", 2, **{"topic.prefix": "n_"})
    assert [c["increments"] for c in configs] == ["1", "100"]
    assert all(c["topic.prefix"] == "n_" for c in configs)


def test_never_more_tasks_than_increments() -> None:
    assert [c["increments"] for c in _configs("1,100", 3)] == ["1", "100"]
    assert [c["increments"] for c in _configs("1,2,3,4,5", 3)] == ["1,2", "3,4", "5"]


def test_task_configs_start_tasks() -> None:
    configs = _configs("1,100", 2, **{"records.per.poll": "7"})
    assert _configs("1", 1, throughput="2.5")[0]["throughput"] == "2.5"
    task = IncrementSourceTask()
    task.start(configs[1])
    assert task.partitions() == [{"increment": 100}]
    assert task.latest_offsets({}) == {partition_key({"increment": 100}): {"position": 7}}


@pytest.mark.parametrize("bad, named", [("1,x", "'x'"), ("5,0", "'0'"), ("2,-3", "'-3'"), ("1,1.5", "'1.5'"),
                                        ("4,4", "'4'")])
def test_bad_increments_are_named(bad: str, named: str) -> None:
    with pytest.raises(ConfigError) as info:
        IncrementSourceConnector().start({"increments": bad})
    assert named in info.value.message
    assert "increments" in info.value.errors


def test_increments_are_required() -> None:
    with pytest.raises(ConfigError, match='Missing required configuration "increments"'):
        IncrementSourceConnector().start({})


def test_partitions_and_schema() -> None:
    task = _task()
    assert task.partitions() == [{"increment": 1}, {"increment": 100}]
    assert task.value_schema() == "position BIGINT, value BIGINT, increment BIGINT"


def test_poll_yields_exactly_the_range() -> None:
    task = _task()
    records = list(task.poll({"increment": 100}, None, {"position": 3}))
    assert [r.source_offset for r in records] == [{"position": 1}, {"position": 2}, {"position": 3}]
    assert [r.value for r in records] == [
        {"position": 1, "value": 100, "increment": 100},
        {"position": 2, "value": 200, "increment": 100},
        {"position": 3, "value": 300, "increment": 100},
    ]
    assert {r.topic for r in records} == {"seq_100"}
    assert all(r.source_partition == {"increment": 100} and r.key is None for r in records)


def test_poll_continues_from_an_offset_and_is_deterministic() -> None:
    task = _task(**{"topic.prefix": "p"})
    whole = list(task.poll({"increment": 1}, None, {"position": 10}))
    assert whole == list(task.poll({"increment": 1}, None, {"position": 10}))
    split = list(task.poll({"increment": 1}, None, {"position": 4})) + list(
        task.poll({"increment": 1}, {"position": 4}, {"position": 10})
    )
    assert split == whole
    tail = list(task.poll({"increment": 1}, {"position": 4}, {"position": 6}))
    assert [(r.value["position"], r.value["value"], r.topic) for r in tail] == [(5, 5, "p1"), (6, 6, "p1")]
    assert list(task.poll({"increment": 1}, {"position": 6}, {"position": 6})) == []


def test_latest_offsets_plan_records_per_poll_ahead() -> None:
    task = _task(**{"records.per.poll": "50"})
    one, hundred = partition_key({"increment": 1}), partition_key({"increment": 100})
    assert task.latest_offsets({}) == {one: {"position": 50}, hundred: {"position": 50}}
    assert task.latest_offsets({one: {"position": 20}, hundred: None}) == {
        one: {"position": 70},
        hundred: {"position": 50},
    }


def test_advance_admits_at_most_max_records() -> None:
    task = _task()
    p = {"increment": 1}
    assert task.advance(p, None, {"position": 1000}, 10) == {"position": 10}
    assert task.advance(p, {"position": 995}, {"position": 1000}, 10) == {"position": 1000}
    assert task.advance(p, {"position": 7}, {"position": 1000}, 0) == {"position": 7}
    admitted = task.advance(p, {"position": 7}, {"position": 1000}, 3)
    assert len(list(task.poll(p, {"position": 7}, admitted))) == 3


def test_throughput_limits_what_the_driver_plans() -> None:
    now = [100.0]
    task = IncrementSourceTask()
    task._clock = lambda: now[0]
    task.start({"increments": "5", "throughput": "10", "records.per.poll": "1000"})
    key = partition_key({"increment": 5})
    assert task.latest_offsets({}) == {key: {"position": 0}}
    now[0] = 101.5
    assert task.latest_offsets({}) == {key: {"position": 15}}
    now[0] = 1000.0
    assert task.latest_offsets({key: {"position": 15}}) == {key: {"position": 1015}}


def test_throughput_must_be_positive_or_unlimited() -> None:
    with pytest.raises(ConfigError, match="throughput"):
        IncrementSourceTask().start({"increments": "1", "throughput": "0"})
