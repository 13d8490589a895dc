"""The converter interface: record keys and values to Kafka bytes and back (Connect's ``Converter``).

The built-in implementations (JSON, String, ByteArray, Avro) are in ``sparkcat.converters``.
Converters run on executors, once per record: ``configure`` is called once per task, so a
converter may cache per-type work there or in its first ``to_bytes`` call.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql.types import DataType

    from sparkcat.api.config import ConfigDef

__all__ = ["Converter"]


class Converter(ABC):
    """Turns one key or value into Kafka bytes and back; configured like Connect's ``Converter``.

    A converter is named in a connector config by ``key.converter``/``value.converter`` (an
    alias, Connect's Java class name or a ``module:Class`` path) and receives the
    ``key.converter.*``/``value.converter.*`` settings.

    >>> class UpperConverter(Converter):
    ...     def to_bytes(self, value, spark_type):
    ...         return None if value is None else str(value).upper().encode()
    ...     def from_bytes(self, data):
    ...         return None if data is None else bytes(data).decode().lower()
    >>> c = UpperConverter()
    >>> c.configure({}, is_key=False)
    >>> c.to_bytes("abc", None), c.from_bytes(b"ABC")
    (b'ABC', 'abc')
    """

    @classmethod
    def config_def(cls) -> ConfigDef | None:
        """The settings this converter takes (prefix removed), as Connect's ``Converter.config()``.

        Validation refuses any other setting of a connector naming the converter, and any value its type does
        not parse, naming the prefixed key. None (the default): not declared, so settings pass unchecked.
        """
        return None

    def configure(self, settings: dict[str, str], is_key: bool) -> None:
        """Receive the ``key.converter.*`` / ``value.converter.*`` settings (prefix removed)."""

    @abstractmethod
    def to_bytes(self, value: Any, spark_type: DataType | None) -> bytes | None:
        """Serialise ``value`` of Spark type ``spark_type`` (None when unknown, e.g. keys)."""

    @abstractmethod
    def from_bytes(self, data: bytes | None) -> Any:
        """Deserialise Kafka bytes (None for a null key or a tombstone) into a Python value."""
