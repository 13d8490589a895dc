"""Fencing every task id a connector ever had (issue 42): ``tasks.max`` shrunk from 3 to 1 after a driver of the
3-task generation was killed. That driver's producers may still hold open transactions under all three ids; the
fencing that runs before the 1-task query starts must reach the highest old id too, not only task 0.

Real parts: the suite's broker, the config log on a Kafka topic (the state the fencing reads is built from its
records, Connect's ``tasks-fencing-NAME`` included), and a real transactional producer playing the zombie of task
2 with a transaction open. The query itself is not started (the driver-level kill tests in
test_exactly_once_source.py run it): a new driver that started the 3-task configs first would fence ids 0..2 on
that start and hide what is tested here.
"""

from __future__ import annotations

import logging
from contextlib import suppress

import pytest
from confluent_kafka import KafkaException, Producer

from sparkcat.kafka.producers import task_transactional_id
from sparkcat.runtime.execution import fencing
from sparkcat.spark.query_plan import QueryPlan
from sparkcat.storage.config_log import ConfigLog
from sparkcat.storage.kafka.error_codes import FENCED_CODES
from sparkcat.storage.kafka.log import KafkaLog
from tests.kafka_helpers import read_topic

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

CONNECTOR = "eos"
SOURCE = {"connector.class": "increment", "increments": "1", "tasks.max": "3"}


def zombie(bootstrap: str, transactional_id: str, topic: str) -> Producer:
    """A producer of the killed driver: its transaction is open, one record sent and acknowledged."""
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id,
                         "enable.idempotence": True, "acks": "all", "transaction.timeout.ms": 120_000,
                         "logger": logging.getLogger("tests.zombie")})
    producer.init_transactions(60)
    producer.begin_transaction()
    producer.produce(topic, key=b"zombie", value=b"written by the killed driver's task")
    assert producer.flush(30) == 0
    return producer


def test_a_shrink_after_a_kill_fences_the_highest_old_task_id(broker, unique_name):
    group = f"{unique_name}-group"
    config = ConfigLog(KafkaLog(broker.bootstrap, f"{unique_name}-configs", timeout_s=10))
    config.put_connector_config(CONNECTOR, SOURCE)
    config.put_task_configs(CONNECTOR, [{"task.id": str(t)} for t in range(3)])
    config.put_task_count_record(CONNECTOR, 3)  # the 3-task generation was fenced for and ran
    topic = f"{unique_name}-out"
    old = [zombie(broker.bootstrap, task_transactional_id(group, CONNECTOR, t), topic) for t in (0, 2)]
    # the driver is killed; tasks.max is lowered to 1 and the new generation's configs are committed
    config.put_connector_config(CONNECTOR, {**SOURCE, "tasks.max": "1"})
    config.put_task_configs(CONNECTOR, [{"task.id": "0"}])
    state = config.refresh()
    assert state.task_count_records[CONNECTOR] == 3 and CONNECTOR in state.pending_fencing
    plan = QueryPlan(CONNECTOR, "source", "x:C", "x:T", {**SOURCE, "tasks.max": "1"}, [{"task.id": "0"}],
                     "/tmp/never-used", bootstrap_servers=broker.bootstrap, exactly_once=True, group_id=group)
    try:
        fencing.zombie_fencing(config, plan, state)()
        for task, producer in zip((0, 2), old):
            with pytest.raises(KafkaException) as fenced:
                producer.commit_transaction(30)
            assert fenced.value.args[0].code() in FENCED_CODES, f"task {task}: {fenced.value.args[0]}"
        assert read_topic(broker.bootstrap, topic) == []  # nothing of the zombies' transactions is committed
        assert config.refresh().task_count_records[CONNECTOR] == 1  # the next round fences the one task now
    finally:
        for producer in old:
            with suppress(KafkaException):  # a fenced producer's flush raises its fatal error again
                producer.flush(0)
        config.close()
