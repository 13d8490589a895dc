#!/usr/bin/env python3
"""Combine the results.json of several bench runs (e.g. ``--only copy`` and ``--only scale``) into one.

    python3 bench/combine.py OUT_DIR RUN1/results.json RUN2/results.json ...

Figures and details are taken from the runs in the order given (a later run's figure of the
same name wins); each run's command, time and load average stay listed in ``runs``, and the
RESULTS.md in OUT_DIR gets its generated section rewritten (text around it is kept).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.report import write_outputs  # noqa: E402

RUN_KEYS = ("command", "started", "duration_s", "loadavg_before", "loadavg_after")


def combine(results: list[dict[str, Any]]) -> dict[str, Any]:
    """One results dict with every run's figures, details and failures, and the runs listed."""
    runs = []
    for r in results:
        runs += r.get("runs") or [{k: r[k] for k in RUN_KEYS}]
    out: dict[str, Any] = {**{k: runs[0][k] for k in RUN_KEYS}, "runs": runs,
                           "environment": results[-1]["environment"], "scenarios": [],
                           "figures": {}, "details": {}, "failures": {}}
    for r in results:
        out["scenarios"] += [s for s in r["scenarios"] if s not in out["scenarios"]]
        for key in ("figures", "details", "failures"):
            out[key].update(r.get(key) or {})
    return out


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    combined = combine([json.loads(Path(p).read_text()) for p in argv[1:]])
    write_outputs(combined, Path(argv[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
