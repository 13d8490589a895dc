"""What a connector author sees: connectors, tasks, records, ConfigDef and helpers.

Nothing here imports the runtime.
"""

import json
from typing import Any

from sparkcat.api.config import (
    NO_DEFAULT,
    ConfigDef,
    ConfigKey,
    ConfigValue,
    Importance,
    NonEmptyString,
    Password,
    Range,
    Type,
    ValidList,
    ValidString,
    Width,
)
from sparkcat.api.connector import Connector, SinkConnector, SinkTask, SourceConnector, SourceTask, Task
from sparkcat.api.records import SinkRecord, SourceRecord
from sparkcat.api.util import group_partitions


def partition_key(partition: dict[str, Any]) -> str:
    """The canonical JSON text of a source partition, used as a dict key for offsets."""
    return json.dumps(partition, sort_keys=True, separators=(",", ":"))


__all__ = [
    "NO_DEFAULT", "ConfigDef", "ConfigKey", "ConfigValue", "Importance", "NonEmptyString", "Password",
    "Range", "Type", "ValidList", "ValidString", "Width", "Connector", "SinkConnector", "SinkTask",
    "SourceConnector", "SourceTask", "Task", "SinkRecord", "SourceRecord", "group_partitions",
    "partition_key",
]
