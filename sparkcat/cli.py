"""The ``sparkcat`` command: validate specs, and (with the driver) inspect and steer connectors."""

from __future__ import annotations

import argparse
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sparkcat", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("validate", help="check YAML connector specs without running them")
    p.add_argument("files", nargs="+", help="spec files or directories of *.yaml")
    p.set_defaults(func=_validate)
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
