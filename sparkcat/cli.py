"""The ``sparkcat`` command: validate specs offline, and inspect and steer a driver over its REST API.

Every command but ``validate`` (and ``status`` with --state-dir/--bootstrap-servers) is a
client of the Kafka Connect REST API at ``--url`` (else $SPARKCAT_URL, else the first of
``listeners`` or rest.host/rest.port of conf/worker.yaml, else http://127.0.0.1:8083), with
``--user``/``--token`` when the API asks for credentials and ``--cacert`` for a private CA.
The CLI only formats what the API returns. Exit codes: 0 ok, 1 the server (or a spec) reported an error, 2 usage error
or the API cannot be reached.

Examples::

    sparkcat get
    sparkcat apply pipelines/ --dry-run --prune
    sparkcat offsets set seq --partition '{"increment": 1}' --offset '{"position": 1000}'
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sparkcat.client.plan import CHANGED, CREATED, UNCHANGED, SpecPlan, plan_apply, plan_prune
from sparkcat.client.render import FORMATS, compact, last_line, render, table
from sparkcat.client.rest import (
    ApiError,
    RestClient,
    UnreachableError,
    resolve_credentials,
    resolve_url,
    worker_config_path,
)
from sparkcat.errors import ConfigError, SparkcatError
from sparkcat.runtime.validation import SINK_PREFIX
from sparkcat.specs import ConnectorSpec, load_file, load_specs, spec_files

# -- shared helpers -------------------------------------------------------------------------------


def _client(args: argparse.Namespace) -> RestClient:
    return RestClient(resolve_url(args.url, args.worker_config),
                      credentials=resolve_credentials(args.user, args.token, args.worker_config,
                                                      url_from_worker=not (args.url or os.environ.get("SPARKCAT_URL"))),
                      cafile=args.cacert, insecure=args.insecure)


def _emit(args: argparse.Namespace, data: Any, as_table: Callable[[Any], str]) -> None:
    print(render(data, args.output, as_table))


def _usage(args: argparse.Namespace, message: str) -> int:
    print(f"sparkcat {args.command}: error: {message}", file=sys.stderr)
    return 2


# -- validate -------------------------------------------------------------------------------------

Check = Callable[[ConnectorSpec], tuple[dict[str, list[str]], str]]


def _validate(args: argparse.Namespace) -> int:
    """Check every spec (offline against its ConfigDef, or --remote through the driver); print each error
    with file, connector and key."""
    from sparkcat.runtime.pipelines import substitute

    check = _remote_check(_client(args)) if args.remote else _offline_check(_worker_policy(args))
    # As apply and the driver's pipeline watcher do: paths under ${state.dir} are checked where they point.
    variables = {"state.dir": str(Path(getattr(args, "state_dir", None)
                                       or _worker_state_dir(args.worker_config)).resolve())}
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
            spec = ConnectorSpec(spec.name, substitute(spec.config, variables), spec.source, spec.initial_state)
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
    from sparkcat.runtime.worker_config import load_worker_config

    worker = load_worker_config(worker_config_path(args.worker_config))
    return InputPolicy.of(worker.with_overrides(state_dir=getattr(args, "state_dir", None)))


def _offline_check(policy) -> Check:
    """Validation against the plugins' ConfigDefs and the worker's InputPolicy, without a driver."""
    def check(spec: ConnectorSpec) -> tuple[dict[str, list[str]], str]:
        from sparkcat.runtime.validation import validate_connector_config

        result = validate_connector_config(spec.config, policy)
        return result.errors, f"{result.connector_class}, {result.connector_type}"
    return check


def _remote_check(client: RestClient) -> Check:
    """PUT /connector-plugins/{connector.class}/config/validate; a 400 (unknown class) names connector.class."""
    def check(spec: ConnectorSpec) -> tuple[dict[str, list[str]], str]:
        plugin = spec.config.get("connector.class")
        if not plugin:
            return {"connector.class": ["Missing required configuration \"connector.class\""]}, ""
        try:
            body = client.validate(plugin, spec.config)
        except ApiError as e:
            if e.http_status != 400:
                raise
            return {"connector.class": [e.message]}, ""
        values = [c["value"] for c in body["configs"] if c.get("value")]
        return {v["name"]: v["errors"] for v in values if v.get("errors")}, body["name"]

    return check


# -- status ---------------------------------------------------------------------------------------


def _status(args: argparse.Namespace) -> int:
    """Connector and task states, worker ids, offsets and traces: from the stores with --state-dir or
    --bootstrap-servers, else over REST."""
    from_stores = args.state_dir or args.bootstrap_servers
    report = _store_report(args) if from_stores else _rest_report(_client(args), args.name)
    _emit(args, report[0] if args.name else report, lambda _: _status_table(report))
    return 0


def _store_report(args: argparse.Namespace) -> list[dict[str, Any]]:
    from sparkcat.bootstrap import worker_from_args
    from sparkcat.runtime.status_view import connector_offsets, connector_status
    from sparkcat.runtime.stores import open_stores

    worker = worker_from_args(argparse.Namespace(
        worker_config=args.worker_config, bootstrap_servers=args.bootstrap_servers, state_dir=args.state_dir,
        pipelines_dir=None, rest_port=None, rest_host=None, group_id=None))
    stores = open_stores(worker)
    try:
        state = stores.config.snapshot()
        names = [args.name] if args.name else state.connectors()
        return [{**connector_status(n, state, stores.status), "offsets": connector_offsets(n, stores.offsets)}
                for n in names]
    finally:
        stores.close()


def _rest_report(client: RestClient, name: str | None) -> list[dict[str, Any]]:
    """GET /connectors/{name}/status and /offsets, for one connector or every one."""
    names = [name] if name else sorted(client.connectors())
    return [{**client.status(n), "offsets": client.offsets(n)["offsets"]} for n in names]


def _status_table(report: list[dict]) -> str:
    lines = []
    for entry in report:
        c = entry["connector"]
        lines.append(f"{entry['name']} ({entry['type']}): {c['state']} on {c['worker_id'] or '-'}")
        for t in entry["tasks"]:
            lines.append(f"  task {t['id']}: {t['state']} on {t['worker_id'] or '-'}")
            if t.get("trace"):
                lines.append("    " + last_line(t["trace"]))
        if c.get("trace"):
            lines.append("  trace: " + last_line(c["trace"]))
        for o in entry.get("offsets", []):
            lines.append(f"  offset {json.dumps(o['partition'])} -> {json.dumps(o['offset'])}")
    return "\n".join(lines) if lines else "no connectors"


# -- get, describe, plugins -----------------------------------------------------------------------


def _get(args: argparse.Namespace) -> int:
    """One row per connector: name, type, state, task count and task states."""
    client = _client(args)
    if args.name:
        rows = [_row(client.status(args.name))]
    else:
        rows = [_row(entry["status"]) for _, entry in sorted(client.connectors("status").items())]
    _emit(args, rows[0] if args.name else rows, lambda _: _rows_table(rows))
    return 0


def _row(status: dict[str, Any]) -> dict[str, Any]:
    states = [t["state"] for t in status["tasks"]]
    return {"name": status["name"], "type": status["type"], "state": status["connector"]["state"],
            "tasks": len(states), "task_states": states}


def _rows_table(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "no connectors"
    return table(["NAME", "TYPE", "STATE", "TASKS", "TASK STATES"],
                 [[r["name"], r["type"], r["state"], r["tasks"], _count(r["task_states"])] for r in rows])


def _count(states: list[str]) -> str:
    """``['RUNNING', 'FAILED', 'RUNNING']`` as ``2 RUNNING, 1 FAILED``."""
    return ", ".join(f"{states.count(s)} {s}" for s in dict.fromkeys(states))


def _describe(args: argparse.Namespace) -> int:
    """Config, tasks with state and worker, traces, and the Spark query name (the connector's name)."""
    client = _client(args)
    info, status = client.connector(args.name), client.status(args.name)
    connector = status["connector"]
    data = {"name": info["name"], "type": info["type"], "state": connector["state"],
            "worker_id": connector["worker_id"], "query_name": info["name"], "config": info["config"],
            "tasks": status["tasks"], "trace": connector.get("trace")}
    _emit(args, data, _describe_text)
    return 0


def _describe_text(d: dict[str, Any]) -> str:
    lines = [f"Name:         {d['name']}", f"Type:         {d['type']}", f"State:        {d['state']}",
             f"Worker:       {d['worker_id'] or '-'}", f"Spark query:  {d['query_name']}", "Config:"]
    lines += [f"  {k}: {v}" for k, v in sorted(d["config"].items())]
    lines.append("Tasks:")
    tasks = [[t["id"], t["state"], t["worker_id"]] for t in d["tasks"]]
    lines += ["  " + line for line in table(["ID", "STATE", "WORKER"], tasks).splitlines()] if tasks else ["  none"]
    traces = [("connector", d["trace"])] + [(f"task {t['id']}", t.get("trace")) for t in d["tasks"]]
    traces = [(who, trace) for who, trace in traces if trace]
    lines.append("Last trace:" + ("" if traces else " none"))
    for who, trace in traces:
        lines.append(f"  {who}:")
        lines += ["    " + line for line in trace.rstrip().splitlines()]
    return "\n".join(lines)


def _plugins(args: argparse.Namespace) -> int:
    plugins = _client(args).plugins()
    _emit(args, plugins, lambda ps: table(["CLASS", "TYPE", "VERSION"],
                                          [[p["class"], p["type"], p.get("version")] for p in ps]))
    return 0


# -- apply ----------------------------------------------------------------------------------------


def _apply(args: argparse.Namespace) -> int:
    """Create or update each spec (PUT /connectors/{name}/config; POST on create with initial_state);
    with --prune delete running connectors no file names; with --dry-run only print the plan."""
    client = _client(args)
    specs = _load_specs(args.files, args.state_dir, args.worker_config)
    running = {name: entry["info"]["config"] for name, entry in client.connectors("info").items()}
    plans = plan_apply({s.name: s.config for s in specs}, running)
    doomed = plan_prune([s.name for s in specs], running) if args.prune else []
    if args.dry_run:
        for spec, plan in zip(specs, plans):
            print(_outcome(plan, spec.initial_state) + " (dry run)")
            _print_changes(client, spec, plan)
        for name in doomed:
            print(f"{name}: would be deleted (not in the files)")
        print("dry run: nothing was changed")
        return 0
    failures = sum(not _apply_one(client, spec, plan) for spec, plan in zip(specs, plans))
    failures += sum(not _delete_one(client, name) for name in doomed)
    return 1 if failures else 0


def _load_specs(files: list[str], state_dir: str | None, worker_config: str | None) -> list[ConnectorSpec]:
    """The specs with ``${state.dir}`` replaced as the driver's pipeline watcher replaces it."""
    from sparkcat.runtime.pipelines import substitute

    if not spec_files(files):
        raise ConfigError("no spec files given or found")
    variables = {"state.dir": str(Path(state_dir or _worker_state_dir(worker_config)).resolve())}
    return [ConnectorSpec(s.name, substitute(s.config, variables), s.source, s.initial_state)
            for s in load_specs(files)]


def _worker_state_dir(worker_config: str | None) -> str:
    from sparkcat.runtime.worker_config import load_worker_config

    return load_worker_config(worker_config_path(worker_config)).state_dir


def _print_changes(client: RestClient, spec: ConnectorSpec, plan: SpecPlan) -> None:
    """The key-level diff, with values of the plugins' PASSWORD keys shown as ``[hidden]``."""
    secrets = _secret_keys(client, spec.config) if plan.changes else set()
    for change in plan.changes:
        print("  " + change.line(change.key in secrets))


def _secret_keys(client: RestClient, config: dict[str, str]) -> set[str]:
    """PASSWORD-typed keys of the connector's plugin, and of its embedded sink (under ``sink.``)."""
    keys: set[str] = set()
    for prefix in ("", SINK_PREFIX):
        plugin = config.get(prefix + "connector.class")
        try:
            definitions = client.plugin_config(plugin) if plugin else []
        except ApiError:
            continue  # an unknown plugin: the write reports it
        keys |= {prefix + d["name"] for d in definitions if d.get("type") == "PASSWORD"}
    return keys


def _outcome(plan: SpecPlan, initial_state: str | None) -> str:
    note = f", initial state {initial_state}" if plan.outcome == CREATED and initial_state else ""
    return f"{plan.name}: {plan.outcome}{note}"


def _apply_one(client: RestClient, spec: ConnectorSpec, plan: SpecPlan) -> bool:
    """Write one spec as planned; an API error is reported and the others still apply."""
    try:
        if plan.outcome == CREATED and spec.initial_state:
            client.create(spec.name, spec.config, spec.initial_state)
        elif plan.outcome != UNCHANGED:
            client.put_config(spec.name, spec.config)
    except ApiError as e:
        print(f"error: {spec.name}: {e.message}", file=sys.stderr)
        return False
    print(_outcome(plan, spec.initial_state))
    if plan.outcome == CHANGED:
        _print_changes(client, spec, plan)
    return True


def _delete_one(client: RestClient, name: str) -> bool:
    try:
        client.delete(name)
    except ApiError as e:
        print(f"error: {name}: {e.message}", file=sys.stderr)
        return False
    print(f"{name}: deleted (not in the files)")
    return True


# -- lifecycle ------------------------------------------------------------------------------------


def _lifecycle(action: str, done: str) -> Callable[[argparse.Namespace], int]:
    """pause, resume, stop, delete: one call, then say what was requested."""
    def run(args: argparse.Namespace) -> int:
        getattr(_client(args), action)(args.name)
        print(f"connector {args.name}: {done}")
        return 0

    return run


def _restart(args: argparse.Namespace) -> int:
    plan = _client(args).restart(args.name, args.include_tasks, args.only_failed)
    if plan is None:
        print(f"connector {args.name}: restart requested")
    else:
        print(_status_table([plan]))
    return 0


# -- offsets --------------------------------------------------------------------------------------


def _offsets_get(args: argparse.Namespace) -> int:
    body = _client(args).offsets(args.name)
    _emit(args, body, _offsets_table)
    return 0


def _offsets_table(body: dict[str, Any]) -> str:
    rows = [[compact(o["partition"]), compact(o["offset"])] for o in body["offsets"]]
    return table(["PARTITION", "OFFSET"], rows) if rows else "no offsets"


def _offsets_set(args: argparse.Namespace) -> int:
    """PATCH the offsets of a STOPPED connector, from a JSON/YAML file or --partition/--offset."""
    pair = args.partition is not None or args.offset is not None
    if bool(args.file) == pair:
        return _usage(args, "give either FILE or both --partition and --offset")
    if pair and (args.partition is None or args.offset is None):
        return _usage(args, "--partition and --offset go together")
    entries = _offsets_file(args.file) if args.file else [
        {"partition": _json_arg("--partition", args.partition), "offset": _json_arg("--offset", args.offset)}]
    print(_client(args).alter_offsets(args.name, entries)["message"])
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


def _offsets_reset(args: argparse.Namespace) -> int:
    print(_client(args).reset_offsets(args.name)["message"])
    return 0


# -- parser ---------------------------------------------------------------------------------------


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
    output = argparse.ArgumentParser(add_help=False)
    output.add_argument("-o", "--output", choices=FORMATS, default="table")
    return connection, output


def _add_named(sub: Any, name: str, func: Callable, text: str, *parents: argparse.ArgumentParser,
               ) -> argparse.ArgumentParser:
    p = sub.add_parser(name, help=text, description=text, parents=list(parents))
    p.add_argument("name", help="connector name")
    p.set_defaults(func=func)
    return p


def _add_read_commands(sub: Any, conn: argparse.ArgumentParser, out: argparse.ArgumentParser) -> None:
    p = sub.add_parser("get", help="list connectors with state, type and tasks", parents=[conn, out])
    p.add_argument("name", nargs="?", help="one connector (default: all)")
    p.set_defaults(func=_get)
    _add_named(sub, "describe", _describe, "config, tasks, workers, traces and Spark query of a connector",
               conn, out)
    sub.add_parser("plugins", help="installed connector plugins", parents=[conn, out]).set_defaults(func=_plugins)
    p = sub.add_parser("status", help="states, workers, offsets and traces (over REST, or from the stores "
                                      "with --state-dir/--bootstrap-servers)", parents=[conn, out])
    p.add_argument("name", nargs="?", help="one connector (default: all)")
    p.add_argument("--state-dir", help="read the driver's local stores in this directory instead of REST")
    p.add_argument("--bootstrap-servers", help="read the Kafka stores instead of REST")
    p.set_defaults(func=_status)


def _add_write_commands(sub: Any, conn: argparse.ArgumentParser) -> None:
    p = sub.add_parser("apply", help="create or update connectors from YAML specs", parents=[conn])
    p.add_argument("files", nargs="+", help="spec files or directories of *.yaml")
    p.add_argument("--dry-run", action="store_true", help="print the difference with what runs; change nothing")
    p.add_argument("--prune", action="store_true", help="delete running connectors absent from the files")
    p.add_argument("--state-dir", help="value of ${state.dir} in specs (default: state.dir of the worker config)")
    p.set_defaults(func=_apply)
    for action, done in (("pause", "pause requested"), ("resume", "resume requested"),
                         ("stop", "stop requested"), ("delete", "deleted")):
        _add_named(sub, action, _lifecycle(action, done), f"{action} a connector", conn)
    p = _add_named(sub, "restart", _restart, "restart a connector (and its tasks)", conn)
    p.add_argument("--include-tasks", action="store_true", help="restart its tasks too")
    p.add_argument("--only-failed", action="store_true", help="restart only what is FAILED")


def _add_offsets(sub: Any, conn: argparse.ArgumentParser, out: argparse.ArgumentParser) -> None:
    offsets = sub.add_parser("offsets", help="read, alter or reset a connector's offsets")
    verbs = offsets.add_subparsers(dest="verb", required=True)
    _add_named(verbs, "get", _offsets_get, "the connector's offsets", conn, out)
    p = _add_named(verbs, "set", _offsets_set, "alter offsets of a STOPPED connector", conn)
    p.add_argument("file", nargs="?", help='JSON/YAML: {"offsets": [{"partition": {...}, "offset": {...}}]}')
    p.add_argument("--partition", help="one source partition as JSON")
    p.add_argument("--offset", help="its new offset as JSON (null resets it)")
    _add_named(verbs, "reset", _offsets_reset, "reset offsets of a STOPPED connector", conn)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sparkcat", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    conn, out = _parents()
    p = sub.add_parser("validate", help="check YAML connector specs without running them", parents=[conn])
    p.add_argument("files", nargs="+", help="spec files or directories of *.yaml")
    p.add_argument("--remote", action="store_true", help="validate through the driver's REST API")
    p.add_argument("--state-dir", help="value of ${state.dir} in specs, and the state.dir whose defaults "
                                       "file.allowed.dirs follows (default: the worker config's)")
    p.set_defaults(func=_validate)
    _add_read_commands(sub, conn, out)
    _add_write_commands(sub, conn)
    _add_offsets(sub, conn, out)
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


if __name__ == "__main__":
    sys.exit(main())
