"""What a connector author sees: connectors, tasks, records, ConfigDef and helpers.

Nothing here imports the runtime.
"""

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
from sparkcat.api.util import group_partitions, partition_key


__all__ = [
    "NO_DEFAULT", "ConfigDef", "ConfigKey", "ConfigValue", "Importance", "NonEmptyString", "Password",
    "Range", "Type", "ValidList", "ValidString", "Width", "Connector", "SinkConnector", "SinkTask",
    "SourceConnector", "SourceTask", "Task", "SinkRecord", "SourceRecord", "group_partitions",
    "partition_key",
]
