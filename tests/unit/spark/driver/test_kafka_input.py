"""The pure parts of sink connectors' Kafka input: options, starting offsets, task assignment, routing keys."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import pytest
from confluent_kafka import KafkaException

from sparkcat.kafka import admins
from sparkcat.kafka.admins import worker_admin
from sparkcat.spark.driver.kafka_input import (
    Assignment,
    SparkKafkaError,
    assign_tasks,
    connector_admin,
    murmur3_int,
    partition_route_keys,
    reader_options,
    starting_offsets_option,
    subscribed,
)
from sparkcat.spark.query_plan import QueryPlan


def plan(config: dict[str, str], tasks: int = 2, **fields) -> QueryPlan:
    return QueryPlan("c", "sink", "x:C", "x:T", config, [{} for _ in range(tasks)], "/tmp/ck",
                     bootstrap_servers="h:9092", **fields)


def test_reader_options_of_a_sink_with_topics():
    config = {"topics": "a, b", "consumer.override.isolation.level": "read_uncommitted"}
    options = reader_options(plan(config, tasks=3, batch_max_records=500), {}, None)
    # a pattern of exactly the names: Spark's "subscribe" fails the query while a topic does not exist yet
    assert "subscribe" not in options
    pattern = re.compile(options["subscribePattern"])
    assert pattern.fullmatch("a") and pattern.fullmatch("b")
    assert not any(pattern.fullmatch(t) for t in ("ab", "a,b", "xa", "b2", ""))
    assert options["startingOffsets"] == "earliest"
    assert options["maxOffsetsPerTrigger"] == "1500"  # batch.max.records x tasks
    assert options["failOnDataLoss"] == "false" and options["includeHeaders"] == "true"
    assert options["kafka.isolation.level"] == "read_uncommitted"  # consumer.override.* wins
    assert options["kafka.bootstrap.servers"] == "h:9092"
    assert int(options["kafka.max.partition.fetch.bytes"]) > 1 << 20  # bigger fetches than the consumer's 1 MB
    assert options["kafka.fetch.max.wait.ms"] == "10"  # no prefetch held 500 ms ahead of the end-of-range lookups


def test_listed_topic_names_match_only_themselves():
    pattern = re.compile(reader_options(plan({"topics": "orders.v1,a-b,x+y"}), {}, None)["subscribePattern"])
    assert all(pattern.fullmatch(t) for t in ("orders.v1", "a-b", "x+y"))
    assert not any(pattern.fullmatch(t) for t in ("ordersXv1", "x", "xxy", "orders.v1|a-b"))


def test_a_consumer_override_of_the_fetch_wait_wins():
    config = {"topics": "a", "consumer.override.fetch.max.wait.ms": "500"}
    assert reader_options(plan(config, tasks=1, batch_max_records=500), {}, None)["kafka.fetch.max.wait.ms"] == "500"


def test_reader_options_with_a_regex_stored_offsets_and_a_failed_task():
    options = reader_options(plan({"topics.regex": "o-.*"}, tasks=3, excluded_tasks=[1], batch_max_records=10),
                             {"o-a:1": 42}, [("o-a", 0), ("o-a", 1), ("o-b", 0)])
    assert options["subscribePattern"] == "^(?:o-.*)$"  # whole names, as Connect matches them
    assert json.loads(options["startingOffsets"]) == {"o-a": {"0": -2, "1": 42}, "o-b": {"0": -2}}
    assert options["maxOffsetsPerTrigger"] == "20"  # two live tasks
    assert options["kafka.isolation.level"] == "read_committed"


def test_a_sink_needs_exactly_one_of_topics_and_regex():
    for config in ({}, {"topics": "a", "topics.regex": "b"}):
        with pytest.raises(SparkKafkaError):
            reader_options(plan(config), {}, None)


def test_subscribed_is_a_full_match_and_skips_kafkas_internal_topics():
    assert subscribed({"topics.regex": "o-.*"}, "o-eu") and not subscribed({"topics.regex": "o-.*"}, "xo-eu")
    assert not subscribed({"topics.regex": ".*"}, "__consumer_offsets")
    assert subscribed({"topics": "a,b"}, "b") and not subscribed({"topics": "a,b"}, "c")


def test_starting_offsets_name_every_partition_and_drop_vanished_ones():
    text = starting_offsets_option({"a:1": 7, "gone:0": 3}, [("a", 1), ("a", 0)])
    assert json.loads(text) == {"a": {"0": -2, "1": 7}}


def test_assignment_sorts_and_groups_like_connect_over_live_tasks():
    tps = [("b", 0), ("a", 1), ("a", 0), ("c", 0), ("a", 2)]
    assert assign_tasks(tps, [0, 1]) == {("a", 0): 0, ("a", 1): 0, ("a", 2): 0, ("b", 0): 1, ("c", 0): 1}
    # task 1 FAILED: its partitions go to the others, as a Connect consumer group rebalances them
    assert assign_tasks(tps, [0, 2]) == {("a", 0): 0, ("a", 1): 0, ("a", 2): 0, ("b", 0): 2, ("c", 0): 2}
    assert assign_tasks([("a", 0)], [0, 1, 2]) == {("a", 0): 0}
    with pytest.raises(ValueError):
        assign_tasks(tps, [])
    assert Assignment.of([("a", 0), ("a", 1)], [0, 1]).one_partition_per_task
    assert not Assignment.of([("a", 0), ("a", 1)], [0]).one_partition_per_task


def test_route_keys_give_every_spark_partition_exactly_one_key():
    # that murmur3_int is Spark's hash is checked against Spark in tests/integration/spark/test_sink_input.py
    for n in range(1, 40):
        keys = partition_route_keys(n)
        assert sorted(murmur3_int(k) % n for k in keys) == list(range(n))


def test_a_connectors_admin_override_reaches_its_admin_client(monkeypatch):
    monkeypatch.setattr(admins, "_ADMINS", {})  # this test's clients are dropped with it
    worker = {"admin.request.timeout.ms": "9000", "log_level": "0"}  # nothing listens there: keep librdkafka quiet
    plan = SimpleNamespace(bootstrap_servers="127.0.0.1:9", kafka_config=worker,
                           connector_config={"admin.override.no.such.property": "1"})
    with pytest.raises(KafkaException, match="no.such.property"):  # librdkafka got it, and refuses it
        connector_admin(plan)
    plan.connector_config = {"admin.override.request.timeout.ms": "4000"}
    other = SimpleNamespace(**{**vars(plan), "connector_config": {}})
    assert connector_admin(plan) is not connector_admin(other)  # two settings, two clients
    assert connector_admin(other) is worker_admin("127.0.0.1:9", worker)


def test_subscribed_topics_are_the_listed_ones_that_exist_or_the_regex_full_matches_without_internal_ones():
    from sparkcat.spark.driver.kafka_input import subscribed_topics
    existing = {"orders": [0], "orders-eu": [0, 1], "__consumer_offsets": [0], "payments": [0]}
    assert subscribed_topics({"topics": "orders, missing,orders"}, existing) == ["orders"]
    assert subscribed_topics({"topics.regex": "orders.*"}, existing) == ["orders", "orders-eu"]
    assert subscribed_topics({"topics.regex": "order"}, existing) == []  # Connect's regex matches whole names
    assert subscribed_topics({"topics.regex": ".*"}, existing) == ["orders", "orders-eu", "payments"]
