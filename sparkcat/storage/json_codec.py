"""JSON as Kafka Connect's JsonConverter writes it with ``schemas.enable=false``: compact, UTF-8."""

from __future__ import annotations

import json
from typing import Any


def dumps(value: Any) -> bytes:
    """Serialise like Connect (no spaces), so records we write look like Connect's own."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def loads(data: bytes | None) -> Any:
    """Parse a record value; None (a tombstone) stays None."""
    if data is None:
        return None
    return json.loads(data.decode("utf-8") if isinstance(data, (bytes, bytearray)) else data)
