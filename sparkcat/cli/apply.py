"""``sparkcat apply``: create or update connectors from YAML specs, ``--prune`` the ones no file names,
``--dry-run`` to print the plan only."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from sparkcat.cli.common import client, spec_variables, substituted
from sparkcat.client.plan import CHANGED, CREATED, UNCHANGED, SpecPlan, plan_apply, plan_prune
from sparkcat.client.rest import ApiError, RestClient
from sparkcat.errors import ConfigError
from sparkcat.config.validation import SINK_PREFIX
from sparkcat.specs import ConnectorSpec, load_specs, spec_files


def register(sub: Any, conn: argparse.ArgumentParser) -> None:
    p = sub.add_parser("apply", help="create or update connectors from YAML specs", parents=[conn])
    p.add_argument("files", nargs="+", help="spec files or directories of *.yaml")
    p.add_argument("--dry-run", action="store_true", help="print the difference with what runs; change nothing")
    p.add_argument("--prune", action="store_true", help="delete running connectors absent from the files")
    p.add_argument("--state-dir", help="value of ${state.dir} in specs (default: state.dir of the worker config)")
    p.set_defaults(func=apply)


def apply(args: argparse.Namespace) -> int:
    """Create or update each spec (PUT /connectors/{name}/config; POST on create with initial_state);
    with --prune delete running connectors no file names; with --dry-run only print the plan."""
    rest = client(args)
    specs = _load_specs(args.files, args.state_dir, args.worker_config)
    running = {name: entry["info"]["config"] for name, entry in rest.connectors("info").items()}
    plans = plan_apply({s.name: s.config for s in specs}, running)
    doomed = plan_prune([s.name for s in specs], running) if args.prune else []
    if args.dry_run:
        for spec, plan in zip(specs, plans):
            print(_outcome(plan, spec.initial_state) + " (dry run)")
            _print_changes(rest, spec, plan)
        for name in doomed:
            print(f"{name}: would be deleted (not in the files)")
        print("dry run: nothing was changed")
        return 0
    failures = sum(not _apply_one(rest, spec, plan) for spec, plan in zip(specs, plans))
    failures += sum(not _delete_one(rest, name) for name in doomed)
    return 1 if failures else 0


def _load_specs(files: list[str], state_dir: str | None, worker_config: str | None) -> list[ConnectorSpec]:
    """The specs with ``${state.dir}`` replaced as the driver's pipeline watcher replaces it."""
    if not spec_files(files):
        raise ConfigError("no spec files given or found")
    variables = spec_variables(state_dir, worker_config)
    return [substituted(s, variables) for s in load_specs(files)]


def _print_changes(rest: RestClient, spec: ConnectorSpec, plan: SpecPlan) -> None:
    """The key-level diff, with values of the plugins' PASSWORD keys shown as ``[hidden]``."""
    secrets = _secret_keys(rest, spec.config) if plan.changes else set()
    for change in plan.changes:
        print("  " + change.line(change.key in secrets))


def _secret_keys(rest: RestClient, config: dict[str, str]) -> set[str]:
    """PASSWORD-typed keys of the connector's plugin, and of its embedded sink (under ``sink.``)."""
    keys: set[str] = set()
    for prefix in ("", SINK_PREFIX):
        plugin = config.get(prefix + "connector.class")
        try:
            definitions = rest.plugin_config(plugin) if plugin else []
        except ApiError:
            continue  # an unknown plugin: the write reports it
        keys |= {prefix + d["name"] for d in definitions if d.get("type") == "PASSWORD"}
    return keys


def _outcome(plan: SpecPlan, initial_state: str | None) -> str:
    note = f", initial state {initial_state}" if plan.outcome == CREATED and initial_state else ""
    return f"{plan.name}: {plan.outcome}{note}"


def _apply_one(rest: RestClient, spec: ConnectorSpec, plan: SpecPlan) -> bool:
    """Write one spec as planned; an API error is reported and the others still apply."""
    try:
        if plan.outcome == CREATED and spec.initial_state:
            rest.create(spec.name, spec.config, spec.initial_state)
        elif plan.outcome != UNCHANGED:
            rest.put_config(spec.name, spec.config)
    except ApiError as e:
        print(f"error: {spec.name}: {e.message}", file=sys.stderr)
        return False
    print(_outcome(plan, spec.initial_state))
    if plan.outcome == CHANGED:
        _print_changes(rest, spec, plan)
    return True


def _delete_one(rest: RestClient, name: str) -> bool:
    try:
        rest.delete(name)
    except ApiError as e:
        print(f"error: {name}: {e.message}", file=sys.stderr)
        return False
    print(f"{name}: deleted (not in the files)")
    return True
