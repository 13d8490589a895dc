"""``migrate``: take connectors over from a Kafka Connect cluster (``--from-connect URL``) or hand them back
(``--to-connect URL``), with their committed offsets (sparkcat.client.migrate)."""

from __future__ import annotations

import argparse
from typing import Any

from sparkcat.cli.common import client, usage
from sparkcat.client.migrate import move_all
from sparkcat.client.rest import RestClient


def register(sub: Any, conn: argparse.ArgumentParser) -> None:
    text = "move connectors with their offsets from a Kafka Connect cluster to sparkcat, or back"
    p = sub.add_parser("migrate", help=text, description=text, parents=[conn])
    side = p.add_mutually_exclusive_group(required=True)
    side.add_argument("--from-connect", metavar="URL", help="Kafka Connect's REST API to take the connectors from")
    side.add_argument("--to-connect", metavar="URL", help="Kafka Connect's REST API to hand the connectors back to")
    p.add_argument("names", nargs="*", help="connectors to move (default: all of the source)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Move the connectors; exit 1 when any could not be moved (each is reported on its own line)."""
    url = args.from_connect or args.to_connect
    if not url.startswith(("http://", "https://")):
        return usage(args, f"{url!r} is not an http(s):// URL")
    connect = RestClient(url.rstrip("/"), cafile=args.cacert, insecure=args.insecure)
    ours = client(args)
    source, target = (connect, ours) if args.from_connect else (ours, connect)
    results = move_all(source, target, args.names)
    return 0 if all(r.ok for r in results) else 1
