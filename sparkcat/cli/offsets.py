"""``sparkcat offsets get|set|reset``: read, alter or reset a connector's offsets over REST."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from sparkcat.cli.common import add_named, client, emit, usage
from sparkcat.client.render import compact, table
from sparkcat.errors import ConfigError


def register(sub: Any, conn: argparse.ArgumentParser, out: argparse.ArgumentParser) -> None:
    offsets = sub.add_parser("offsets", help="read, alter or reset a connector's offsets")
    verbs = offsets.add_subparsers(dest="verb", required=True)
    add_named(verbs, "get", offsets_get, "the connector's offsets", conn, out)
    p = add_named(verbs, "set", offsets_set, "alter offsets of a STOPPED connector", conn)
    p.add_argument("file", nargs="?", help='JSON/YAML: {"offsets": [{"partition": {...}, "offset": {...}}]}')
    p.add_argument("--partition", help="one source partition as JSON")
    p.add_argument("--offset", help="its new offset as JSON (null resets it)")
    add_named(verbs, "reset", offsets_reset, "reset offsets of a STOPPED connector", conn)


def offsets_get(args: argparse.Namespace) -> int:
    body = client(args).offsets(args.name)
    emit(args, body, _offsets_table)
    return 0


def _offsets_table(body: dict[str, Any]) -> str:
    rows = [[compact(o["partition"]), compact(o["offset"])] for o in body["offsets"]]
    return table(["PARTITION", "OFFSET"], rows) if rows else "no offsets"


def offsets_set(args: argparse.Namespace) -> int:
    """PATCH the offsets of a STOPPED connector, from a JSON/YAML file or --partition/--offset."""
    pair = args.partition is not None or args.offset is not None
    if bool(args.file) == pair:
        return usage(args, "give either FILE or both --partition and --offset")
    if pair and (args.partition is None or args.offset is None):
        return usage(args, "--partition and --offset go together")
    entries = _offsets_file(args.file) if args.file else [
        {"partition": _json_arg("--partition", args.partition), "offset": _json_arg("--offset", args.offset)}]
    print(client(args).alter_offsets(args.name, entries)["message"])
    return 0


def _offsets_file(path: str) -> list[Any]:
    """``{"offsets": [...]}`` (as ``offsets get -o json`` prints it), a list of entries, or one entry."""
    import yaml

    try:
        data = yaml.safe_load(Path(path).read_text())
    except OSError as e:
        raise ConfigError(f"{path}: cannot read: {e.strerror}") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: not valid JSON or YAML: {e}") from None
    if isinstance(data, dict):
        data = data["offsets"] if "offsets" in data else [data]
    if not isinstance(data, list):
        raise ConfigError(f"{path}: expected {{\"offsets\": [{{\"partition\": ..., \"offset\": ...}}]}}")
    return data


def _json_arg(flag: str, text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as e:
        raise ConfigError(f"{flag} is not valid JSON: {e}") from None


def offsets_reset(args: argparse.Namespace) -> int:
    print(client(args).reset_offsets(args.name)["message"])
    return 0
