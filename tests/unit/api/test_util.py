"""group_partitions spreads work over tasks exactly as Connect's ConnectorUtils.groupPartitions."""

from __future__ import annotations

import pytest

from sparkcat.api.util import group_partitions


def test_six_tables_over_three_tasks() -> None:
    tables = ["departments", "employees", "dept_emp", "dept_manager", "titles", "salaries"]
    assert group_partitions(tables, 3) == [
        ["departments", "employees"],
        ["dept_emp", "dept_manager"],
        ["titles", "salaries"],
    ]


def test_first_groups_take_the_leftover() -> None:
    assert group_partitions(["a", "b", "c", "d", "e"], 3) == [["a", "b"], ["c", "d"], ["e"]]


def test_more_groups_than_items_leaves_trailing_groups_empty() -> None:
    assert group_partitions(["a", "b"], 4) == [["a"], ["b"], [], []]


def test_no_items() -> None:
    assert group_partitions([], 2) == [[], []]


def test_one_group_holds_everything_in_order() -> None:
    assert group_partitions(("x", "y", "z"), 1) == [["x", "y", "z"]]


@pytest.mark.parametrize("num_groups", [0, -1])
def test_non_positive_group_count_is_rejected(num_groups: int) -> None:
    with pytest.raises(ValueError, match="Number of groups must be positive."):
        group_partitions(["a"], num_groups)
