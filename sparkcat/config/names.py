"""Connector names: which ones are refused, and how a name becomes a directory name.

Kafka Connect accepts almost any name (``ConnectorConfig``'s ``name`` is a
non-empty string without ISO control characters) and so does sparkcat. But a
name is user input and must never become a path as it is: ``..`` would make the
checkpoint directory the state directory itself, and ``a/../../x`` would put a
checkpoint anywhere. ``dir_name`` therefore maps every name to one path
component that cannot escape its parent, cannot collide with another name's,
and cannot collide with the directories sparkcat reserves (they start with
``_``); ``check_connector_name`` refuses, before anything is written, the few
names that cannot be represented at all.
"""

from __future__ import annotations

import hashlib
import unicodedata

from sparkcat.errors import ConfigError

#: Longest name accepted: it is a URL path segment, a Kafka record key and a Spark query name.
MAX_NAME_LENGTH = 1000

#: The config log follower's name (it was a Spark query of this name): never a connector's, so logs and the
#: Spark UI of older checkpoints never mix it up with one.
CONFIG_STREAM = "sparkcat-config-log"

#: Spark query names must be unique, and connector queries are named after their connector.
#: A standby's warm-up query (``spark/warm_up.py``); its checkpoint is ``_`` + this name + the driver.
WARM_UP_QUERY = "sparkcat-standby-warm-up"
RESERVED_NAMES = frozenset({CONFIG_STREAM, WARM_UP_QUERY})
#: Queries that several connectors share (``spark/driver/shared_sources.py``) are named with this prefix.
SHARED_QUERY_PREFIX = "sparkcat-shared-"

_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.")
_MAX_DIR_NAME = 200  # bytes; file systems allow 255 per component


def _is_iso_control(ch: str) -> bool:
    """Java's ``Character.isISOControl``: U+0000..U+001F and U+007F..U+009F."""
    return ord(ch) <= 0x1F or 0x7F <= ord(ch) <= 0x9F


def name_problem(name: object) -> str | None:
    """Why ``name`` cannot name a connector, or None when it can.

    >>> name_problem("orders-to-s3"), name_problem("..") is None, name_problem("caf\u00e9 \U0001F680") is None
    (None, True, True)
    >>> name_problem("a\\nb")
    'Connector names may not contain ISO control characters, but this one contains U+000A'
    """
    if not isinstance(name, str) or not name:
        return "Connector names may not be empty"
    controls = sorted({f"U+{ord(c):04X}" for c in name if _is_iso_control(c)})
    if controls:
        return f"Connector names may not contain ISO control characters, but this one contains {', '.join(controls)}"
    if not name.strip():
        return "Connector names may not be blank"
    if name[0].isspace() or name[-1].isspace():
        return "Connector names may not start or end with whitespace"
    if any(unicodedata.category(c) == "Cs" for c in name):
        return "Connector names must be valid Unicode text (this one contains a lone surrogate)"
    if len(name) > MAX_NAME_LENGTH:
        return f"Connector names may be at most {MAX_NAME_LENGTH} characters long (this one has {len(name)})"
    if name in RESERVED_NAMES:
        return f"The connector name {name!r} is reserved by sparkcat (its config log stream)"
    if name.startswith(SHARED_QUERY_PREFIX):
        return f"Connector names may not start with {SHARED_QUERY_PREFIX!r}: sparkcat's shared queries are named so"
    return None


def check_connector_name(name: object) -> str:
    """``name`` when it can name a connector; else ConfigError (400) naming the rule it breaks."""
    problem = name_problem(name)
    if problem is not None:
        raise ConfigError(f"Invalid connector name {name!r}: {problem}", {"name": [problem]})
    return name  # type: ignore[return-value]


def dir_name(name: str) -> str:
    """One path component for ``name``: readable, injective, never ``.``/``..``, never starting with ``_``.

    Letters, digits, ``-``, ``_`` and ``.`` stay as they are, except a leading ``.``
    or ``_``; everything else (``/``, ``%``, non-ASCII, ...) is percent-encoded as
    UTF-8. Encoded names longer than 200 bytes are cut and get a hash of the full
    name after a ``~`` (which the encoding never produces), so they stay distinct.

    >>> dir_name("orders-to-s3"), dir_name(".."), dir_name("a/../../x"), dir_name("_sparkcat-config-log")
    ('orders-to-s3', '%2E.', 'a%2F..%2F..%2Fx', '%5Fsparkcat-config-log')
    """
    out = []
    for i, ch in enumerate(name):
        if ch in _SAFE and not (i == 0 and ch in "._"):
            out.append(ch)
        else:
            out.extend(f"%{b:02X}" for b in ch.encode("utf-8"))
    encoded = "".join(out)
    if len(encoded) > _MAX_DIR_NAME:
        digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:16]
        encoded = f"{encoded[:_MAX_DIR_NAME - 17]}~{digest}"
    return encoded
