"""The ``sparkcat`` command (see :mod:`sparkcat.cli.main`): one module per command group.

``main`` parses the arguments and maps errors to exit codes; ``validate``, ``read`` (get, describe,
plugins, status), ``apply``, ``lifecycle`` (pause, resume, stop, delete, restart) and ``offsets``
each declare their subcommands and run them; ``common`` holds what they share.
"""

from sparkcat.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
