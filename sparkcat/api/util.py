"""Helpers for connector authors, mirroring Kafka Connect's ``ConnectorUtils``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

__all__ = ["group_partitions", "partition_key"]

T = TypeVar("T")


def group_partitions(items: Sequence[T], num_groups: int) -> list[list[T]]:
    """Split ``items`` into ``num_groups`` contiguous chunks, as Connect's ``groupPartitions`` does.

    Used in ``task_configs`` to spread work over ``tasks.max`` tasks: the first
    ``len(items) % num_groups`` groups get one extra item, and when there are more groups
    than items the trailing groups are empty.

    >>> tables = ["departments", "employees", "dept_emp", "dept_manager", "titles", "salaries"]
    >>> group_partitions(tables, 3)
    [['departments', 'employees'], ['dept_emp', 'dept_manager'], ['titles', 'salaries']]
    >>> group_partitions(["a", "b"], 4)
    [['a'], ['b'], [], []]
    """
    if num_groups <= 0:
        raise ValueError("Number of groups must be positive.")
    per_group, leftover = divmod(len(items), num_groups)
    result: list[list[T]] = []
    start = 0
    for group in range(num_groups):
        size = per_group + 1 if group < leftover else per_group
        result.append(list(items[start : start + size]))
        start += size
    return result


def partition_key(partition: dict) -> str:
    """The canonical JSON text of a source partition (sorted keys, compact), used as a dict key for offsets.

    >>> partition_key({"b": 1, "a": "x"})
    '{"a":"x","b":1}'
    """
    import json

    return json.dumps(partition, sort_keys=True, separators=(",", ":"))
