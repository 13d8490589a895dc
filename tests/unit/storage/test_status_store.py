"""StatusStore: connector/task/topic statuses in Kafka Connect's status-topic format, generation-safe."""

from __future__ import annotations

import json

from sparkcat.model.status import State, Status, TopicStatus
from sparkcat.storage.local.log import LocalLog
from sparkcat.storage.log import MemoryLog
from sparkcat.storage.status import StatusStore


def _raw(backend):
    return {r.key: (None if r.value is None else json.loads(r.value)) for r in backend.read()}


def test_connector_and_task_records_use_connect_keys_and_fields(unique_name):
    backend = MemoryLog()
    store = StatusStore(backend)
    assert store.put(Status(unique_name, None, State.RUNNING, "driver-1", 3))
    assert store.put(Status(unique_name, 0, State.FAILED, "executor-2", 3, "Traceback ..."))
    assert _raw(backend) == {
        f"status-connector-{unique_name}": {"state": "RUNNING", "trace": None, "worker_id": "driver-1",
                                            "generation": 3},
        f"status-task-{unique_name}-0": {"state": "FAILED", "trace": "Traceback ...", "worker_id": "executor-2",
                                         "generation": 3},
    }
    assert store.get(unique_name) == Status(unique_name, None, State.RUNNING, "driver-1", 3)
    assert store.get_task(unique_name, 0).trace == "Traceback ..."


def test_older_generation_put_is_refused_and_not_written(unique_name):
    backend = MemoryLog()
    store = StatusStore(backend)
    assert store.put(Status(unique_name, 0, State.RUNNING, "w", 5))
    assert store.put(Status(unique_name, 0, State.FAILED, "w", 4)) is False
    assert store.get_task(unique_name, 0).state is State.RUNNING
    assert len(backend.read()) == 1


def test_older_generation_record_from_another_writer_does_not_overwrite(unique_name):
    backend = MemoryLog()
    store = StatusStore(backend)
    store.put(Status(unique_name, None, State.RUNNING, "new-driver", 7))
    backend.append([(f"status-connector-{unique_name}",
                     b'{"state":"FAILED","trace":"late","worker_id":"old-driver","generation":6}')])
    assert store.get(unique_name).state is State.RUNNING
    assert StatusStore(backend).get(unique_name).worker_id == "new-driver"  # a fresh reader agrees


def test_same_generation_overwrites(unique_name):
    store = StatusStore(MemoryLog())
    store.put(Status(unique_name, 1, State.RUNNING, "w", 2))
    assert store.put(Status(unique_name, 1, State.PAUSED, "w", 2))
    assert store.get_task(unique_name, 1).state is State.PAUSED


def test_newer_generation_overwrites(unique_name):
    store = StatusStore(MemoryLog())
    store.put(Status(unique_name, None, State.FAILED, "w", 2, "boom"))
    assert store.put(Status(unique_name, None, State.RUNNING, "w", 3))
    assert store.get(unique_name).state is State.RUNNING


def test_delete_tombstones_connector_and_task_statuses(unique_name):
    backend = MemoryLog()
    store = StatusStore(backend)
    other = f"{unique_name}-other"
    store.put(Status(unique_name, None, State.RUNNING, "w", 1))
    store.put(Status(unique_name, 0, State.RUNNING, "w", 1))
    store.put(Status(unique_name, 1, State.RUNNING, "w", 1))
    store.put(Status(other, 0, State.RUNNING, "w", 1))
    store.delete(unique_name)
    tombstoned = {r.key for r in backend.read(4) if r.value is None}
    assert tombstoned == {f"status-connector-{unique_name}", f"status-task-{unique_name}-0",
                          f"status-task-{unique_name}-1"}
    assert store.get(unique_name) is None and store.tasks(unique_name) == []
    assert unique_name not in store.connectors()
    assert store.get_task(other, 0).state is State.RUNNING
    assert StatusStore(backend).tasks(unique_name) == []


def test_task_keys_of_connector_names_with_dashes_parse():
    backend = MemoryLog()
    backend.append([("status-task-my-conn-2-10",
                     b'{"state":"RUNNING","trace":null,"worker_id":"w","generation":1}')])
    store = StatusStore(backend)
    assert [(s.connector, s.task) for s in store.tasks("my-conn-2")] == [("my-conn-2", 10)]
    assert store.get_task("my-conn", 2) is None


def test_tasks_are_listed_in_task_number_order(unique_name):
    store = StatusStore(MemoryLog())
    for task in (10, 2, 0):
        store.put(Status(unique_name, task, State.RUNNING, "w", 1))
    assert [s.task for s in store.tasks(unique_name)] == [0, 2, 10]


def test_topic_status_records_use_connect_format(unique_name):
    backend = MemoryLog()
    store = StatusStore(backend)
    store.put_topic(TopicStatus("orders", unique_name, 1, 1700000000000))
    [record] = backend.read()
    assert record.key == f"status-topic-orders:connector-{unique_name}"
    assert json.loads(record.value) == {"topic": {"name": "orders", "connector": unique_name, "task": 1,
                                                  "discoverTimestamp": 1700000000000}}
    assert store.topics(unique_name) == ["orders"]


def test_topic_records_written_by_connect_are_read(unique_name):
    backend = MemoryLog()
    backend.append([(f"status-topic-payments:connector-{unique_name}",
                     f'{{"topic":{{"name":"payments","connector":"{unique_name}","task":0,'
                     f'"discoverTimestamp":1}}}}'.encode())])
    assert StatusStore(backend).topics(unique_name) == ["payments"]


def test_delete_topics_forgets_only_that_connectors_topics(unique_name):
    store = StatusStore(MemoryLog())
    other = f"{unique_name}-other"
    store.put_topic(TopicStatus("a", unique_name, 0, 1))
    store.put_topic(TopicStatus("b", unique_name, 0, 1))
    store.put_topic(TopicStatus("a", other, 0, 1))
    store.delete_topics(unique_name)
    assert store.topics(unique_name) == []
    assert store.topics(other) == ["a"]


def test_statuses_survive_restart_on_local_log(tmp_path, unique_name):
    store = StatusStore(LocalLog(tmp_path, "status"))
    store.put(Status(unique_name, None, State.RUNNING, "w", 4))
    store.put(Status(unique_name, None, State.FAILED, "w", 3))
    store.close()
    reopened = StatusStore(LocalLog(tmp_path, "status"))
    assert reopened.get(unique_name) == Status(unique_name, None, State.RUNNING, "w", 4)
