#!/usr/bin/env python3
"""Failover time of a two-driver cluster: the leader's kill -9 -> the first record the new leader writes.

    .venv/bin/python -m bench.failover --runs 5 --session-timeout-ms 6000
    .venv/bin/python -m bench.failover --runs 5 --session-timeout-ms 3000 --heartbeat-interval-ms 500

Starts its own broker (``tests.broker.KafkaBroker``; ``group.min.session.timeout.ms`` 2000, so sessions
below Kafka's default minimum of 6 s can be measured), then a chain of driver processes
(``tests.ha_driver``, local[4], REST on): the first leads and runs an exactly-once ``increment``
source; each run starts a standby, waits until it stands by, kills the leader's whole process session
with SIGKILL and measures, from the records' CreateTime, how long after the kill the standby's first
record was written (the first record stamped after its promotion). The kill comes ``--standby-s`` after
the standby's start, 65 s by default: longer than Spark keeps idle Python workers, as for a standby in
use. The standby is the next run's leader. Every run also checks that each position of the sequence is
in the topic exactly once. Prints min/median/max, each phase of the new leader's start (from its log
lines, ``PHASES``), and the load average.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import socket
import statistics
import tempfile
import time
from pathlib import Path

import httpx

from tests.broker import KafkaBroker
from tests.driver_process import kill_session, start_driver_process
from tests.kafka_helpers import read_topic_with_timestamps, wait_until

CONFIG = {"connector.class": "increment", "increments": "1", "tasks.max": "1", "records.per.poll": "100",
          "batch.max.records": "100", "trigger.interval.ms": "200", "exactly.once.support": "required",
          "topic.prefix": "failover-seq_", "value.converter": "org.apache.kafka.connect.json.JsonConverter",
          "value.converter.schemas.enable": "false"}
TOPIC = "failover-seq_1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def role(port: int) -> tuple[str, str] | None:
    try:
        info = httpx.get(f"http://127.0.0.1:{port}/", timeout=5).json()
    except (httpx.HTTPError, ValueError):
        return None
    return info.get("sparkcat_role"), info.get("sparkcat_leader_url")


def start(bootstrap: str, work: Path, name: str, args: argparse.Namespace) -> tuple[object, int]:
    port = free_port()
    fields = {"bootstrap_servers": bootstrap, "state_dir": str(work / name), "rest_port": port,
              "group_id": "failover", "config_topic": "failover-configs", "offset_topic": "failover-offsets",
              "status_topic": "failover-status", "session_timeout_ms": args.session_timeout_ms,
              "heartbeat_interval_ms": args.heartbeat_interval_ms}
    return start_driver_process(fields, {}, work / f"{name}.log", {}, module="tests.ha_driver"), port


#: The new leader's log lines that end each phase of a failover, in order: (phase, text of the line).
PHASES = (("partition 0 assigned", "holds the config topic's partition 0"),
          ("leader (config writer fenced, log end read)", "is the leader (config log read"),
          ("connector instance started", "Connector inc started on the driver"),
          ("task transactional ids fenced", "Connector inc: fenced earlier instances"),
          ("Spark query started", "Connector inc: query started in"),
          ("first batch begun", "Connector inc: first batch"),
          ("first batch committed", "Connector inc: batch"))


def _stamp(line: str) -> float:
    """A log line's local-time stamp (``%(asctime)s``) as epoch seconds."""
    stamp, millis = line[:23].split(",")
    return time.mktime(time.strptime(stamp, "%Y-%m-%d %H:%M:%S")) + int(millis) / 1000


def phase_times(log: Path, after: float) -> dict[str, float]:
    """Seconds after ``after`` (the kill) at which the driver logged the end of each phase (first time since)."""
    found: dict[str, float] = {}
    for line in log.read_text(errors="replace").splitlines():
        for phase, text in PHASES:
            if phase not in found and text in line and line[:4].isdigit() and _stamp(line) >= after:
                found[phase] = _stamp(line) - after
    return found


def positions(bootstrap: str) -> list[int]:
    return [json.loads(r[3])["position"] for r in read_topic_with_timestamps(bootstrap, TOPIC)]


def run(args: argparse.Namespace) -> list[float]:
    work = Path(tempfile.mkdtemp(prefix="sparkcat-failover-"))
    print(f"driver logs in {work}", flush=True)
    times: list[float] = []
    phases: dict[str, list[float]] = collections.defaultdict(list)
    started: list = []
    with KafkaBroker(log_dir=work / "kafka", settings={"group.min.session.timeout.ms": "2000"}) as broker:
        try:
            leader, port = start(broker.bootstrap, work, "d0", args)
            started.append(leader)
            wait_until(lambda: (role(port) or ("",))[0] == "leader", timeout_s=300, message="the first leader")
            answer = httpx.post(f"http://127.0.0.1:{port}/connectors", json={"name": "inc", "config": CONFIG}, timeout=90)
            assert answer.status_code == 201, answer.text
            for i in range(1, args.runs + 1):
                standby, standby_port = start(broker.bootstrap, work, f"d{i}", args)
                started.append(standby)
                wait_until(lambda: (work / f"d{i}.started").exists() and
                           role(standby_port) == ("standby", f"http://127.0.0.1:{port}"), timeout_s=300,
                           message="the standby")
                stood_by = time.monotonic()
                before = len(positions(broker.bootstrap))
                wait_until(lambda: len(positions(broker.bootstrap)) >= before + 300, timeout_s=120, message="records")
                time.sleep(max(0.0, args.standby_s - (time.monotonic() - stood_by)))
                killed_ms = time.time() * 1000
                kill_session(leader)
                # The old leader's last transaction may commit records stamped just after killed_ms (its
                # processes die one by one): the new leader's records are those stamped after its promotion.
                log = work / f"d{i}.log"
                wait_until(lambda: "partition 0 assigned" in phase_times(log, killed_ms / 1000), timeout_s=120,
                           message="the standby's promotion")
                promoted_ms = (killed_ms / 1000 + phase_times(log, killed_ms / 1000)["partition 0 assigned"]) * 1000
                wait_until(lambda: any(r[4] > promoted_ms for r in read_topic_with_timestamps(broker.bootstrap, TOPIC)),
                           timeout_s=120, message="a record from the new leader")
                first = min(r[4] for r in read_topic_with_timestamps(broker.bootstrap, TOPIC) if r[4] > promoted_ms)
                times.append((first - killed_ms) / 1000)
                wait_until(lambda: "first batch committed" in phase_times(log, killed_ms / 1000), timeout_s=120,
                           message="the new leader's first batch")
                found = phase_times(log, killed_ms / 1000)
                found["first record written"] = times[-1]
                for phase, at in found.items():
                    phases[phase].append(at)
                got = positions(broker.bootstrap)
                dup = [p for p, n in collections.Counter(got).items() if n > 1]
                assert sorted(got) == list(range(1, len(got) + 1)), f"duplicated {dup[:10]}"
                steps = ", ".join(f"{phase} {at:.2f}" for phase, at in found.items())
                print(f"run {i}: first record {times[-1]:.2f} s after the kill -9; {len(got)} records, each once; "
                      f"phases (s after the kill): {steps}", flush=True)
                leader, port = standby, standby_port
        finally:
            for process in started:
                if process.poll() is None:
                    kill_session(process)
    for phase, _ in (*PHASES, ("first record written", "")):
        if phases[phase]:
            print(f"phase_s kill -9 -> {phase}: min {min(phases[phase]):.2f} median "
                  f"{statistics.median(phases[phase]):.2f} max {max(phases[phase]):.2f} (n={len(phases[phase])})")
    return times


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--session-timeout-ms", type=int, default=6000)
    p.add_argument("--heartbeat-interval-ms", type=int, default=1000)
    p.add_argument("--standby-s", type=float, default=65.0,
                   help="how long the standby stands by before the kill (Spark drops Python workers idle for 60 s)")
    args = p.parse_args()
    load_before = os.getloadavg()
    times = run(args)
    print(f"failover_s session.timeout.ms={args.session_timeout_ms} heartbeat.interval.ms="
          f"{args.heartbeat_interval_ms}: min {min(times):.2f} median {statistics.median(times):.2f} "
          f"max {max(times):.2f} (n={len(times)}); load average before {load_before}, after {os.getloadavg()}")


if __name__ == "__main__":
    main()
