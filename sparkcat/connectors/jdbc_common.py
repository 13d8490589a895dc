"""What the JDBC source and sink share: Connect JDBC's connection keys, URL bounds, connections, names.

Only PostgreSQL is supported, through psycopg 3 (imported where a connection opens, so the
connectors load without it). A ``connection.url`` is user input: it is parsed here and only
``jdbc:postgresql://host[:port]/database`` with the query parameters in ``URL_PARAMETERS`` is
accepted; anything else (another database, a unix socket path, ``sslkey``/``sslrootcert`` file
names, ``options``) is refused with a message naming the key, so a connector config can never make
a task open a file or pass raw server options.

Every session runs with ``TimeZone=UTC``: Connect's ``db.timezone`` default, so ``timestamp``
columns (without time zone) are read and written as UTC instants.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, unquote

from sparkcat import redact
from sparkcat.api.config import ConfigDef, Custom, Importance, Type
from sparkcat.errors import ConfigError, ConnectorError

__all__ = ["CONNECTION_URL", "CONNECTION_USER", "CONNECTION_PASSWORD", "ConnectionSettings", "define_connection",
           "parse_url", "connect", "qualified", "split_name", "URL_PARAMETERS"]

CONNECTION_URL = "connection.url"
CONNECTION_USER = "connection.user"
CONNECTION_PASSWORD = "connection.password"

#: JDBC URL parameters accepted, and the libpq keyword each becomes.
URL_PARAMETERS = {"sslmode": "sslmode", "connectTimeout": "connect_timeout", "ApplicationName": "application_name",
                  "user": "user"}
_SSLMODES = {"disable", "allow", "prefer", "require", "verify-ca", "verify-full"}
_URL = re.compile(r"jdbc:postgresql://(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.\-]+)(?::(?P<port>[0-9]{1,5}))?"
                  r"/(?P<db>[^/?#]+)(?:\?(?P<query>[^#]*))?")


@dataclass(frozen=True)
class ConnectionSettings:
    """Where and how to connect: parsed from ``connection.url``, ``connection.user`` and ``connection.password``."""

    host: str
    port: int
    database: str
    user: str | None
    password: str | None
    params: tuple[tuple[str, str], ...] = ()

    def conninfo(self) -> dict[str, Any]:
        """Keyword arguments for ``psycopg.connect``."""
        kwargs: dict[str, Any] = {"host": self.host, "port": self.port, "dbname": self.database,
                                  "options": "-c TimeZone=UTC"}
        kwargs.update(dict(self.params))
        if self.user:
            kwargs["user"] = self.user
        if self.password:
            kwargs["password"] = self.password
        return kwargs

    def describe(self) -> str:
        """The server and database, for messages (never the password)."""
        return f"postgresql://{self.host}:{self.port}/{self.database}"


def _url_problem(name: str, value: Any) -> str | None:
    try:
        parse_url(str(value or ""))
    except ConfigError as e:
        return str(e)
    return None


def parse_url(url: str) -> tuple[str, int, str, tuple[tuple[str, str], ...]]:
    """``(host, port, database, libpq params)`` of a ``jdbc:postgresql://`` URL; ConfigError says what is wrong.

    >>> parse_url("jdbc:postgresql://db.example:5433/shop?sslmode=require")
    ('db.example', 5433, 'shop', (('sslmode', 'require'),))
    >>> parse_url("jdbc:mysql://db/shop")
    Traceback (most recent call last):
    ...
    sparkcat.errors.ConfigError: only PostgreSQL URLs (jdbc:postgresql://host[:port]/database) are supported
    """
    match = _URL.fullmatch(url.strip())
    if not match:
        raise ConfigError("only PostgreSQL URLs (jdbc:postgresql://host[:port]/database) are supported")
    port = int(match["port"] or 5432)
    if not 0 < port < 65536:
        raise ConfigError(f"port {port} is out of range")
    database = unquote(match["db"])
    if not database or len(database) > 63 or "\x00" in database:
        raise ConfigError("the database name must be 1 to 63 characters")
    params = []
    for key, value in parse_qsl(match["query"] or "", keep_blank_values=True):
        if key == "password":
            # The URL is shown unmasked (GET config, validation messages); the password must not live there.
            redact.remember_secret(value)
            raise ConfigError("the password URL parameter is not accepted; set connection.password "
                              "(a PASSWORD: hidden in responses and logs)")
        if key not in URL_PARAMETERS:
            raise ConfigError(f"URL parameter {key!r} is not supported; supported: {', '.join(URL_PARAMETERS)}")
        if key == "sslmode" and value not in _SSLMODES:
            raise ConfigError(f"sslmode {value!r} is not one of {', '.join(sorted(_SSLMODES))}")
        if key == "connectTimeout" and not value.isdigit():
            raise ConfigError("connectTimeout must be a number of seconds")
        params.append((URL_PARAMETERS[key], value))
    return match["host"].strip("[]"), port, database, tuple(params)


def define_connection(config_def: ConfigDef) -> ConfigDef:
    """Add Connect JDBC's connection keys to ``config_def``."""
    return (
        config_def
        .define(CONNECTION_URL, Type.STRING, validator=Custom(_url_problem, "jdbc:postgresql://host[:port]/db"),
                importance=Importance.HIGH,
                documentation="JDBC connection URL; only jdbc:postgresql://host[:port]/database, with the "
                              "parameters sslmode, connectTimeout, ApplicationName, user (the password goes in "
                              "connection.password).")
        .define(CONNECTION_USER, Type.STRING, None, importance=Importance.HIGH, documentation="JDBC connection user.")
        .define(CONNECTION_PASSWORD, Type.PASSWORD, None, importance=Importance.HIGH,
                documentation="JDBC connection password.")
    )


def connection_settings(parsed: Mapping[str, Any]) -> ConnectionSettings:
    """The connection a parsed config names (``parsed`` from ``ConfigDef.parse``)."""
    host, port, database, params = parse_url(str(parsed[CONNECTION_URL]))
    password = parsed.get(CONNECTION_PASSWORD)
    if password is not None and hasattr(password, "value"):
        password = password.value
    return ConnectionSettings(host, port, database, parsed.get(CONNECTION_USER) or None,
                              None if password is None else str(password), params)


def connect(settings: ConnectionSettings, autocommit: bool = False) -> Any:
    """A psycopg connection; a failure becomes a ConnectorError naming the server, never the password."""
    import psycopg
    try:
        return psycopg.connect(**settings.conninfo(), autocommit=autocommit)
    except psycopg.Error as e:
        message = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ConnectorError(f"Could not connect to {settings.describe()}: {message}") from e


def split_name(name: str) -> tuple[str, ...]:
    """``schema.table`` or ``table`` as its parts (no quoting: each part is a plain identifier).

    >>> split_name("public.orders"), split_name("orders")
    (('public', 'orders'), ('orders',))
    """
    parts = tuple(p for p in name.strip().split("."))
    if not 1 <= len(parts) <= 2 or any(not p or len(p) > 63 or "\x00" in p for p in parts):
        raise ConfigError(f"{name!r} is not a table name (table or schema.table, each part 1-63 characters)")
    return parts


def qualified(parts: tuple[str, ...]) -> Any:
    """A quoted SQL identifier (psycopg.sql) for ``(table,)`` or ``(schema, table)``."""
    from psycopg import sql
    return sql.Identifier(*parts)
