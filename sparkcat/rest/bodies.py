"""Request bodies as Connect's resources accept them, and their conversion to herder arguments.

Connect reads configs as ``Map<String, String>``; Jackson turns JSON numbers and
booleans into their text, so ``{"tasks.max": 2}`` works like ``{"tasks.max": "2"}``.
Objects and arrays as values are rejected (400).
"""

from __future__ import annotations

from typing import Any, Optional, Union

from pydantic import BaseModel, Field

from sparkcat.api.config import scalar_string
from sparkcat.errors import BadRequestError
from sparkcat.model import config_state
from sparkcat.model.config_state import TargetState

ConfigScalar = Optional[Union[str, int, float, bool]]
ConfigMap = dict[str, ConfigScalar]



class CreateConnectorRequest(BaseModel):
    """``POST /connectors``: Connect's ``CreateConnectorRequest``.

    >>> CreateConnectorRequest(name="seq", config={"connector.class": "increment"}).initial_state is None
    True
    """

    name: Optional[str] = Field(None, description="Connector name; must match config's 'name' if both are set.")
    config: Optional[ConfigMap] = Field(None, description="Connector configuration (string values).")
    initial_state: Optional[str] = Field(
        None, description="RUNNING (default), PAUSED or STOPPED (KIP-980), case-insensitive.")


class ConnectorOffsetBody(BaseModel):
    """One ``{"partition": {...}, "offset": {...} or null}`` entry of the offsets API."""

    partition: Optional[dict[str, Any]] = None
    offset: Optional[dict[str, Any]] = None


class ConnectorOffsetsBody(BaseModel):
    """``PATCH /connectors/NAME/offsets``: Connect's ``ConnectorOffsets``."""

    offsets: Optional[list[ConnectorOffsetBody]] = None


def config_strings(config: dict[str, Any]) -> dict[str, str | None]:
    """Values as the text Connect stores (``true``/``false`` for booleans); None stays None.

    >>> config_strings({"tasks.max": 2, "errors.log.enable": True, "topic": "t", "x": None})
    {'tasks.max': '2', 'errors.log.enable': 'true', 'topic': 't', 'x': None}
    """
    out: dict[str, str | None] = {}
    for key, value in config.items():
        out[key] = scalar_string(value)
        if value is not None and out[key] is None:
            raise BadRequestError(f"Invalid value for configuration {key}: expected a string, number, boolean "
                                  f"or null")
    return out


def initial_target_state(value: str | None) -> TargetState | None:
    """``initial_state`` of a create request as a target state (None: Connect's default, running)."""
    try:
        return config_state.initial_target_state(value)
    except ValueError as e:
        raise BadRequestError(str(e)) from None


def java_boolean(value: str | None, default: bool) -> bool:
    """A query parameter read like Java's ``Boolean.valueOf``: only ``true`` (any case) is true.

    >>> java_boolean("True", False), java_boolean("yes", True), java_boolean(None, True)
    (True, False, True)
    """
    if value is None:
        return default
    return value.strip().lower() == "true"


def check_config_name(name: str, config: dict[str, Any]) -> None:
    """Connect's ``checkAndPutConnectorConfigName``: a ``name`` in the config must match the URL's."""
    included = config.get("name")
    if included is not None and included != name:
        raise BadRequestError(f"Connector name configuration ({included}) doesn't match connector name in the "
                              f"URL ({name})")
