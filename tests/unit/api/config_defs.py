"""A small ConfigDef shared by the ConfigDef and ConfigInfos tests."""

from __future__ import annotations

from sparkcat.api.config import ConfigDef, Importance, NonEmptyString, Range, Type, ValidString


def small_def() -> ConfigDef:
    return (
        ConfigDef()
        .define("name", Type.STRING, validator=NonEmptyString(), importance=Importance.HIGH, group="Common")
        .define("tasks.max", Type.INT, 1, Range.at_least(1), Importance.HIGH, group="Common")
        .define("mode", Type.STRING, "bulk", ValidString.in_("bulk", "incrementing"), group="Mode")
        .define("secret", Type.PASSWORD, None, group="Connection")
        .define("enabled", Type.BOOLEAN, True, group="Mode")
        .define("tables", Type.LIST, "", group="Connection")
    )
