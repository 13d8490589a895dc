"""What a connector author sees: connectors, tasks and their hooks, records, converters, ConfigDef and helpers.

Nothing here imports the runtime.
"""

from sparkcat.api.batch_writer import BatchWriteContext, BatchWriter
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
from sparkcat.api.config_provider import ConfigData, ConfigProvider
from sparkcat.api.configured import ConfiguredConnector, Versioned, parse_checked
from sparkcat.api.connector import (
    Connector,
    CopiesConfigToTasks,
    ExactlyOnceSupport,
    SinkConnector,
    SinkTask,
    SourceConnector,
    SourceTask,
    Task,
    task_config_copies,
)
from sparkcat.api.converter import Converter
from sparkcat.api.native import NativeWrite, NativeWriteContext, TriggerMode
from sparkcat.api.records import SinkRecord, SourceRecord
from sparkcat.api.task_context import SinkTaskContext
from sparkcat.api.util import group_partitions, partition_key
from sparkcat.errors import RetriableError


__all__ = [
    "NO_DEFAULT", "ConfigDef", "ConfigKey", "ConfigValue", "Importance", "NonEmptyString", "Password",
    "Range", "Type", "ValidList", "ValidString", "Width", "Connector", "CopiesConfigToTasks", "ExactlyOnceSupport",
    "SinkConnector",
    "SinkTask", "SourceConnector", "SourceTask", "Task", "task_config_copies", "ConfiguredConnector", "Versioned",
    "parse_checked", "Converter", "SinkRecord",
    "SourceRecord", "SinkTaskContext", "group_partitions", "partition_key", "RetriableError", "NativeWrite",
    "NativeWriteContext", "TriggerMode", "BatchWriter", "BatchWriteContext", "ConfigData", "ConfigProvider",
]
