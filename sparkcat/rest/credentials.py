"""Who may call the REST API: Connect's credentials file for HTTP Basic, and a bearer tokens file.

Both files use the format of Connect's ``PropertyFileLoginModule`` (a Java properties
file, as Jetty's realm file): one ``name: secret`` (or ``name=secret``) per line, ``#``
or ``!`` comments. In the credentials file the name is the user and the secret its
password; in the tokens file the name only labels the token in logs. Secrets are kept
as SHA-256 digests and compared in constant time; they are never logged.

One deliberate difference from Connect: an empty credentials file lets every request in
there (with a warning); here it refuses to start, since that is never what was meant.

>>> users = PasswordFile.parse("alice: s3cret\\n# a comment\\nbob=hunter2\\n")
>>> users.check("alice", "s3cret"), users.check("alice", "wrong"), users.check("carol", "s3cret")
('alice', None, None)
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import logging
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from sparkcat.errors import ConfigError

log = logging.getLogger("sparkcat.rest")

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
#: What a missing user's password is compared with, so an unknown name takes as long as a wrong password.
_NOBODY = hashlib.sha256(b"\0sparkcat-no-such-user").digest()


def _logical_lines(text: str) -> list[str]:
    """Lines as ``java.util.Properties`` sees them: comments dropped, ``\\`` at the end continues a line."""
    out: list[str] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.lstrip(" \t\f")
        if not pending and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            pending += line[:-1]
            continue
        out.append(pending + line)
        pending = ""
    if pending:
        out.append(pending)
    return out


def _unescape(text: str) -> str:
    out = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "u" and i + 6 <= len(text):
                try:
                    out.append(chr(int(text[i + 2:i + 6], 16)))
                    i += 6
                    continue
                except ValueError:
                    pass
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def parse_properties(text: str) -> dict[str, str]:
    """A Java properties file: key ends at the first unescaped ``=``, ``:`` or blank; one separator is eaten.

    >>> parse_properties("a: 1\\nb=two words \\n c   x\\\\\\n  y\\nd\\\\:e=f")
    {'a': '1', 'b': 'two words ', 'c': 'xy', 'd:e': 'f'}
    """
    out: dict[str, str] = {}
    for line in _logical_lines(text):
        i = 0
        while i < len(line) and not (line[i] in "=: \t\f"):
            i += 2 if line[i] == "\\" else 1
        key, rest = line[:i], line[i:]
        rest = rest.lstrip(" \t\f")
        if rest[:1] in ("=", ":"):
            rest = rest[1:].lstrip(" \t\f")
        out[_unescape(key)] = _unescape(rest)
    return out


def _digest(secret: str) -> bytes:
    return hashlib.sha256(secret.encode("utf-8")).digest()


def _read(path: str, key: str) -> dict[str, str]:
    """The entries of a secrets file; a missing, unreadable or empty file is a ConfigError naming ``key``."""
    file = Path(path).expanduser()
    try:
        text = file.read_text(encoding="utf-8")
        mode = file.stat().st_mode
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{key}: cannot read {path}: {e.strerror if isinstance(e, OSError) else e}",
                          {key: ["cannot be read"]}) from None
    entries = parse_properties(text)
    if not entries:
        raise ConfigError(f"{key}: {path} has no entries; write one `name: secret` per line",
                          {key: ["has no entries"]})
    if mode & (stat.S_IRWXG | stat.S_IRWXO) and os.name == "posix":
        log.warning("%s %s can be read by other users (mode %o); chmod 600 it", key, path, stat.S_IMODE(mode))
    return entries


@dataclass(frozen=True)
class PasswordFile:
    """Users and their password digests (``rest.auth.basic.credentials.file``)."""

    users: dict[str, bytes]

    @classmethod
    def parse(cls, text: str) -> PasswordFile:
        return cls({user: _digest(password) for user, password in parse_properties(text).items()})

    @classmethod
    def load(cls, path: str) -> PasswordFile:
        entries = _read(path, "rest.auth.basic.credentials.file")
        return cls({user: _digest(password) for user, password in entries.items()})

    def check(self, user: str, password: str) -> str | None:
        """The user when the password is theirs; None otherwise (same work for unknown users)."""
        expected = self.users.get(user, _NOBODY)
        matches = hmac.compare_digest(_digest(password), expected)
        return user if matches and user in self.users else None


@dataclass(frozen=True)
class TokenFile:
    """Bearer tokens by label (``rest.auth.bearer.tokens.file``)."""

    tokens: tuple[tuple[str, bytes], ...]

    @classmethod
    def load(cls, path: str) -> TokenFile:
        entries = _read(path, "rest.auth.bearer.tokens.file")
        return cls(tuple((label, _digest(token)) for label, token in entries.items()))

    def check(self, token: str) -> str | None:
        """The label of ``token``; every stored token is compared, so timing does not tell which matched."""
        given = _digest(token)
        found = None
        for label, digest in self.tokens:
            if hmac.compare_digest(given, digest) and found is None:
                found = label
        return found


def basic_credentials(header: str) -> tuple[str, str] | None:
    """(user, password) of an ``Authorization: Basic ...`` value; None when it is not one, or malformed.

    >>> basic_credentials("Basic " + base64.b64encode(b"alice:pa:ss").decode())
    ('alice', 'pa:ss')
    >>> basic_credentials("Basic !!!") is None, basic_credentials("Bearer x") is None
    (True, True)
    """
    scheme, _, value = header.strip().partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(value.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    user, colon, password = decoded.partition(":")
    return (user, password) if colon and user else None


def bearer_token(header: str) -> str | None:
    """The token of an ``Authorization: Bearer ...`` value."""
    scheme, _, value = header.strip().partition(" ")
    return value.strip() or None if scheme.lower() == "bearer" else None
