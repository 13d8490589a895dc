"""The ``sparkcat`` command: validate specs, and (with the driver) inspect and steer connectors."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from sparkcat.errors import SparkcatError


def _validate(args: argparse.Namespace) -> int:
    """Check every spec against its connector's ConfigDef; print each error with file, connector and key."""
    from sparkcat.runtime.validation import validate_connector_config
    from sparkcat.specs import load_file, spec_files

    failures = 0
    seen: dict[str, str] = {}
    files = spec_files(args.files)
    for path in files:
        try:
            specs = load_file(path)
        except SparkcatError as e:
            print(f"{e.message}", file=sys.stderr)
            failures += 1
            continue
        for spec in specs:
            if spec.name in seen:
                print(f"{spec.source}: connector {spec.name}: name: also defined in {seen[spec.name]}",
                      file=sys.stderr)
                failures += 1
                continue
            seen[spec.name] = spec.source
            result = validate_connector_config(spec.config)
            for key, messages in result.errors.items():
                for message in messages:
                    print(f"{spec.source}: connector {spec.name}: {key}: {message}", file=sys.stderr)
                failures += 1
            if not result.errors:
                print(f"{spec.source}: connector {spec.name}: valid ({result.connector_class}, "
                      f"{result.connector_type})")
    if not files:
        print("no spec files given or found", file=sys.stderr)
        return 2
    return 1 if failures else 0


def _status(args: argparse.Namespace) -> int:
    """Connector and task states, worker ids, offsets and traces, read from the stores directly."""
    from sparkcat.bootstrap import worker_from_args
    from sparkcat.runtime.status_view import connector_offsets, connector_status
    from sparkcat.storage.factory import open_stores

    worker = worker_from_args(argparse.Namespace(
        worker_config=args.worker_config, bootstrap_servers=args.bootstrap_servers, state_dir=args.state_dir,
        pipelines_dir=None, rest_port=None, rest_host=None, group_id=None))
    stores = open_stores(worker)
    try:
        state = stores.config.snapshot()
        names = [args.name] if args.name else state.connectors()
        report = []
        for name in names:
            entry = connector_status(name, state, stores.status)
            entry["offsets"] = connector_offsets(name, stores.offsets)
            report.append(entry)
    finally:
        stores.close()
    if args.output == "json":
        print(json.dumps(report[0] if args.name else report, indent=2))
    else:
        print(_status_table(report))
    return 0


def _status_table(report: list[dict]) -> str:
    lines = []
    for entry in report:
        c = entry["connector"]
        lines.append(f"{entry['name']} ({entry['type']}): {c['state']} on {c['worker_id'] or '-'}")
        for t in entry["tasks"]:
            lines.append(f"  task {t['id']}: {t['state']} on {t['worker_id'] or '-'}")
            if t.get("trace"):
                lines.append("    " + t["trace"].strip().splitlines()[-1])
        if c.get("trace"):
            lines.append("  trace: " + c["trace"].strip().splitlines()[-1])
        for o in entry["offsets"]:
            lines.append(f"  offset {json.dumps(o['partition'])} -> {json.dumps(o['offset'])}")
    return "\n".join(lines) if lines else "no connectors"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sparkcat", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("validate", help="check YAML connector specs without running them")
    p.add_argument("files", nargs="+", help="spec files or directories of *.yaml")
    p.set_defaults(func=_validate)
    p = sub.add_parser("status", help="connector and task states, read from the stores (no REST needed)")
    p.add_argument("name", nargs="?", help="one connector (default: all)")
    p.add_argument("--state-dir", help="the driver's state directory (local stores)")
    p.add_argument("--bootstrap-servers", help="read the Kafka stores instead")
    p.add_argument("--worker-config", help="worker YAML (default conf/worker.yaml when present)")
    p.add_argument("-o", "--output", choices=("table", "json"), default="table")
    p.set_defaults(func=_status)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except SparkcatError as e:
        print(f"error: {e.message}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
