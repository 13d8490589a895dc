"""``sparkcat validate``: check specs offline against the plugins' ConfigDefs, or ``--remote`` through
the driver, and print each error with file, connector and key."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from sparkcat.cli.common import client, spec_variables, substituted, worker
from sparkcat.client.rest import ApiError, RestClient
from sparkcat.errors import SparkcatError
from sparkcat.specs import ConnectorSpec, load_file, spec_files

Check = Callable[[ConnectorSpec], tuple[dict[str, list[str]], str]]


def register(sub: Any, conn: argparse.ArgumentParser) -> None:
    p = sub.add_parser("validate", help="check YAML connector specs without running them", parents=[conn])
    p.add_argument("files", nargs="+", help="spec files or directories of *.yaml")
    p.add_argument("--remote", action="store_true", help="validate through the driver's REST API")
    p.add_argument("--state-dir", help="value of ${state.dir} in specs, and the state.dir whose defaults "
                                       "file.allowed.dirs follows (default: the worker config's)")
    p.set_defaults(func=validate)


def validate(args: argparse.Namespace) -> int:
    """Check every spec (offline against its ConfigDef, or --remote through the driver); print each error
    with file, connector and key."""
    check = _remote_check(client(args)) if args.remote else _offline_check(_worker_policy(args))
    # As apply and the driver's pipeline watcher do: paths under ${state.dir} are checked where they point.
    variables = spec_variables(args.state_dir, args.worker_config)
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
            spec = substituted(spec, variables)
            failures += _report_check(spec, *check(spec))
    if not files:
        print("no spec files given or found", file=sys.stderr)
        return 2
    return 1 if failures else 0


def _printable(text: str) -> str:
    """``text`` with what cannot be encoded (a spec's lone surrogates) escaped, so reporting never crashes."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _report_check(spec: ConnectorSpec, errors: dict[str, list[str]], summary: str) -> int:
    """Print one spec's errors (stderr) or that it is valid; the number of failing keys."""
    for key, messages in errors.items():
        for message in messages:
            print(_printable(f"{spec.source}: connector {spec.name}: {key}: {message}"), file=sys.stderr)
    if not errors:
        print(f"{spec.source}: connector {spec.name}: valid ({summary})")
    return len(errors)


def _worker_policy(args: argparse.Namespace):
    """The worker's plugin packages, allowed dirs and config providers (``--worker-config``, ``--state-dir``)."""
    from sparkcat.policy.input_policy import InputPolicy

    settings = worker(args.worker_config, state_dir=args.state_dir)
    if settings.plugin_path:  # Connect's classes run in a driver's JVM; offline, its Java plugins are unknown
        print("note: the worker's plugin.path is not looked at offline: a Java connector there is validated "
              "by the driver (sparkcat validate --remote), and no built-in of the same name runs in its place",
              file=sys.stderr)
    return InputPolicy.of(settings)


def _offline_check(policy) -> Check:
    """Validation against the plugins' ConfigDefs and the worker's InputPolicy, without a driver."""
    def check(spec: ConnectorSpec) -> tuple[dict[str, list[str]], str]:
        from sparkcat.config.validation import validate_connector_config

        result = validate_connector_config(spec.config, policy)
        return result.errors, f"{result.connector_class}, {result.connector_type}"
    return check


def _remote_check(rest: RestClient) -> Check:
    """PUT /connector-plugins/{connector.class}/config/validate; a 400 (unknown class) names connector.class."""
    def check(spec: ConnectorSpec) -> tuple[dict[str, list[str]], str]:
        plugin = spec.config.get("connector.class")
        if not plugin:
            return {"connector.class": ["Missing required configuration \"connector.class\""]}, ""
        try:
            body = rest.validate(plugin, spec.config)
        except ApiError as e:
            if e.http_status != 400:
                raise
            return {"connector.class": [e.message]}, ""
        values = [c["value"] for c in body["configs"] if c.get("value")]
        return {v["name"]: v["errors"] for v in values if v.get("errors")}, body["name"]

    return check
