#!/usr/bin/env python3
"""Cold start: a fresh driver's first connector, the same connector on the warm driver, a promoted standby's first.

    .venv/bin/python -m bench.coldstart --records 1000000 --out bench/coldstart-results.json
    .venv/bin/python -m bench.coldstart --records 1000000 --warm-up none      # without any warm-up
    .venv/bin/python -m bench.coldstart --records 1000000 --warm-up python_workers,delta --post-after-warm-up
    .venv/bin/python -m bench.coldstart --records 1000000 --kinds pysource,recordsink --cases fresh,promoted

Starts its own broker (``tests.broker.KafkaBroker``), fills one 4-partition topic with ``--records`` records of
100 B (``bench/clients.py fill``), then, one at a time, each on drivers of their own (``bench/coldstart_driver.py``:
fresh JVM, ``--master``, REST on), for the ``--kinds`` (default ``copy,delta``, the kinds of issue 45's targets):

- ``copy``: the Kafka copy (``kafka``, 2 tasks, at-least-once);
- ``delta``: the Kafka -> Delta append (``delta``, 4 tasks);
- ``pysource``: a Python source, ``increment`` (2 tasks, 2 sequences, JSON values), into fresh topics
  ``NAME-1`` and ``NAME-2``, at least once (its drivers run with ``exactly.once.source.support=disabled``);
  the sequences are endless, so it is timed to its first ``--records`` committed records;
- ``recordsink``: a Python sink taking records through ``put``, the ``file-sink`` (2 tasks, bytes values),
  reading the filled topic into a file (its drivers' ``file.allowed.dirs``: the bench's ``files`` directory).

The Python kinds run in the driver's shared queries (docs/running.md): their batches' progress is the shared
query's, their records in it its source metrics ``records.NAME``. Each measured one is deleted once timed (the
source is endless), so the warm one starts its shared query anew, as the copy and the Delta append start a query
of their own. The cases:

- ``fresh``: the first connector of a freshly started driver, POSTed as soon as the driver is ready (it answers
  ``GET /`` as the leader; its leader warm-up runs in the background meanwhile, ``--post-after-warm-up`` waits
  for it), timed from the POST;
- ``warm``: the same connector under a new name (a new group, target and checkpoint), POSTed to the same driver
  once the first is done and the driver's warm-up logged its end;
- ``promoted``: a standby (warmed up before it stands by, then kept for ``--standby-s``) takes over from a leader
  killed with SIGKILL (``tests.driver_process.kill_session``); the connector was created on the old leader
  STOPPED (``initial_state``), so no record moved before, and is resumed on the new leader as soon as it
  answers as the leader: timed from the kill (the takeover included) and from the resume;
- ``pyspark``: the hand-written Kafka -> Delta job in a fresh process, from its query start and its session start.

Each is timed to "all records committed" (the driver's ``batch N committed with R record(s)`` lines add up to
``--records``), and split into phases from the driver's log and the queries' progress (``durationMs`` of the first
batch and of all): POST -> connector started -> query started -> first batch begins -> first batch committed ->
all committed. The records are counted in the target topic(s), table or file at the end. Prints a table and JSON.
The module stays whole (a little over 400 lines): its kinds, cases and phases are one measurement read top to
bottom; the driver side is ``bench/coldstart_driver.py``.
"""

from __future__ import annotations

import argparse
from itertools import accumulate
import json
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

import httpx

from bench.failover import _stamp, free_port, role
from bench.harness import client
from bench.java_connectors import topic_count
from bench.measure import loadavg, parse_ts
from tests.broker import KafkaBroker
from tests.driver_process import kill_session, start_driver_process
from tests.kafka_helpers import create_topic, wait_until

BYTES = "org.apache.kafka.connect.converters.ByteArrayConverter"
KINDS = ("copy", "delta", "pysource", "recordsink")
DEFAULT_KINDS = ("copy", "delta")  # the kinds of issue 45's targets; the Python ones on request
#: Kinds run in a shared query, their connector deleted once timed (module doc).
SHARED = ("pysource", "recordsink")
#: The driver's log lines that end each phase of a connector's start, in order: (phase, text; {} its name).
PHASES = (("connector started", "Connector {} started on the driver"), ("query started", "Connector {}: query started in"),
          ("first batch committed", "Connector {}: batch"))
DURATIONS = ("triggerExecution", "addBatch", "getBatch", "latestOffset", "queryPlanning", "walCommit", "commitOffsets")


class Run:
    """The bench's broker, source topic and work directory; starts drivers and times connectors on them."""

    def __init__(self, args: argparse.Namespace, broker: KafkaBroker, work: Path) -> None:
        self.args, self.broker, self.work = args, broker, work
        self.src = "coldstart-src"
        self.started: list[Any] = []
        self.n = 0

    def driver(self, name: str, warm_up: Any, kind: str) -> tuple[Any, int, Path]:
        port = free_port()
        worker = {"bootstrap_servers": self.broker.bootstrap, "state_dir": str(self.work / name), "rest_port": port,
                  "group_id": f"cs-{name}", "config_topic": f"cs-{name}-configs", "offset_topic": f"cs-{name}-offsets",
                  "status_topic": f"cs-{name}-status", "session_timeout_ms": self.args.session_timeout_ms,
                  "heartbeat_interval_ms": 1000, **self.worker_settings(kind)}
        return self.process(name, worker, {"mode": "driver", "warm_up": warm_up}), port, self.work / f"{name}.log"

    def process(self, name: str, worker: dict[str, Any], options: dict[str, Any]) -> Any:
        """``bench/coldstart_driver.py`` with WorkerConfig fields ``worker`` and its ``options`` (``COLDSTART``)."""
        env = {"COLDSTART": json.dumps({**options, "master": self.args.master})}
        process = start_driver_process(worker, {}, self.work / f"{name}.log", env, module="bench.coldstart_driver")
        self.started.append(process)
        return process

    def worker_settings(self, kind: str) -> dict[str, Any]:
        """The Python source at least once (the worker's default, exactly once, writes every source in
        transactions); the file sink's files in a directory the standby may write too (not a state dir)."""
        if kind == "pysource":
            return {"exactly_once_source_support": "disabled"}
        return {"file_allowed_dirs": [str(self.work / "files")]} if kind == "recordsink" else {}

    def config(self, kind: str, name: str) -> dict[str, str]:
        if kind == "copy":
            return {"connector.class": "kafka", "topics": self.src, "target.topic.format": f"${{topic}}.{name}",
                    "tasks.max": "2", "batch.max.records": "250000", "trigger.interval.ms": "0"}
        if kind == "pysource":  # --records / 2 per sequence a batch at most, 100,000 records a batch in all
            per_poll = min(50_000, -(-self.args.records // 2))
            return {"connector.class": "increment", "increments": "1,2", "tasks.max": "2", "topic.prefix": f"{name}-",
                    "records.per.poll": str(per_poll), "trigger.interval.ms": "0"}
        if kind == "recordsink":  # 100,000 records a task a batch at most: well within a shared batch's 5 s
            return {"connector.class": "file-sink", "topics": self.src, "tasks.max": "2", "key.converter": BYTES,
                    "value.converter": BYTES, "file": str(self.work / "files" / f"{name}.txt"),
                    "batch.max.records": "50000", "trigger.interval.ms": "0"}
        return {"connector.class": "delta", "topics": self.src, "tasks.max": "4", "value.converter": BYTES,
                "table.path": str(self.work / "tables" / name)}

    def written(self, kind: str, name: str) -> int:
        """Records in the connector's target topic(s), Delta table (the Delta log's ``numRecords``) or file (lines)."""
        if kind == "copy":
            return topic_count(self.broker.bootstrap, f"{self.src}.{name}")
        if kind == "pysource":
            return sum(topic_count(self.broker.bootstrap, f"{name}-{k}") for k in (1, 2))
        if kind == "recordsink":
            return file_lines(self.work / "files" / f"{name}.txt")
        return delta_rows(self.work / "tables" / name)

    def delete(self, port: int, log: Path, name: str) -> None:
        """Delete connector ``name`` and wait for its query (or its place in a shared one) to stop."""
        at = time.time()
        answer = httpx.delete(f"http://127.0.0.1:{port}/connectors/{name}", timeout=120)
        assert answer.status_code == 204, answer.text
        wait_until(lambda: any(f"Connector {name}: query stopped after" in line for _, line in log_lines(log, at)),
                   timeout_s=120, message=f"{name}: its query stopped")

    def post(self, port: int, name: str, config: dict[str, str], state: str | None = None) -> float:
        body: dict[str, Any] = {"name": name, "config": config}
        if state:
            body["initial_state"] = state
        at = time.time()
        answer = httpx.post(f"http://127.0.0.1:{port}/connectors", json=body, timeout=120)
        assert answer.status_code == 201, answer.text
        return at


def delta_rows(table: Path) -> int:
    """Rows added to a Delta table by its commits (the add actions' ``numRecords`` statistics)."""
    rows = 0
    for commit in sorted((table / "_delta_log").glob("*.json")):
        for line in commit.read_text().splitlines():
            action = json.loads(line)
            if "add" in action and action["add"].get("stats"):
                rows += json.loads(action["add"]["stats"]).get("numRecords", 0)
    return rows


def file_lines(path: Path) -> int:
    """Lines in a file (0 if it is not there)."""
    if not path.exists():
        return 0
    lines = 0
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            lines += chunk.count(b"\n")
    return lines


def log_lines(log: Path, after: float) -> list[tuple[float, str]]:
    """The driver's log lines stamped at or after ``after`` (epoch s), with their stamps."""
    out = []
    for line in log.read_text(errors="replace").splitlines():
        if line[:4].isdigit() and line[23:24] == " ":
            at = _stamp(line)
            if at >= after:
                out.append((at, line))
    return out


def committed(log: Path, name: str, after: float) -> tuple[int, float | None]:
    """Records the driver committed for connector ``name`` since ``after``, and when the last batch was."""
    total, last = 0, None
    prefix = f"Connector {name}: batch "
    for at, line in log_lines(log, after):
        if prefix in line and " committed with " in line:
            total += int(line.split(" committed with ")[1].split()[0])
            last = at
    return total, last


def progress(work: Path, process_name: str, query: str) -> list[dict[str, Any]]:
    """The progress of connector ``query``'s batches as ``bench/coldstart_driver.py`` dumped it, by start: its own
    query's, and those of a shared query that wrote it (``rows``: its records, the source metric ``records.NAME``)."""
    path = work / f"{process_name}.progress.jsonl"
    if not path.exists():
        return []
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    out = [r for r in rows if r["name"] == query]
    for r in rows:
        if r["name"] != query and f"records.{query}" in r.get("metrics", {}):
            out.append({**r, "rows": int(r["metrics"][f"records.{query}"])})
    return sorted(out, key=lambda r: r["timestamp"])


def breakdown(rows: list[dict[str, Any]], n: int | None = None) -> dict[str, Any]:
    """``durationMs`` of the first batch with records, and summed over all batches (those to the ``n``-th record
    if given: an endless source goes on while the bench reads), per phase of a batch."""
    full = [r for r in rows if r["rows"] > 0]
    if n is not None:
        full = full[:next((i + 1 for i, t in enumerate(accumulate(r["rows"] for r in full)) if t >= n), len(full))]
    if not full:
        return {}
    first = full[0]
    return {"first_batch_start": parse_ts(first["timestamp"]), "batches": len(full),
            "first_batch_ms": {k: first["durationMs"].get(k) for k in DURATIONS if k in first["durationMs"]},
            "all_batches_ms": {k: sum(r["durationMs"].get(k, 0) for r in full) for k in DURATIONS}}


def timed(run: Run, log: Path, process_name: str, kind: str, name: str, since: float) -> dict[str, Any]:
    """Wait for all of the connector's records to be committed; its phases in seconds after ``since``."""
    n = run.args.records
    wait_until(lambda: committed(log, name, since)[0] >= n, timeout_s=run.args.timeout_s, interval_s=0.1,
               message=f"{name}: {n} records committed")
    out: dict[str, Any] = {"all_committed_s": round(committed(log, name, since)[1] - since, 3)}
    lines = log_lines(log, since)
    for phase, text in PHASES:
        at = next((a for a, line in lines if text.format(name) in line), None)
        if at is not None:
            out[f"{phase}_s"] = round(at - since, 3)
    rows = wait_until(lambda: (lambda b: b if b.get("batches") and sum(
        r["rows"] for r in progress(run.work, process_name, name)) >= n else None)(
        breakdown(progress(run.work, process_name, name), n)), timeout_s=30, interval_s=0.2,
        message=f"{name}: the progress of its batches")
    out["first_batch_begins_s"] = round(rows.pop("first_batch_start") - since, 3)
    out.update(rows)
    got = run.written(kind, name)
    assert got >= n, f"{name}: {got} records written, expected {n}"
    return out


def ready_leader(port: int) -> None:
    wait_until(lambda: (role(port) or ("",))[0] == "leader", timeout_s=300, interval_s=0.05, message="a leader")


def warm_up_line(log: Path, after: float) -> dict[str, Any] | None:
    """The driver's "warmed up in" line: when (s after ``after``) and its text."""
    for at, line in log_lines(log, after):
        if "warmed up in" in line:
            return {"at_s": round(at - after, 3), "line": line.split(": ", 1)[1]}
    return None


def fresh_and_warm(run: Run, kind: str) -> dict[str, Any]:
    """A fresh driver's first connector (POSTed once it is ready), then the same on the warm driver."""
    name = f"{kind}-fresh-driver"
    process_start = time.time()
    process, port, log = run.driver(name, run.args.warm_up, kind)
    ready_leader(port)
    out: dict[str, Any] = {"ready_s": round(time.time() - process_start, 3)}
    if run.args.post_after_warm_up:
        wait_until(lambda: warm_up_line(log, process_start), timeout_s=300, message="the leader's warm-up")
    session = next((a for a, line in log_lines(log, process_start) if "Spark session started in" in line), None)
    out["spark_session_s"] = None if session is None else round(session - process_start, 3)
    posted = run.post(port, f"{kind}-1", run.config(kind, f"{kind}-1"))
    out["fresh"] = timed(run, log, name, kind, f"{kind}-1", posted)
    if kind in SHARED:
        run.delete(port, log, f"{kind}-1")
    if run.args.warm_up != []:  # the warm driver's figure is a driver's whose warm-up is behind it
        wait_until(lambda: warm_up_line(log, process_start), timeout_s=300, message="the leader's warm-up")
    out["warm_up"] = warm_up_line(log, process_start)
    posted = run.post(port, f"{kind}-2", run.config(kind, f"{kind}-2"))
    out["warm"] = timed(run, log, name, kind, f"{kind}-2", posted)
    kill_session(process)
    return out


def promoted(run: Run, kind: str) -> dict[str, Any]:
    """A standby's first connector after the leader's kill: created STOPPED on the leader, resumed on the new one."""
    leader, port, _ = run.driver(f"{kind}-old-leader", run.args.warm_up, kind)
    ready_leader(port)
    name = f"{kind}-3"
    run.post(port, name, run.config(kind, name), state="STOPPED")
    # the standby joins the old leader's group: same worker settings but its own state and port
    standby_name = f"{kind}-standby"
    worker = json.loads((run.work / f"{kind}-old-leader.json").read_text())["worker"]
    standby_port = free_port()
    worker.update(state_dir=str(run.work / standby_name), rest_port=standby_port)
    standby = run.process(standby_name, worker, {"mode": "driver", "warm_up": run.args.warm_up})
    log = run.work / f"{standby_name}.log"
    wait_until(lambda: (run.work / f"{standby_name}.started").exists() and
               (role(standby_port) or ("",))[0] == "standby", timeout_s=300, message="the standby")
    out = {"standby_warm_up": warm_up_line(log, 0)}
    time.sleep(run.args.standby_s)  # the standby's spare time, as in use (Python workers idle for 60 s end)
    killed = time.time()
    kill_session(leader)
    wait_until(lambda: (role(standby_port) or ("",))[0] == "leader", timeout_s=120, interval_s=0.02,
               message="the standby's takeover")
    out["takeover_s"] = round(time.time() - killed, 3)
    resumed = time.time()
    answer = httpx.put(f"http://127.0.0.1:{standby_port}/connectors/{name}/resume", timeout=120)
    assert answer.status_code == 202, answer.text
    out["promoted"] = timed(run, log, standby_name, kind, name, resumed)
    out["promoted"]["kill_to_all_committed_s"] = round(out["promoted"]["all_committed_s"] + resumed - killed, 3)
    kill_session(standby)
    return out


def pyspark(run: Run) -> dict[str, Any]:
    """The hand-written Kafka -> Delta job in a fresh process: session start, query start -> all records."""
    began = time.time()
    options = {"mode": "pyspark", "bootstrap": run.broker.bootstrap, "topic": run.src, "records": run.args.records,
            "table": str(run.work / "tables" / "pyspark"), "checkpoint": str(run.work / "pyspark-checkpoint")}
    process = run.process("pyspark", {}, options)
    process.wait(run.args.timeout_s)
    assert process.returncode == 0, (run.work / "pyspark.log").read_text()[-3000:]
    lines = log_lines(run.work / "pyspark.log", began)
    at = {key: next(a for a, line in lines if text in line) for key, text in (
        ("session", "Spark session started in"), ("query", "Hand-written query started in"),
        ("done", "Hand-written query wrote"))}
    started = at["query"]
    rows = breakdown(progress(run.work, "pyspark", "pyspark-delta"))
    out = {"spark_session_s": round(at["session"] - began, 3), "all_committed_s": round(at["done"] - started, 3),
           "first_batch_begins_s": round(rows.pop("first_batch_start") - started, 3), **rows}
    assert delta_rows(run.work / "tables" / "pyspark") >= run.args.records
    return out


def table(results: dict[str, Any]) -> str:
    """One line per measured start: its phases (s from the POST, resume or query start) and first batch's ms."""
    head = ("case", "all", "kill->all", "query", "1st begins", "1st commit", "addBatch", "getBatch", "latestOff",
            "planning", "wal")
    lines = [f"{head[0]:>19}  " + "  ".join(f"{h:>11}" for h in head[1:])]
    for case, r in cases(results):
        ms = r.get("first_batch_ms", {})
        cells = (r.get("all_committed_s"), r.get("kill_to_all_committed_s"), r.get("query started_s"), r.get("first_batch_begins_s"),
                 r.get("first batch committed_s"), *(ms.get(k) for k in ("addBatch", "getBatch", "latestOffset",
                                                                         "queryPlanning", "walCommit")))
        lines.append(f"{case:>19}  " + "  ".join(f"{'-' if c is None else c:>11}" for c in cells))
    return "\n".join(lines)


def cases(results: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for kind in KINDS:
        for case in ("fresh", "warm", "promoted"):
            r = results.get(kind, {}).get(case)
            if r:
                out.append((f"{kind}-{case}", r))
    if results.get("pyspark"):
        out.append(("pyspark", results["pyspark"]))
    return out


def attempt(into: dict[str, Any], what: str, measure: Any) -> None:
    """Add what ``measure()`` returns to ``into``; a failure is noted there and the next case still runs."""
    try:
        into.update(measure())
    except Exception as e:  # noqa: BLE001 - noted in the results, with the driver logs kept
        traceback.print_exc()
        into.setdefault("failures", {})[what] = f"{type(e).__name__}: {e}"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--records", type=int, default=1_000_000)
    p.add_argument("--kinds", default=",".join(DEFAULT_KINDS), help=f"of {','.join(KINDS)} (empty: none)")
    p.add_argument("--cases", default="fresh,promoted,pyspark", help="fresh (and warm),promoted,pyspark")
    p.add_argument("--warm-up", default="default", help="the drivers' warm-up steps: default, none, or a list "
                   "of stream,python_workers,kafka_stream,kafka_writer,delta")
    p.add_argument("--post-after-warm-up", action="store_true", help="POST the fresh driver's first connector once "
                   "its warm-up logged its end (default: as soon as it is ready)")
    p.add_argument("--master", default="local[2]")
    p.add_argument("--session-timeout-ms", type=int, default=6000)
    p.add_argument("--standby-s", type=float, default=65.0, help="how long the standby stands by before the kill")
    p.add_argument("--timeout-s", type=float, default=900.0)
    p.add_argument("--out", type=Path)
    args = p.parse_args()
    args.warm_up = {"default": None, "none": []}.get(args.warm_up, [s for s in args.warm_up.split(",") if s])
    chosen = set(args.cases.split(","))
    work = Path(tempfile.mkdtemp(prefix="sparkcat-coldstart-"))
    print(f"driver logs in {work}", flush=True)
    results: dict[str, Any] = {"command": " ".join(["python", "-m", "bench.coldstart", *sys.argv[1:]]),
                               "records": args.records, "load_before": loadavg()}
    began = time.monotonic()
    with KafkaBroker(log_dir=work / "kafka", settings={"group.min.session.timeout.ms": "2000"}) as broker:
        run = Run(args, broker, work)
        try:
            create_topic(broker.bootstrap, run.src, 4)
            client("fill", "--bootstrap", broker.bootstrap, "--topic", run.src, "--records", str(args.records))
            for kind in [k for k in args.kinds.split(",") if k]:
                results[kind] = {}
                if "fresh" in chosen:
                    attempt(results[kind], "fresh", lambda: fresh_and_warm(run, kind))
                if "promoted" in chosen:
                    attempt(results[kind], "promoted", lambda: promoted(run, kind))
            if "pyspark" in chosen:
                attempt(results, "pyspark", lambda: {"pyspark": pyspark(run)})
        finally:
            for process in run.started:
                if process.poll() is None:
                    kill_session(process)
    results["elapsed_s"] = round(time.monotonic() - began)
    results["load_after"] = loadavg()
    print(table(results))
    text = json.dumps(results, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
