"""A real PostgreSQL server for tests and benchmarks: initdb + pg_ctl in a temporary directory.

The binaries come from Debian's ``postgresql`` package (``scripts/postgres.sh`` installs it). The
server refuses to run as root, so when we are root it runs as the ``postgres`` user (or
``nobody``) through ``setpriv``, in a directory owned by that user. It listens on a free loopback
port (password auth, scram-sha-256) and on a unix socket in its directory (trust, for set-up).
``PostgresServer(logical_replication=True)`` also decodes its WAL for logical replication (``wal_level=logical``
and room for replication slots), as change data capture (Debezium's ``pgoutput`` plugin) needs it.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path
from typing import Any

PASSWORD = "sparkcat-test-pw"
USER = "postgres"


def bin_dir() -> Path:
    """The newest PostgreSQL server binaries installed."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    if initdb:
        return Path(initdb).parent
    raise RuntimeError("PostgreSQL's initdb is not installed; tests/run.sh installs it (apt-get install postgresql)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresServer:
    """One PostgreSQL server; ``with PostgresServer() as pg:`` starts it and removes it afterwards.

    ``logical_replication``: ``wal_level=logical`` with 20 replication slots and WAL senders; without it the
    server keeps PostgreSQL's defaults (``wal_level=replica``), as the JDBC tests always ran on.
    """

    def __init__(self, logical_replication: bool = False) -> None:
        self.logical_replication = logical_replication
        self.bin = bin_dir()
        self.port = _free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="sparkcat-pg-"))
        self.data, self.socket_dir, self.log = self.dir / "data", self.dir / "sock", self.dir / "server.log"
        self._as_user: list[str] = []
        if os.geteuid() == 0:
            account = next((a for a in ("postgres", "nobody") if _has_user(a)), None)
            if account is None:
                raise RuntimeError("running as root and no 'postgres' or 'nobody' user to run PostgreSQL as")
            entry = pwd.getpwnam(account)
            self._as_user = ["setpriv", f"--reuid={entry.pw_uid}", f"--regid={entry.pw_gid}", "--clear-groups"]
            os.chown(self.dir, entry.pw_uid, entry.pw_gid)

    def _run(self, *args: str) -> None:
        subprocess.run([*self._as_user, *args], check=True, cwd=self.dir, capture_output=True, timeout=120)

    def __enter__(self) -> PostgresServer:
        self.socket_dir.mkdir()
        os.chown(self.socket_dir, *_owner(self.dir))
        pwfile = self.dir / "pw"
        pwfile.write_text(PASSWORD)
        os.chown(pwfile, *_owner(self.dir))
        self._run(str(self.bin / "initdb"), "-D", str(self.data), "-U", USER, "--pwfile", str(pwfile),
                  "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--no-sync")
        options = (f"-p {self.port} -k {self.socket_dir} -c listen_addresses=127.0.0.1 -c fsync=off "
                   "-c full_page_writes=off -c max_connections=200 -c shared_buffers=128MB")
        if self.logical_replication:
            options += " -c wal_level=logical -c max_replication_slots=20 -c max_wal_senders=20"
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-w", "-o", options, "start")
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def stop(self) -> None:
        try:
            if (self.data / "postmaster.pid").exists():
                self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop")
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)

    def url(self, database: str = "postgres") -> str:
        """The JDBC URL a connector config takes."""
        return f"jdbc:postgresql://127.0.0.1:{self.port}/{database}"

    def connect(self, database: str = "postgres", autocommit: bool = True) -> Any:
        """A psycopg connection over TCP with the password, as the connectors connect."""
        import psycopg
        return psycopg.connect(host="127.0.0.1", port=self.port, user=USER, password=PASSWORD, dbname=database,
                               autocommit=autocommit, options="-c TimeZone=UTC")

    def create_database(self, prefix: str = "t") -> str:
        """A new empty database with a unique name."""
        name = f"{prefix}_{uuid.uuid4().hex[:10]}".replace("-", "_")
        with self.connect() as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return name

    def connection_config(self, database: str) -> dict[str, str]:
        """Connect JDBC's connection keys for ``database``."""
        return {"connection.url": self.url(database), "connection.user": USER, "connection.password": PASSWORD}


def _has_user(name: str) -> bool:
    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


def _owner(path: Path) -> tuple[int, int]:
    st = path.stat()
    return st.st_uid, st.st_gid
