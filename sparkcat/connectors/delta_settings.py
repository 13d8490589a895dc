"""The Delta sink's keys, their ConfigDef and parsed settings: shared by the connector, its native append,
its batch writer and its table scan (``delta_sink``, ``delta_rows``, ``delta_writer``, ``delta_positions``).

What each key does is in ``delta_sink``'s documentation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sparkcat.api.config import ConfigDef, Importance, Type, ValidString
from sparkcat.api.configured import parse_checked

__all__ = ["DeltaSinkSettings", "CONFIG_DEF", "config_problems", "APPEND", "MERGE", "KEY_SCHEMA", "VALUE_SCHEMA",
           "DELETE_ENABLED"]

TABLE_PATH = "table.path"
TABLE_NAME = "table.name"
PARTITION_COLUMNS = "partition.columns"
SCHEMA_EVOLUTION = "schema.evolution"
WRITE_MODE = "write.mode"
KEY_SCHEMA = "key.schema"
VALUE_SCHEMA = "value.schema"
TXN_APP_ID = "txn.app.id"
DELETE_ENABLED = "delete.enabled"
TASK_ID = "task.id"

APPEND = "append"
MERGE = "merge"

CONFIG_DEF: ConfigDef = (
    ConfigDef()
    .define(TABLE_PATH, Type.STRING, None, importance=Importance.HIGH,
            documentation="The Delta table's location (any Hadoop file system path). Exactly one of table.path "
                          "and table.name is required.")
    .define(TABLE_NAME, Type.STRING, None, importance=Importance.HIGH,
            documentation="A Delta table in the session catalog, e.g. db.orders. Exactly one of table.path and "
                          "table.name is required.")
    .define(PARTITION_COLUMNS, Type.LIST, "", importance=Importance.MEDIUM,
            documentation="Columns to partition a new table by.")
    .define(SCHEMA_EVOLUTION, Type.BOOLEAN, False, importance=Importance.MEDIUM,
            documentation="Add new columns of a batch to the table (Delta mergeSchema). When false a batch with "
                          "an unknown column fails.")
    .define(WRITE_MODE, Type.STRING, APPEND, ValidString.in_ignore_case(APPEND, MERGE), Importance.HIGH,
            "append: insert every record. merge: upsert by the record key (MERGE INTO).")
    .define(KEY_SCHEMA, Type.STRING, None, importance=Importance.MEDIUM,
            documentation="Spark DDL fields of the record key (e.g. 'id BIGINT'): they become columns and the "
                          "merge key. Without it the key is one column 'key'.")
    .define(VALUE_SCHEMA, Type.STRING, None, importance=Importance.MEDIUM,
            documentation="Spark DDL fields of JsonConverter values read from Kafka; required with "
                          "JsonConverter values.")
    .define(DELETE_ENABLED, Type.BOOLEAN, False, importance=Importance.MEDIUM,
            documentation="A tombstone (null value) deletes the row with its key; needs write.mode=merge.")
    .define(TXN_APP_ID, Type.STRING, None, importance=Importance.LOW,
            documentation="Delta transaction app id of this connector's commits (default: the connector's "
                          "name).")
    .freeze()
)
"""The connector's own keys; ``task.id`` is added to task configs."""


@dataclass(frozen=True)
class DeltaSinkSettings:
    """The parsed, checked settings of one Delta sink (see the module docstring for each key)."""

    table_path: str | None
    table_name: str | None
    partition_columns: tuple[str, ...]
    schema_evolution: bool
    write_mode: str
    key_schema: str | None
    value_schema: str | None
    txn_app_id: str | None
    delete_enabled: bool

    @classmethod
    def parse(cls, config: Mapping[str, Any]) -> DeltaSinkSettings:
        """Settings from a connector config; ConfigError names every bad key."""
        parsed = parse_checked(CONFIG_DEF, config, config_problems, "Delta sink")
        return cls(
            table_path=_text(parsed[TABLE_PATH]),
            table_name=_text(parsed[TABLE_NAME]),
            partition_columns=tuple(c.strip() for c in parsed[PARTITION_COLUMNS] if c.strip()),
            schema_evolution=bool(parsed[SCHEMA_EVOLUTION]),
            write_mode=str(parsed[WRITE_MODE]).lower(),
            key_schema=_text(parsed[KEY_SCHEMA]),
            value_schema=_text(parsed[VALUE_SCHEMA]),
            txn_app_id=_text(parsed[TXN_APP_ID]),
            delete_enabled=bool(parsed[DELETE_ENABLED]),
        )

    @property
    def table(self) -> str:
        """The table as a user names it, for messages."""
        return f"table.path={self.table_path}" if self.table_path else f"table.name={self.table_name}"

    @property
    def merges(self) -> bool:
        return self.write_mode == MERGE


def _text(value: Any) -> str | None:
    text = "" if value is None else str(value).strip()
    return text or None


def _kafka_fed(config: Mapping[str, Any]) -> bool:
    return bool(_text(config.get("topics")) or _text(config.get("topics.regex")))


def config_problems(config: Mapping[str, Any]) -> dict[str, list[str]]:
    """Checks across keys that ``CONFIG_DEF`` cannot make alone: the table, and converters (Kafka-fed).

    Returns messages per key (empty when the config can be honoured).
    """
    problems: dict[str, list[str]] = {}
    path, name = _text(config.get(TABLE_PATH)), _text(config.get(TABLE_NAME))
    if path and name:
        msg = "table.path and table.name are mutually exclusive, but both are set"
        problems[TABLE_PATH], problems[TABLE_NAME] = [msg], [msg]
    elif not path and not name:
        msg = "one of table.path and table.name is required"
        problems[TABLE_PATH], problems[TABLE_NAME] = [msg], [msg]
    if (str(config.get(DELETE_ENABLED) or "false").strip().lower() == "true"
            and str(config.get(WRITE_MODE) or APPEND).strip().lower() != MERGE):
        problems[DELETE_ENABLED] = ["deletes by key need write.mode=merge"]
    if _kafka_fed(config):
        for is_key in (True, False):
            problems.update(_converter_problems(config, is_key))
        if _text(config.get(TXN_APP_ID)) and str(config.get(WRITE_MODE) or APPEND).strip().lower() == APPEND:
            problems[TXN_APP_ID] = ["applies to write.mode=merge: a Kafka-fed append is written by Delta's streaming "
                                    "sink, whose transaction id is the query's own (kept in its checkpoint)"]
    for key in (KEY_SCHEMA, VALUE_SCHEMA):
        if key not in problems:
            problems.update(_ddl_problems(config, key))
    return problems


def _ddl_problems(config: Mapping[str, Any], key: str) -> dict[str, list[str]]:
    """Whether ``key`` holds a DDL field list; checked only where a Spark session runs (the driver).

    Parsing DDL needs Spark's JVM; without one (the offline CLI) the check waits for the query's
    start, which refuses a bad schema with a ConfigError naming the key.
    """
    ddl = _text(config.get(key))
    if ddl is None:
        return {}
    try:
        from pyspark.sql import SparkSession
        if SparkSession.getActiveSession() is None:
            return {}
        from pyspark.sql.types import DataType, StructType
        parsed = DataType.fromDDL(ddl)
    except ImportError:
        return {}
    except Exception as e:
        return {key: [f"not a Spark DDL field list ({str(e).splitlines()[0]})"]}
    if not isinstance(parsed, StructType) or not parsed.fields:
        return {key: ["not a Spark DDL field list such as 'id BIGINT, name STRING'"]}
    return {}


def _converter_problems(config: Mapping[str, Any], is_key: bool) -> dict[str, list[str]]:
    """Whether the key or value converter has a Spark-side equivalent here, with the schema it needs."""
    from sparkcat.converters import ByteArrayConverter, JsonConverter, StringConverter, converter_for
    side = "key" if is_key else "value"
    converter_key, schema_key = f"{side}.converter", f"{side}.schema"
    try:
        converter = converter_for(dict(config), is_key)
    except Exception as e:
        return {converter_key: [f"cannot load {config.get(converter_key)}: {e}"]}
    kind = type(converter)
    if kind not in (JsonConverter, StringConverter, ByteArrayConverter):
        return {converter_key: [f"{config.get(converter_key)} has no Spark-side equivalent in the delta sink; "
                                f"use JsonConverter, StringConverter or ByteArrayConverter"]}
    if kind is not JsonConverter and _text(config.get(schema_key)):
        return {schema_key: [f"{schema_key} applies to JsonConverter {side}s only"]}
    if kind is JsonConverter and not is_key and not _text(config.get(schema_key)):
        return {schema_key: ["JsonConverter values need value.schema (Spark DDL fields, e.g. 'id BIGINT, name "
                             "STRING') to become columns; or use StringConverter to store the JSON text"]}
    return {}
