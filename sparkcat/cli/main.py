"""The ``sparkcat`` command: validate specs offline, and inspect and steer a driver over its REST API.

Every command but ``validate`` (and ``status`` with --state-dir/--bootstrap-servers) is a
client of the Kafka Connect REST API at ``--url`` (else $SPARKCAT_URL, else the first of
``listeners`` or rest.host/rest.port of conf/worker.yaml, else http://127.0.0.1:8083), with
``--user``/``--token`` when the API asks for credentials, ``--cacert`` for a private CA and
``--cert``/``--key`` for a client certificate.
The CLI only formats what the API returns. Exit codes: 0 ok, 1 the server (or a spec) reported an error, 2 usage error
or the API cannot be reached.

Examples::

    sparkcat get
    sparkcat apply pipelines/ --dry-run --prune
    sparkcat offsets set seq --partition '{"increment": 1}' --offset '{"position": 1000}'
    sparkcat migrate --from-connect http://connect:8083 orders-source
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from sparkcat.cli import apply, lifecycle, migrate, offsets, read, validate
from sparkcat.client.render import FORMATS
from sparkcat.client.rest import ApiError, UnreachableError
from sparkcat.errors import SparkcatError


def _parents() -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    """The connection options every REST command takes, and ``-o`` of the read commands."""
    connection = argparse.ArgumentParser(add_help=False)
    connection.add_argument("--url", help="REST API (default: $SPARKCAT_URL, else the first listener of the "
                                          "worker config, else http://127.0.0.1:8083)")
    connection.add_argument("--worker-config", help="worker YAML (default conf/worker.yaml when present)")
    connection.add_argument("--user", help="HTTP Basic USER:PASSWORD (USER alone: asked on the terminal; "
                                           "default $SPARKCAT_USER)")
    connection.add_argument("--token", help="bearer token (default $SPARKCAT_TOKEN). Without either, the first "
                                            "entry of the worker config's tokens or credentials file, if readable")
    connection.add_argument("--cacert", help="PEM file of the CA (or self-signed certificate) to trust for "
                                             "https:// (default: the system CAs; $SPARKCAT_CACERT)",
                            default=os.environ.get("SPARKCAT_CACERT") or None)
    connection.add_argument("--insecure", action="store_true", help="do not verify the server's certificate")
    connection.add_argument("--cert", help="PEM client certificate (with its key unless --key) for a listener that "
                                           "asks for one, listeners.https.ssl.client.auth ($SPARKCAT_CERT)",
                            default=os.environ.get("SPARKCAT_CERT") or None)
    connection.add_argument("--key", help="PEM private key of --cert ($SPARKCAT_KEY)",
                            default=os.environ.get("SPARKCAT_KEY") or None)
    output = argparse.ArgumentParser(add_help=False)
    output.add_argument("-o", "--output", choices=FORMATS, default="table")
    return connection, output


def build_parser() -> argparse.ArgumentParser:
    """The ``sparkcat`` parser; each command module declares its subcommands (in ``--help`` order)."""
    parser = argparse.ArgumentParser(prog="sparkcat", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    conn, out = _parents()
    validate.register(sub, conn)
    read.register(sub, conn, out)
    apply.register(sub, conn)
    lifecycle.register(sub, conn)
    offsets.register(sub, conn, out)
    migrate.register(sub, conn)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except UnreachableError as e:
        print(f"error: {e.message}", file=sys.stderr)
        return 2
    except ApiError as e:
        hint = ("; pass --user USER:PASSWORD or --token TOKEN (or set SPARKCAT_USER / SPARKCAT_TOKEN)"
                if e.http_status == 401 else "")
        print(f"error: {e.message}{hint}", file=sys.stderr)
        return 1
    except SparkcatError as e:
        print(f"error: {e.message}", file=sys.stderr)
        return 1

