"""Kafka Connect's number and boolean converters (``org.apache.kafka.connect.converters``), byte for byte.

Each is a Kafka serializer under a converter, as in connect-runtime 4.1: big-endian two's complement
``ShortConverter`` (2 bytes), ``IntegerConverter`` (4), ``LongConverter`` (8), IEEE 754
``FloatConverter`` (4) and ``DoubleConverter`` (8), ``BooleanConverter`` one byte (1 true, 0 false).
A null value is a null record key or value both ways. Their only setting in Connect is
``converter.type``, which Connect sets itself. Reading bytes of another length (or a boolean byte other
than 0 and 1) fails the record's conversion with Connect's message, as does writing a value of another
type: a Python ``int`` is any whole number, so the integral converters check its range instead of
the Java class (Connect refuses an ``Integer`` given to LongConverter; sparkcat takes it).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from sparkcat.api.converter import Converter

__all__ = ["NUMERIC_CONVERTERS", "BooleanConverter", "DoubleConverter", "FloatConverter", "IntegerConverter",
           "LongConverter", "ShortConverter"]

_PACKAGE = "org.apache.kafka.connect.converters"


@dataclass(frozen=True)
class _Layout:
    """One Kafka serializer's bytes: ``struct`` format, Connect's type name, the Java deserializer's name."""

    fmt: str
    type_name: str
    deserializer: str
    integral: bool

    @property
    def size(self) -> int:
        return struct.calcsize(self.fmt)


class _NumberConverter(Converter):
    """Connect's ``NumberConverter``: a number through the layout's serializer; null stays null."""

    layout: _Layout

    def to_bytes(self, value: Any, spark_type: Any) -> bytes | None:
        if value is None:
            return None
        layout = self.layout
        ok = isinstance(value, int) if layout.integral else isinstance(value, (int, float))
        if not ok or isinstance(value, bool):
            raise TypeError(f"Failed to serialize to {layout.type_name} (was {type(value).__name__})")
        try:
            return struct.pack(layout.fmt, value)
        except (struct.error, OverflowError) as e:
            raise ValueError(f"Failed to serialize to {layout.type_name}: {value} is out of its range ({e})") from e

    def from_bytes(self, data: bytes | None) -> Any:
        if data is None:
            return None
        layout = self.layout
        if len(data) != layout.size:
            raise ValueError(f"Failed to deserialize {layout.type_name}: Size of data received by "
                             f"{layout.deserializer} is not {layout.size}")
        return struct.unpack(layout.fmt, bytes(data))[0]


class ShortConverter(_NumberConverter):
    """``org.apache.kafka.connect.converters.ShortConverter``: INT16, 2 bytes big-endian."""

    layout = _Layout(">h", "short", "ShortDeserializer", True)


class IntegerConverter(_NumberConverter):
    """``org.apache.kafka.connect.converters.IntegerConverter``: INT32, 4 bytes big-endian."""

    layout = _Layout(">i", "integer", "IntegerDeserializer", True)


class LongConverter(_NumberConverter):
    """``org.apache.kafka.connect.converters.LongConverter``: INT64, 8 bytes big-endian.

    >>> c = LongConverter()
    >>> c.to_bytes(-2, None), c.from_bytes(b"\\x00\\x00\\x00\\x00\\x00\\x00\\x01\\x00"), c.to_bytes(None, None)
    (b'\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xfe', 256, None)
    """

    layout = _Layout(">q", "long", "LongDeserializer", True)


class FloatConverter(_NumberConverter):
    """``org.apache.kafka.connect.converters.FloatConverter``: FLOAT32, IEEE 754, 4 bytes big-endian."""

    layout = _Layout(">f", "float", "FloatDeserializer", False)


class DoubleConverter(_NumberConverter):
    """``org.apache.kafka.connect.converters.DoubleConverter``: FLOAT64, IEEE 754, 8 bytes big-endian."""

    layout = _Layout(">d", "double", "DoubleDeserializer", False)


class BooleanConverter(Converter):
    """``org.apache.kafka.connect.converters.BooleanConverter``: one byte, 1 for true and 0 for false.

    >>> c = BooleanConverter()
    >>> c.to_bytes(True, None), c.to_bytes(False, None), c.from_bytes(b"\\x01"), c.from_bytes(None)
    (b'\\x01', b'\\x00', True, None)
    """

    def to_bytes(self, value: Any, spark_type: Any) -> bytes | None:
        if value is None:
            return None
        if not isinstance(value, bool):
            raise TypeError(f"BooleanConverter is not compatible with objects of type {type(value).__name__}")
        return b"\x01" if value else b"\x00"

    def from_bytes(self, data: bytes | None) -> Any:
        if data is None:
            return None
        if len(data) != 1:
            raise ValueError("Failed to deserialize boolean: Size of data received by BooleanDeserializer is not 1")
        if bytes(data) not in (b"\x00", b"\x01"):
            raise ValueError(f"Failed to deserialize boolean: Unexpected byte received by BooleanDeserializer: "
                             f"{bytes(data)[0]}")
        return bytes(data) == b"\x01"


#: Connect's class name of each, with the short aliases sparkcat also takes.
NUMERIC_CONVERTERS: dict[str, tuple[type[Converter], tuple[str, ...]]] = {
    f"{_PACKAGE}.ShortConverter": (ShortConverter, ("short",)),
    f"{_PACKAGE}.IntegerConverter": (IntegerConverter, ("integer", "int")),
    f"{_PACKAGE}.LongConverter": (LongConverter, ("long",)),
    f"{_PACKAGE}.FloatConverter": (FloatConverter, ("float",)),
    f"{_PACKAGE}.DoubleConverter": (DoubleConverter, ("double",)),
    f"{_PACKAGE}.BooleanConverter": (BooleanConverter, ("boolean",)),
}
