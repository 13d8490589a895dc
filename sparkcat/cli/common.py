"""What the command modules share: the REST client from the connection options, output, usage errors,
the ``name`` argument, and ``${state.dir}`` substitution in specs."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sparkcat.client.render import render
from sparkcat.client.rest import RestClient, resolve_credentials, resolve_url, worker_config_path
from sparkcat.specs import ConnectorSpec


def client(args: argparse.Namespace) -> RestClient:
    """The REST client for ``--url``/``--user``/``--token``/``--cacert``/``--insecure``/``--cert``/``--key``."""
    return RestClient(resolve_url(args.url, args.worker_config),
                      credentials=resolve_credentials(args.user, args.token, args.worker_config,
                                                      url_from_worker=not (args.url or os.environ.get("SPARKCAT_URL"))),
                      cafile=args.cacert, insecure=args.insecure, certfile=args.cert, keyfile=args.key)


def emit(args: argparse.Namespace, data: Any, as_table: Callable[[Any], str]) -> None:
    """Print ``data`` in the ``-o`` format (``as_table`` renders the table one)."""
    print(render(data, args.output, as_table))


def usage(args: argparse.Namespace, message: str) -> int:
    """Report a usage error as argparse does; exit code 2."""
    print(f"sparkcat {args.command}: error: {message}", file=sys.stderr)
    return 2


def add_named(sub: Any, name: str, func: Callable, text: str, *parents: argparse.ArgumentParser,
              ) -> argparse.ArgumentParser:
    """A subcommand that takes one connector name and runs ``func``."""
    p = sub.add_parser(name, help=text, description=text, parents=list(parents))
    p.add_argument("name", help="connector name")
    p.set_defaults(func=func)
    return p


def worker(worker_config: str | None, **overrides: Any):
    """The worker config (``--worker-config``, else conf/worker.yaml when present), as the driver reads it,
    with the non-None ``overrides`` (flags) applied."""
    from sparkcat.config.worker import load_worker_config

    return load_worker_config(worker_config_path(worker_config)).with_overrides(**overrides)


def worker_state_dir(worker_config: str | None) -> str:
    """``state.dir`` of the worker config."""
    return worker(worker_config).state_dir


def spec_variables(state_dir: str | None, worker_config: str | None) -> dict[str, str]:
    """The variables specs may use: ``${state.dir}`` (``--state-dir``, else the worker config's), absolute."""
    return {"state.dir": str(Path(state_dir or worker_state_dir(worker_config)).resolve())}


def substituted(spec: ConnectorSpec, variables: dict[str, str]) -> ConnectorSpec:
    """``spec`` with ``variables`` replaced in its config, as the driver's pipeline watcher replaces them."""
    from sparkcat.runtime.control.pipelines import substitute

    return ConnectorSpec(spec.name, substitute(spec.config, variables), spec.source, spec.initial_state)
