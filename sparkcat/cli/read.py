"""The read commands: ``get`` (one row per connector), ``describe``, ``plugins`` and ``status`` (over REST,
or from the stores with ``--state-dir``/``--bootstrap-servers``)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from sparkcat.cli.common import add_named, client, emit, worker
from sparkcat.client.render import last_line, table
from sparkcat.client.rest import RestClient


def register(sub: Any, conn: argparse.ArgumentParser, out: argparse.ArgumentParser) -> None:
    p = sub.add_parser("get", help="list connectors with state, type and tasks", parents=[conn, out])
    p.add_argument("name", nargs="?", help="one connector (default: all)")
    p.set_defaults(func=get)
    add_named(sub, "describe", describe, "config, tasks, workers, traces and Spark query of a connector",
              conn, out)
    sub.add_parser("plugins", help="installed connector plugins", parents=[conn, out]).set_defaults(func=plugins)
    p = sub.add_parser("status", help="states, workers, offsets and traces (over REST, or from the stores "
                                      "with --state-dir/--bootstrap-servers)", parents=[conn, out])
    p.add_argument("name", nargs="?", help="one connector (default: all)")
    p.add_argument("--state-dir", help="read the driver's local stores in this directory instead of REST")
    p.add_argument("--bootstrap-servers", help="read the Kafka stores instead of REST")
    p.set_defaults(func=status)


# -- status ---------------------------------------------------------------------------------------


def status(args: argparse.Namespace) -> int:
    """Connector and task states, worker ids, offsets and traces: from the stores with --state-dir or
    --bootstrap-servers, else over REST."""
    from_stores = args.state_dir or args.bootstrap_servers
    report = _store_report(args) if from_stores else _rest_report(client(args), args.name)
    emit(args, report[0] if args.name else report, lambda _: status_table(report))
    return 0


def _store_report(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Status and offsets read from the stores the worker config (with the flags) names."""
    from sparkcat.runtime.control.status_view import connector_offsets, connector_status
    from sparkcat.config.stores import open_stores

    stores = open_stores(worker(args.worker_config, bootstrap_servers=args.bootstrap_servers,
                                state_dir=args.state_dir))
    try:
        state = stores.config.snapshot()
        names = [args.name] if args.name else state.connectors()
        return [{**connector_status(n, state, stores.status), "offsets": connector_offsets(n, stores.offsets)}
                for n in names]
    finally:
        stores.close()


def _rest_report(rest: RestClient, name: str | None) -> list[dict[str, Any]]:
    """GET /connectors/{name}/status and /offsets, for one connector or every one."""
    names = [name] if name else sorted(rest.connectors())
    return [{**rest.status(n), "offsets": rest.offsets(n)["offsets"]} for n in names]


def status_table(report: list[dict]) -> str:
    """Connectors, their tasks, last trace lines and offsets as indented text."""
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


def get(args: argparse.Namespace) -> int:
    """One row per connector: name, type, state, task count and task states."""
    rest = client(args)
    if args.name:
        rows = [_row(rest.status(args.name))]
    else:
        rows = [_row(entry["status"]) for _, entry in sorted(rest.connectors("status").items())]
    emit(args, rows[0] if args.name else rows, lambda _: _rows_table(rows))
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


def describe(args: argparse.Namespace) -> int:
    """Config, tasks with state and worker, traces, and the Spark query name (the connector's name)."""
    rest = client(args)
    info, status = rest.connector(args.name), rest.status(args.name)
    connector = status["connector"]
    data = {"name": info["name"], "type": info["type"], "state": connector["state"],
            "worker_id": connector["worker_id"], "query_name": info["name"], "config": info["config"],
            "tasks": status["tasks"], "trace": connector.get("trace")}
    emit(args, data, _describe_text)
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


def plugins(args: argparse.Namespace) -> int:
    """Installed connector plugins: class, type, version."""
    found = client(args).plugins()
    emit(args, found, lambda ps: table(["CLASS", "TYPE", "VERSION"],
                                       [[p["class"], p["type"], p.get("version")] for p in ps]))
    return 0
