"""The JDBC connectors' pure logic: URL bounds, cross-key checks, offsets format, names, masking."""

from __future__ import annotations

import datetime as dt

import pytest

from sparkcat import plugins
from sparkcat.connectors import jdbc_queries as Q
from sparkcat.connectors.jdbc_common import parse_url, split_name
from sparkcat.connectors.jdbc_sink import JdbcSinkSettings
from sparkcat.connectors.jdbc_source import config_problems as source_problems
from sparkcat.errors import ConfigError
from sparkcat.config.validation import mask_connector_config, validate_connector_config

URL = "jdbc:postgresql://127.0.0.1:5432/shop"


@pytest.mark.parametrize("url, message", [
    ("jdbc:postgresql:///shop?host=/var/run/postgresql", "only PostgreSQL URLs"),
    ("jdbc:postgresql://db/shop?sslkey=/etc/passwd", "URL parameter 'sslkey' is not supported"),
    ("jdbc:postgresql://db/shop?options=-c%20log_statement=all", "URL parameter 'options' is not supported"),
    ("jdbc:postgresql://db:99999/shop", "port 99999 is out of range"),
    ("jdbc:postgresql://db/shop?sslmode=maybe", "sslmode 'maybe'"),
    ("postgresql://db/shop", "only PostgreSQL URLs"),
])
def test_connection_urls_outside_the_bounds_are_refused_with_the_reason(url, message):
    with pytest.raises(ConfigError, match=message):
        parse_url(url)


def test_accepted_url_parameters_become_libpq_keywords():
    assert parse_url("jdbc:postgresql://[::1]:6000/db%20x?connectTimeout=5&ApplicationName=app") == (
        "::1", 6000, "db x", (("connect_timeout", "5"), ("application_name", "app")))


def test_table_names_are_one_or_two_bounded_parts():
    assert split_name("s.t") == ("s", "t")
    for bad in ("a.b.c", "", "x" * 64, "a..b"):
        with pytest.raises(ConfigError):
            split_name(bad)


def test_source_cross_key_checks_name_the_key():
    problems = source_problems({"mode": "timestamp+incrementing", "query": "SELECT 1", "table.whitelist": "t"})
    assert problems == {"incrementing.column.name": ["mode timestamp+incrementing needs incrementing.column.name"],
                        "timestamp.column.name": ["mode timestamp+incrementing needs timestamp.column.name"],
                        "table.whitelist": ["table.whitelist and query are mutually exclusive; set one of them"]}


def test_sink_settings_refuse_upsert_without_a_key_and_deletes_without_record_key():
    with pytest.raises(ConfigError) as e:
        JdbcSinkSettings.parse({"connection.url": URL, "insert.mode": "upsert", "delete.enabled": "true"})
    assert set(e.value.errors) == {"pk.mode", "delete.enabled"}  # type: ignore[attr-defined]
    settings = JdbcSinkSettings.parse({"connection.url": URL, "table.name.format": "archive.${topic}"})
    assert settings.table_of("orders") == ("archive", "orders")


def test_timestamp_offsets_round_trip_in_connect_format():
    ts = dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=dt.timezone.utc)
    offset = Q.offset_of(Q.TIMESTAMP_INCREMENTING, (ts, 7))
    assert offset == {"timestamp": -1, "timestamp_nanos": 999999000, "incrementing": 7}
    assert Q.position_of(Q.TIMESTAMP_INCREMENTING, offset) == (ts, 7)
    assert Q.position_of(Q.INCREMENTING, {"incrementing": 3}) == (3,)
    assert Q.position_of(Q.INCREMENTING, None) is None


def test_connect_class_names_and_aliases_resolve_and_the_password_is_masked():
    for name in ("jdbc-source", "io.confluent.connect.jdbc.JdbcSourceConnector"):
        assert plugins.class_path_of(name) == "sparkcat.connectors.jdbc_source:JdbcSourceConnector"
    assert plugins.class_path_of("io.confluent.connect.jdbc.JdbcSinkConnector").endswith("jdbc_sink:JdbcSinkConnector")
    config = {"connector.class": "jdbc-sink", "name": "s", "topics": "t", "connection.url": URL,
              "connection.password": "s3cret"}
    assert mask_connector_config(config)["connection.password"] == "[hidden]"
    result = validate_connector_config(config)
    assert result.errors == {}
    assert "s3cret" not in str(result.response)


def test_a_password_in_the_url_is_refused_and_never_echoed():
    # connection.url is shown unmasked; a password there would leak through GET config and the validate answer.
    config = {"connector.class": "jdbc-sink", "topics": "t", "connection.password": "s3cret",
              "connection.url": URL + "?sslmode=require&password=Sup3rSecretPw"}
    result = validate_connector_config(config)
    text = str(result.to_dict() if hasattr(result, "to_dict") else result)
    assert "connection.password" in text and "password URL parameter is not accepted" in text
    assert "Sup3rSecretPw" not in text
