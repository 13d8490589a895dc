"""``pause``, ``resume``, ``stop``, ``delete`` and ``restart`` of one connector over REST."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from sparkcat.cli.common import add_named, client
from sparkcat.cli.read import status_table

ACTIONS = (("pause", "pause requested"), ("resume", "resume requested"), ("stop", "stop requested"),
           ("delete", "deleted"))


def register(sub: Any, conn: argparse.ArgumentParser) -> None:
    for action, done in ACTIONS:
        add_named(sub, action, _lifecycle(action, done), f"{action} a connector", conn)
    p = add_named(sub, "restart", restart, "restart a connector (and its tasks)", conn)
    p.add_argument("--include-tasks", action="store_true", help="restart its tasks too")
    p.add_argument("--only-failed", action="store_true", help="restart only what is FAILED")


def _lifecycle(action: str, done: str) -> Callable[[argparse.Namespace], int]:
    """pause, resume, stop, delete: one call, then say what was requested."""
    def run(args: argparse.Namespace) -> int:
        getattr(client(args), action)(args.name)
        print(f"connector {args.name}: {done}")
        return 0

    return run


def restart(args: argparse.Namespace) -> int:
    """Request a restart; print the plan (states after it) when the API returns one."""
    plan = client(args).restart(args.name, args.include_tasks, args.only_failed)
    if plan is None:
        print(f"connector {args.name}: restart requested")
    else:
        print(status_table([plan]))
    return 0
