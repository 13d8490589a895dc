"""Run by spark-submit.sh as ``python -m sparkcat.ui_host MASTER [driver args...]``: prints the
address for ``SPARK_LOCAL_IP`` (the REST API's host, on a local master), or nothing.

An entry point of its own, above ``sparkcat.bootstrap``, so the Spark UI settings
(``sparkcat.spark.driver.ui``) do not import the driver's bootstrap that uses them.
"""

from __future__ import annotations

import contextlib
import io
import sys
from collections.abc import Sequence

from sparkcat.bootstrap import parse_args, worker_from_args
from sparkcat.errors import SparkcatError
from sparkcat.spark.driver.ui import ui_bind_address


def main(argv: Sequence[str]) -> int:
    """Print ``SPARK_LOCAL_IP`` for ``MASTER [driver args]``; nothing (exit 0) if the args cannot be read,
    since the driver reports those itself."""
    if not argv:
        return 0
    try:
        with contextlib.redirect_stderr(io.StringIO()):  # argparse's complaint comes again from the driver
            worker = worker_from_args(parse_args(list(argv[1:])))
    except (SparkcatError, SystemExit):
        return 0
    address = ui_bind_address(argv[0], [listener.host for listener in worker.rest_listeners])
    if address:
        print(address)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
