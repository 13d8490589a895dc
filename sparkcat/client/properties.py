"""Java ``.properties`` files, as ``java.util.Properties.load`` reads them (a Connect worker's config).

``sparkcat migrate --worker-config connect-distributed.properties`` reads the converters of the
Connect worker it moves connectors from: Connect's REST API does not show a worker's config.
"""

from __future__ import annotations

from pathlib import Path

from sparkcat.errors import ConfigError

__all__ = ["parse_properties", "read_properties"]

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def read_properties(path: str | Path) -> dict[str, str]:
    """The keys and values of a properties file (ISO-8859-1, as Java reads it); ConfigError when unreadable."""
    try:
        return parse_properties(Path(path).read_bytes().decode("latin-1"))
    except OSError as e:
        raise ConfigError(f"cannot read the worker config {path}: {e.strerror or e}") from None


def parse_properties(text: str) -> dict[str, str]:
    r"""Keys and values of properties text: comments, ``=``/``:``/space separators, continuations, escapes.

    >>> parse_properties("# c\nkey.converter=org.A\nvalue.converter : org.B\\\n   C\na\\=b   x\n! c\n")
    {'key.converter': 'org.A', 'value.converter': 'org.BC', 'a=b': 'x'}
    """
    out: dict[str, str] = {}
    for line in _logical_lines(text):
        key, value = _split(line)
        out[_unescape(key)] = _unescape(value)
    return out


def _logical_lines(text: str) -> list[str]:
    """Non-comment lines, each joined with the next while it ends in an odd number of backslashes."""
    lines, current = [], None
    for raw in text.splitlines():
        part = raw.lstrip(" \t\f")
        if current is None and (not part or part[0] in "#!"):
            continue
        current = part if current is None else current + part
        trailing = len(current) - len(current.rstrip("\\"))
        if trailing % 2:
            current = current[:-1]
            continue
        lines.append(current)
        current = None
    if current is not None:
        lines.append(current)
    return lines


def _split(line: str) -> tuple[str, str]:
    """The key (up to the first unescaped ``=``, ``:`` or white space) and the value after the separator."""
    i = 0
    while i < len(line) and line[i] not in "=: \t\f":
        i += 2 if line[i] == "\\" else 1
    key, rest = line[:i], line[i:].lstrip(" \t\f")
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(" \t\f")
    return key, rest


def _unescape(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c != "\\" or i + 1 == len(text):
            out.append(c)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u" and len(text) >= i + 6:
            try:
                out.append(chr(int(text[i + 2:i + 6], 16)))
            except ValueError:
                raise ConfigError(f"malformed \\uxxxx escape in {text!r}") from None
            i += 6
            continue
        out.append(_ESCAPES.get(nxt, nxt))
        i += 2
    return "".join(out)
