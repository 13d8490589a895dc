"""A source task's topics travel from the executor's result rows to the driver's ``BatchResult`` (KIP-558)."""

from __future__ import annotations

from sparkcat.spark.driver.batch_reports import batch_result
from sparkcat.spark.executor.batch_results import Tally, result_batch
from sparkcat.spark.executor.topic_creator import SourceTopics
from sparkcat.spark.query_plan import QueryPlan


def _plan(**config: str) -> QueryPlan:
    return QueryPlan("src", "source", "m:C", "m:T", {"connector.class": "increment", **config}, [{}], "/tmp/cp")


def test_each_tasks_topics_are_noted_and_merged_over_the_rows_of_a_batch():
    topics = SourceTopics(_plan())  # no Kafka in the plan: nothing to create, topics still noted
    assert topics.creation is None
    topics.before_send([0, 0, 1], "orders")
    topics.before_send([1, 0], ["users", "orders"])
    assert (topics.topics_of(0), topics.topics_of(1), topics.topics_of(2)) == (["orders"], ["orders", "users"], [])

    first = result_batch({0: Tally(), 1: Tally()}, topics={0: topics.topics_of(0), 1: topics.topics_of(1)})
    second = result_batch({0: Tally()}, topics={0: ["clicks"]})
    rows = [_Row(dict(zip(b.schema.names, values))) for b in (first, second)
            for values in zip(*(c.to_pylist() for c in b.columns))]
    result = batch_result("src", 1, rows, 0.0)
    assert (result.tasks[0].topics, result.tasks[1].topics) == (["clicks", "orders"], ["orders", "users"])


def test_a_plan_with_topic_creation_keys_creates_by_its_groups_unless_the_worker_turned_it_off():
    keys = {"topic.creation.default.replication.factor": "1", "topic.creation.default.partitions": "4"}
    plan = _plan(**keys)
    plan.bootstrap_servers = "127.0.0.1:1"
    creation = SourceTopics(plan).creation
    assert creation is not None and creation.group_for("t").partitions == 4
    plan.topic_creation = False
    assert SourceTopics(plan).creation is None


class _Row:
    def __init__(self, values: dict) -> None:
        self.__dict__.update(values)
