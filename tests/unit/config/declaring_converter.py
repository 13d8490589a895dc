"""A plugin converter that declares its settings (``config_def``), for the converter-key tests."""

from __future__ import annotations

from sparkcat.api.config import ConfigDef, Type
from sparkcat.api.converter import Converter


class UpperConverter(Converter):
    """Text in upper case; ``strip`` (boolean) trims it first. Its version is what KIP-891's keys are checked against."""

    plugin_version = "2.3.0"

    @classmethod
    def config_def(cls) -> ConfigDef:
        return ConfigDef().define("strip", Type.BOOLEAN, False, documentation="Trim the text first.")

    def to_bytes(self, value, spark_type):
        return None if value is None else str(value).upper().encode()

    def from_bytes(self, data):
        return None if data is None else bytes(data).decode()
