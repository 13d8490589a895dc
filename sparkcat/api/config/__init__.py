"""Typed, validated configuration definitions, modelled on Kafka Connect's ``ConfigDef``.

``types`` holds the value types and their text forms, ``validators`` the per-value
checks, ``config_def`` the definitions themselves. The framework's own connector keys
are in ``sparkcat.config.connector``.
"""

from sparkcat.api.config.config_def import ConfigDef, ConfigKey, ConfigValue, Recommender
from sparkcat.api.config.types import (
    NO_DEFAULT,
    Importance,
    Password,
    Type,
    Width,
    config_error,
    connect_string,
    convert_to_string,
    invalid_value,
    parse_type,
    scalar_string,
)
from sparkcat.api.config.validators import (
    Custom,
    NonEmptyString,
    NonEmptyStringWithoutControlChars,
    Range,
    ValidList,
    ValidString,
    Validator,
)

__all__ = [
    "NO_DEFAULT",
    "ConfigDef",
    "ConfigKey",
    "ConfigValue",
    "Custom",
    "Importance",
    "NonEmptyString",
    "NonEmptyStringWithoutControlChars",
    "Password",
    "Range",
    "Recommender",
    "Type",
    "ValidList",
    "ValidString",
    "Validator",
    "Width",
    "config_error",
    "connect_string",
    "convert_to_string",
    "invalid_value",
    "parse_type",
    "scalar_string",
]
