"""The REST side of KIP-158 and KIP-558: validate names the topic creation keys; the worker's topic.tracking.*
keys answer 403 as Connect's ConnectorsResource does."""

from __future__ import annotations

import dataclasses

from sparkcat.model.status import TopicStatus
from tests.unit.rest.test_rest_app import assert_error, create, increment


def test_validate_names_each_bad_topic_creation_key(client):
    config = {"name": "v", "connector.class": "increment", "increments": "1", "topic.creation.groups": "big",
              "topic.creation.default.replication.factor": "1", "topic.creation.default.partitions": "0",
              "topic.creation.big.include": "a(", "topic.creation.other.partitions": "3"}
    body = client.put("/connector-plugins/increment/config/validate", json=config).json()
    errors = {c["value"]["name"]: c["value"]["errors"] for c in body["configs"] if c["value"]["errors"]}
    assert set(errors) == {"topic.creation.default.partitions", "topic.creation.big.include",
                           "topic.creation.other.partitions"}
    assert body["error_count"] == 3
    assert errors["topic.creation.default.partitions"] == [
        "Invalid value 0 for configuration topic.creation.default.partitions: Value must be -1 or at least 1"]


def test_topic_tracking_off_forbids_the_topics_endpoints(client, driver, tmp_path):
    create(client, "tp", increment(tmp_path / "o"))
    driver.stores.status.put_topic(TopicStatus("seq_1", "tp", 0, 1))
    driver.reconciler.worker = dataclasses.replace(driver.worker, topic_tracking_allow_reset=False)
    assert client.get("/connectors/tp/topics").json() == {"tp": {"topics": ["seq_1"]}}
    assert_error(client.put("/connectors/tp/topics/reset"), 403, "Topic tracking reset is disabled.")
    assert client.get("/connectors/tp/topics").json() == {"tp": {"topics": ["seq_1"]}}  # not reset

    driver.reconciler.worker = dataclasses.replace(driver.worker, topic_tracking_enable=False)
    assert_error(client.get("/connectors/tp/topics"), 403, "Topic tracking is disabled.")
    assert_error(client.put("/connectors/tp/topics/reset"), 403, "Topic tracking is disabled.")
    assert_error(client.get("/connectors/nope/topics"), 403)  # before the 404, as in Connect
