"""The bench's outputs: the machine and versions it ran on, results.json, and the generated section of
RESULTS.md (a table of every figure; text around the section is kept)."""

from __future__ import annotations

import json
import os
import platform
import subprocess
from pathlib import Path
from typing import Any


def environment() -> dict[str, Any]:
    import confluent_kafka
    import pyarrow
    import pyspark

    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr.strip().splitlines()
    from tests.broker import KAFKA_JARS

    kafka_jar = next(iter(sorted(KAFKA_JARS.glob("kafka_2.13-*.jar"))), None)
    kafka_version = kafka_jar.stem.split("-", 1)[1] if kafka_jar else "?"
    cpu_model = ""
    try:
        cpu_model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                          if line.startswith("model name")), "")
    except OSError:
        pass
    mem_total = ""
    try:
        mem_total = next(line.split(":", 1)[1].strip() for line in Path("/proc/meminfo").read_text().splitlines()
                         if line.startswith("MemTotal"))
    except OSError:
        pass
    return {"cpu_count": os.cpu_count(), "cpu_model": cpu_model, "memory": mem_total,
            "python": platform.python_version(), "pyspark": pyspark.__version__, "pyarrow": pyarrow.__version__,
            "java": java[0] if java else "", "confluent_kafka": getattr(confluent_kafka, "__version__", "")
            or str(confluent_kafka.version()),
            "librdkafka": confluent_kafka.libversion()[0],
            "broker": f"Apache Kafka {kafka_version} (KRaft, one node, tests.broker.KafkaBroker, loopback)",
            "platform": platform.platform(), "spark_master": "local[2]"}


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        if abs(v) >= 1000:
            return f"{v:,.0f}"
        return f"{v:.3g}" if abs(v) < 10 else f"{v:.1f}"
    return str(v)


MARK_START, MARK_END = "<!-- bench:generated:start -->", "<!-- bench:generated:end -->"


def render_markdown(results: dict[str, Any]) -> str:
    env = results["environment"]
    lines = [MARK_START, ""]
    for run in results.get("runs") or [results]:  # bench/combine.py: the figures of several runs
        lines.append(f"Run {run['started']} with `{run['command']}` ({run['duration_s']:.0f} s; load average "
                     f"before/after {run['loadavg_before']} / {run['loadavg_after']}).")
    lines += ["", "| environment | |", "|---|---|"]
    for k in ("cpu_count", "cpu_model", "memory", "python", "pyspark", "pyarrow", "java", "confluent_kafka",
              "librdkafka", "broker", "spark_master"):
        lines.append(f"| {k} | {env.get(k, '')} |")
    lines += ["", "| figure | min | median | max | unit | n | note |", "|---|---|---|---|---|---|---|"]
    for key, f in results["figures"].items():
        lines.append(f"| `{key}` | {_fmt(f['min'])} | {_fmt(f['median'])} | {_fmt(f['max'])} | {f['unit']} | "
                     f"{len(f['values'])} | {f.get('note', '')} |")
    if results.get("failures"):
        lines += ["", "Failures:", ""] + [f"- `{k}`: {v}" for k, v in results["failures"].items()]
    lines += ["", MARK_END]
    return "\n".join(lines)


def write_outputs(results: dict[str, Any], out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "results.json").write_text(json.dumps(results, indent=2, sort_keys=False) + "\n")
    md_path = out_dir / "RESULTS.md"
    generated = render_markdown(results)
    if md_path.exists() and MARK_START in md_path.read_text():
        text = md_path.read_text()
        head, rest = text.split(MARK_START, 1)
        tail = rest.split(MARK_END, 1)[1] if MARK_END in rest else ""
        md_path.write_text(head + generated + tail)
    else:
        md_path.write_text("# sparkcat benchmark results\n\nCommand: `python3 bench/run.py` (see bench/run.py).\n\n"
                           + generated + "\n")
