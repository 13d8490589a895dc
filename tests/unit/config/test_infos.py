"""Connect's ConfigInfos body: the validate response and the plugin key listing."""

from __future__ import annotations

from sparkcat.api.config import ConfigValue
from sparkcat.config.infos import key_infos, validate_response
from tests.unit.api.config_defs import small_def

MISSING_NAME = 'Missing required configuration "name" which has no default value.'


def test_validate_response_matches_connect_shape() -> None:
    response = validate_response(
        small_def(), "io.example.JdbcSource",
        {"tasks.max": "abc", "secret": "hunter2", "enabled": "FALSE", "tables": "a, b"},
    )
    assert response["name"] == "io.example.JdbcSource"
    assert response["error_count"] == 2
    assert response["groups"] == ["Common", "Mode", "Connection"]
    configs = {c["definition"]["name"]: c for c in response["configs"]}
    assert list(configs) == small_def().names()

    name = configs["name"]
    assert name["definition"] == {
        "name": "name",
        "type": "STRING",
        "required": True,
        "default_value": None,
        "importance": "HIGH",
        "documentation": "",
        "group": "Common",
        "width": "NONE",
        "display_name": "name",
        "dependents": [],
        "order": -1,
    }
    assert name["value"] == {
        "name": "name",
        "value": None,
        "recommended_values": [],
        "errors": [MISSING_NAME],
        "visible": True,
    }
    assert configs["secret"]["value"]["value"] == "[hidden]"
    assert "hunter2" not in repr(response)
    assert configs["enabled"]["value"]["value"] == "false"
    assert configs["enabled"]["definition"]["default_value"] == "true"
    assert configs["tables"]["value"]["value"] == "a,b"
    assert configs["tables"]["definition"]["default_value"] == ""
    assert configs["tasks.max"]["definition"]["default_value"] == "1"
    assert configs["mode"]["value"]["value"] == "bulk"


def test_validate_response_counts_messages_and_reports_nulls_and_extra_values() -> None:
    extra = ConfigValue("connection.url", "jdbc:x", [], ["Cannot connect"], True)
    response = validate_response(small_def(), "C", {"name": "a", "mode": None}, extra_values=[extra])
    configs = response["configs"]
    assert configs[0] == {
        "definition": None,
        "value": {
            "name": "connection.url",
            "value": "jdbc:x",
            "recommended_values": [],
            "errors": ["Cannot connect"],
            "visible": True,
        },
    }
    mode = next(c for c in configs if c["definition"] and c["definition"]["name"] == "mode")
    assert "Null value can not be supplied as the configuration value." in mode["value"]["errors"]
    assert response["error_count"] == 1 + len(mode["value"]["errors"])


def test_key_infos_list_definitions_in_order_with_connect_strings() -> None:
    infos = key_infos(small_def())
    assert [i["name"] for i in infos] == small_def().names()
    by_name = {i["name"]: i for i in infos}
    assert by_name["name"]["required"] is True and by_name["name"]["default_value"] is None
    assert by_name["tasks.max"]["default_value"] == "1" and by_name["tables"]["default_value"] == ""
