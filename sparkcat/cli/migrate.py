"""``migrate``: take connectors over from a Kafka Connect cluster (``--from-connect URL``) or hand them back
(``--to-connect URL``), with their committed offsets (sparkcat.client.migrate).

The converters of the worker connectors leave are carried into every moved config that names none: the
Connect worker's from its properties file (``--connect-worker-config``; without it each such connector
is moved with a warning), sparkcat's from its worker config (``--worker-config``, default conf/worker.yaml),
with JsonConverter where it names none, sparkcat's default."""

from __future__ import annotations

import argparse
from typing import Any

from sparkcat.cli.common import client, usage, worker
from sparkcat.client.migrate import move_all
from sparkcat.client.properties import read_properties
from sparkcat.client.rest import RestClient

JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"


def register(sub: Any, conn: argparse.ArgumentParser) -> None:
    text = "move connectors with their offsets from a Kafka Connect cluster to sparkcat, or back"
    p = sub.add_parser("migrate", help=text, description=text, parents=[conn])
    side = p.add_mutually_exclusive_group(required=True)
    side.add_argument("--from-connect", metavar="URL", help="Kafka Connect's REST API to take the connectors from")
    side.add_argument("--to-connect", metavar="URL", help="Kafka Connect's REST API to hand the connectors back to")
    p.add_argument("--connect-worker-config", metavar="FILE",
                   help="the Kafka Connect worker's properties (connect-distributed.properties): its key.converter, "
                        "value.converter, header.converter and their settings go into every moved connector that "
                        "names none (Connect's REST API does not show them)")
    p.add_argument("names", nargs="*", help="connectors to move (default: all of the source)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Move the connectors; exit 1 when any could not be moved (each is reported on its own line)."""
    url = args.from_connect or args.to_connect
    if not url.startswith(("http://", "https://")):
        return usage(args, f"{url!r} is not an http(s):// URL")
    connect = RestClient(url.rstrip("/"), cafile=args.cacert, insecure=args.insecure, certfile=args.cert,
                         keyfile=args.key)
    ours = client(args)
    source, target = (connect, ours) if args.from_connect else (ours, connect)
    results = move_all(source, target, args.names, worker_converters=_source_converters(args))
    return 0 if all(r.ok for r in results) else 1


def _source_converters(args: argparse.Namespace) -> dict[str, str] | None:
    """The converter keys of the source's worker; None when unknown (a Connect worker without its file)."""
    if args.to_connect:  # sparkcat's: its worker config, with its JsonConverter default on each side it leaves unset
        return {"key.converter": JSON_CONVERTER, "value.converter": JSON_CONVERTER,
                **worker(args.worker_config).converters}
    if args.connect_worker_config:
        return read_properties(args.connect_worker_config)
    return None
