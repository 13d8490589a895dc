"""KIP-1004: a connector generating more task configs than tasks.max fails, unless tasks.max.enforce=false."""

from __future__ import annotations

import pytest

from sparkcat import plugins
from sparkcat.config.connector import connector_settings
from sparkcat.config.validation import validate_connector_config
from sparkcat.runtime.execution.connector_instance import TooManyTasksError, task_configs
from tests.unit.runtime.execution.reconciler_helpers import INC, reconciler_on_memory, settle
from tests.unit.runtime.execution.test_reconciler import FakeRunner


def _greedy_increment(count: int):
    """An increment connector whose task_configs ignores max_tasks and returns ``count`` configs."""
    instance = plugins.connector_class("increment")()
    instance.task_configs = lambda max_tasks: [{"increments": str(i)} for i in range(count)]
    return instance


def test_more_task_configs_than_tasks_max_fail_naming_the_key():
    config = {"connector.class": "increment", "tasks.max": "2"}
    with pytest.raises(TooManyTasksError) as e:
        task_configs("inc", _greedy_increment(3), config, config, connector_settings(config))
    assert "has generated 3 tasks, which is greater than 2" in str(e.value) and "tasks.max.enforce" in str(e.value)


def test_with_tasks_max_enforce_false_every_task_config_runs():
    config = {"connector.class": "increment", "tasks.max": "2", "tasks.max.enforce": "false"}
    generated = task_configs("inc", _greedy_increment(3), config, config, connector_settings(config))
    assert [c["increments"] for c in generated] == ["0", "1", "2"]  # none cut off in silence


def test_tasks_max_enforce_is_a_connector_key_and_must_be_boolean():
    base = {"name": "inc", "connector.class": "increment", "increments": "1", "topic.prefix": "s_"}
    assert validate_connector_config({**base, "tasks.max.enforce": "false"}).errors == {}
    assert "tasks.max.enforce" in validate_connector_config({**base, "tasks.max.enforce": "maybe"}).errors


def test_a_reconfiguration_with_too_many_tasks_fails_the_connector(tmp_path):
    runner = FakeRunner()
    stores, reconciler = reconciler_on_memory(tmp_path, runner)
    stores.config.put_connector_config("inc", INC)  # tasks.max 2
    settle(stores, reconciler)
    instance = reconciler.lifecycles["inc"].instance
    instance.task_configs = lambda max_tasks: [{"increments": str(i)} for i in range(3)]
    instance.context.request_task_reconfiguration()
    settle(stores, reconciler)
    status = stores.status.get("inc")
    assert status.state.value == "FAILED" and "greater than 2" in status.trace
    assert len(stores.config.snapshot().all_task_configs("inc")) == 2  # the third was never stored
