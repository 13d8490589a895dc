"""A sink's consumer.override.* keys Spark's Kafka source manages are refused, naming the key and why."""

from __future__ import annotations

import pytest

from sparkcat.config.consumer_overrides import REFUSED_CONSUMER_OVERRIDES
from sparkcat.config.validation import validate_connector_config
from sparkcat.kafka.client_settings import SPARK_SOURCE_REFUSED

SINK = {"name": "s", "connector.class": "file-sink", "topics": "t", "file": "state/out.txt"}


@pytest.mark.parametrize("setting", sorted(REFUSED_CONSUMER_OVERRIDES))
def test_a_setting_spark_manages_is_refused_naming_the_key(setting):
    key = "consumer.override." + setting
    errors = validate_connector_config({**SINK, key: "x"}).errors
    assert list(errors) == [key]
    assert key in errors[key][0] and REFUSED_CONSUMER_OVERRIDES[setting] in errors[key][0]


def test_every_setting_dropped_on_the_way_to_spark_is_refused_except_the_honoured_group_id():
    assert SPARK_SOURCE_REFUSED - set(REFUSED_CONSUMER_OVERRIDES) == {"group.id"}


def test_settings_spark_takes_and_group_id_are_accepted():
    config = {**SINK, "consumer.override.group.id": "g", "consumer.override.max.poll.records": "10",
              "consumer.override.isolation.level": "read_uncommitted"}
    assert validate_connector_config(config).errors == {}
