#!/usr/bin/env python3
"""A chaos soak: three drivers and a three-broker Kafka run an exactly-once pipeline while a seeded schedule
injects faults; at the end every stage must hold every position exactly once.

    .venv/bin/python -m bench.soak --minutes 30 --seed 7 --out bench/work/soak.json

The pipeline, every stage exactly-once: ``increment`` source -> ``soak_seq_1`` -> ``kafka`` copy ->
``soak_copy`` -> a ``delta`` table and a ``jdbc-sink`` table in PostgreSQL (insert mode, no key, so a
record written twice is a second row). One fault every ``--min-gap``..``--max-gap`` seconds, its kind
drawn uniformly:

- ``kill-leader`` / ``kill-standby``: kill -9 of the driver's whole process session (Python, Spark JVM,
  Python workers); a new driver process on the same state directory joins 5-20 s later.
- ``restart-broker`` / ``crash-broker``: one broker node stopped with SIGTERM / SIGKILL and started again
  5-30 s later (the others keep running; internal topics have 3 replicas).
- ``freeze-driver``: SIGSTOP of a driver's whole session for 1.5-4 session timeouts, then SIGCONT. For the
  cluster this is what a network cut is (the coordinator stops hearing from the driver; a frozen leader
  loses partition 0); the cut itself, through a TCP proxy, is tests/integration/runtime/test_split_brain.py.

Then the source is paused, the stages drain, and each is read whole: the report gives faults by kind,
records, duplicates and losses per stage, each stage's longest stall (no growth while the source ran),
and the load average. Not part of CI; run it alone.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import signal
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import httpx

from tests.broker import KafkaBroker, free_port
from tests.driver_process import end_sessions, kill_session, signal_session, start_driver_process
from tests.integration.runtime.test_driver import kafka_worker_fields
from tests.kafka_helpers import read_json_values, wait_until
from tests.postgres import PostgresServer

SEQ, COPY, TABLE = "soak_seq_1", "soak_copy", "soak_rows"
SESSION_MS, HEARTBEAT_MS = 6000, 1000
JSON = {"value.converter": "org.apache.kafka.connect.json.JsonConverter", "value.converter.schemas.enable": "false"}
EOS = {"exactly.once.support": "required"}
KINDS = ("kill-leader", "kill-standby", "restart-broker", "crash-broker", "freeze-driver")


def connectors(work: Path, pg: PostgresServer, database: str) -> dict[str, dict]:
    return {
        "seq": {"connector.class": "increment", "increments": "1", "tasks.max": "1", "records.per.poll": "100",
                "batch.max.records": "100", "trigger.interval.ms": "500", "topic.prefix": "soak_seq_", **JSON, **EOS},
        "copy": {"connector.class": "kafka", "topics": SEQ, "target.topic.format": COPY, "tasks.max": "1",
                 "batch.max.records": "500", "trigger.interval.ms": "500", **EOS},
        "delta": {"connector.class": "delta", "topics": COPY, "tasks.max": "1", "table.path": str(work / "delta"),
                  "value.schema": "position BIGINT", "trigger.interval.ms": "2000", **JSON, **EOS},
        "jdbc": {"connector.class": "jdbc-sink", "topics": COPY, "tasks.max": "1", "auto.create": "true",
                 "table.name.format": TABLE, "insert.mode": "insert", "pk.mode": "none",
                 "trigger.interval.ms": "1000", **pg.connection_config(database), **JSON, **EOS},
    }


@dataclass
class DriverProc:
    """One driver process of the cluster; ``restarts`` counts the processes started on its state directory."""

    name: str
    work: Path
    bootstrap: str
    proc: Any = None
    port: int = 0
    restarts: int = 0

    def start(self) -> None:
        self.port = free_port()
        fields = {**kafka_worker_fields(self.bootstrap, self.work, "soak"), "group_id": "soak",
                  "state_dir": str(self.work / self.name), "rest_port": self.port,
                  "session_timeout_ms": SESSION_MS, "heartbeat_interval_ms": HEARTBEAT_MS}
        log = self.work / f"{self.name}-{self.restarts}.log"
        self.proc = start_driver_process(fields, {}, log, {}, module="tests.ha_driver")
        self.restarts += 1

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def role(self) -> str | None:
        try:
            return httpx.get(self.url + "/", timeout=3).json().get("sparkcat_role")
        except (httpx.HTTPError, ValueError):
            return None


@dataclass
class Stage:
    """A stage's size over time: ``longest_stall_s`` is the longest time it did not grow."""

    name: str
    measure: Callable[[], int | None]
    value: int = -1
    grew_at: float = 0.0
    longest_stall_s: float = 0.0
    samples: int = 0
    unreadable: int = 0

    def sample(self, now: float) -> None:
        try:
            value = self.measure()
        except Exception:  # noqa: BLE001 - a broker or table briefly unreadable: no growth seen
            value = None
        self.samples += 1
        if value is None:
            self.unreadable += 1
        elif value > self.value:
            if self.value >= 0:
                self.longest_stall_s = max(self.longest_stall_s, now - self.grew_at)
            self.value, self.grew_at = value, now

    def close(self, now: float) -> None:
        """The end of the fault window: a stall still going on counts up to now."""
        if self.value >= 0:
            self.longest_stall_s = max(self.longest_stall_s, now - self.grew_at)


@dataclass
class Soak:
    args: argparse.Namespace
    work: Path
    rng: random.Random
    faults: list[dict] = field(default_factory=list)
    drivers: list[DriverProc] = field(default_factory=list)

    def leader(self, timeout_s: float = 120) -> DriverProc:
        found = wait_until(lambda: next((d for d in self.drivers if d.role() == "leader"), None), timeout_s=timeout_s,
                           interval_s=1, message="a leader")
        return found  # type: ignore[return-value]

    def inject(self, kind: str, broker: KafkaBroker) -> dict:
        """One fault of ``kind``; returns what was done (for the report)."""
        if kind in ("kill-leader", "kill-standby", "freeze-driver"):
            leader = self.leader()
            pool = [leader] if kind == "kill-leader" else (
                [d for d in self.drivers if d is not leader] if kind == "kill-standby" else self.drivers)
            victim = self.rng.choice(pool)
            role = "leader" if victim is leader else "standby"
            if kind == "freeze-driver":
                frozen_s = self.rng.uniform(1.5, 4) * SESSION_MS / 1000
                signal_session(victim.proc, signal.SIGSTOP)
                time.sleep(frozen_s)
                signal_session(victim.proc, signal.SIGCONT)
                return {"kind": kind, "driver": victim.name, "role": role, "frozen_s": round(frozen_s, 1)}
            kill_session(victim.proc)
            down_s = self.rng.uniform(5, 20)
            time.sleep(down_s)
            victim.start()
            return {"kind": kind, "driver": victim.name, "role": role, "down_s": round(down_s, 1)}
        node = self.rng.randint(1, broker.nodes)
        broker.stop_node(node, kill=kind == "crash-broker")
        down_s = self.rng.uniform(5, 30)
        time.sleep(down_s)
        broker.start_node(node)
        return {"kind": kind, "node": node, "down_s": round(down_s, 1)}


def create_topics(bootstrap: str) -> None:
    """The pipeline's topics, 3 replicas each, before the sinks subscribe (a sink's query on a topic that does
    not exist yet fails at its start)."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(t, 1, 3) for t in (SEQ, COPY)]).values():
        future.result(timeout=60)


def watermark(bootstrap: str, topic: str) -> Callable[[], int | None]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "soak-watch", "log_level": 0})

    def measure() -> int | None:
        return consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=3)[1]
    return measure


def delta_version(path: Path) -> Callable[[], int | None]:
    def measure() -> int | None:
        import deltalake
        return deltalake.DeltaTable(str(path)).version() if (path / "_delta_log").exists() else None
    return measure


def row_count(db: Any) -> Callable[[], int | None]:
    def measure() -> int | None:
        try:
            return db.execute(f"SELECT count(*) FROM {TABLE}").fetchone()[0]
        except Exception:  # noqa: BLE001 - not created yet
            return None
    return measure


def verdict(name: str, got: list[int], expected: int) -> dict:
    counts = collections.Counter(got)
    duplicates = sum(n - 1 for n in counts.values() if n > 1)
    lost = [p for p in range(1, expected + 1) if p not in counts]
    return {"stage": name, "records": len(got), "distinct": len(counts), "duplicates": duplicates,
            "lost": len(lost), "first_lost": lost[:10]}


def run(args: argparse.Namespace) -> dict:
    work = Path(args.work or tempfile.mkdtemp(prefix="sparkcat-soak-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"soak: seed {args.seed}; logs in {work}", flush=True)
    soak = Soak(args, work, random.Random(args.seed))
    load_before = os.getloadavg()
    with KafkaBroker(log_dir=work / "kafka", nodes=3) as broker, PostgresServer() as pg:
        database = pg.create_database("soak")
        soak.drivers = [DriverProc(f"d{i}", work, broker.bootstrap) for i in range(3)]
        db = pg.connect(database)
        stages = [Stage("source topic (log end)", watermark(broker.bootstrap, SEQ)),
                  Stage("copy topic (log end)", watermark(broker.bootstrap, COPY)),
                  Stage("delta (table version)", delta_version(work / "delta")),
                  Stage("jdbc (rows)", row_count(db))]
        stop = threading.Event()

        def sampler() -> None:
            while not stop.wait(2):
                now = time.monotonic()
                for stage in stages:
                    stage.sample(now)
        try:
            for d in soak.drivers:
                d.start()
            leader = soak.leader(timeout_s=300)
            create_topics(broker.bootstrap)
            for name, config in connectors(work, pg, database).items():
                answer = httpx.post(leader.url + "/connectors", json={"name": name, "config": config}, timeout=90)
                assert answer.status_code == 201, answer.text
            wait_until(lambda: (row_count(db)() or 0) > 0, timeout_s=300, message="rows in PostgreSQL")
            threading.Thread(target=sampler, daemon=True).start()
            started = time.monotonic()
            end = started + args.minutes * 60
            while time.monotonic() < end:
                time.sleep(min(soak.rng.uniform(args.min_gap, args.max_gap), max(0.0, end - time.monotonic())))
                if time.monotonic() >= end:
                    break
                kind = soak.rng.choice(KINDS)
                at = round(time.monotonic() - started, 1)
                done = {"at_s": at, **soak.inject(kind, broker)}
                soak.faults.append(done)
                print(f"fault {len(soak.faults)}: {json.dumps(done)}", flush=True)
            stop.set()
            for stage in stages:
                stage.close(time.monotonic())
            leader = soak.leader(timeout_s=300)
            paused = httpx.put(leader.url + "/connectors/seq/pause", timeout=30)
            assert paused.status_code == 202, paused.text
            time.sleep(10)  # a batch under way when the pause came finishes
            seq = [v["position"] for v in read_json_values(broker.bootstrap, SEQ)]
            expected = max(seq)

            def drained() -> bool:
                return (len(read_json_values(broker.bootstrap, COPY)) >= len(seq) and
                        (row_count(db)() or 0) >= len(seq) and
                        len(_delta_positions(work / "delta")) >= len(seq))
            wait_until(drained, timeout_s=900, interval_s=5, message="every stage drained")
            time.sleep(10)  # a duplicate written late would show now
            verdicts = [verdict("source topic", seq, expected),
                        verdict("copy topic", [v["position"] for v in read_json_values(broker.bootstrap, COPY)], expected),
                        verdict("delta table", _delta_positions(work / "delta"), expected),
                        verdict("jdbc table", [r[0] for r in db.execute(f"SELECT position FROM {TABLE}")], expected)]
        finally:
            stop.set()
            end_sessions([d.proc for d in soak.drivers if d.proc is not None])
    kinds = collections.Counter(f["kind"] for f in soak.faults)
    return {"seed": args.seed, "minutes": args.minutes, "faults": soak.faults, "faults_by_kind": dict(kinds),
            "verdicts": verdicts,
            "longest_stall_s": {s.name: round(s.longest_stall_s, 1) for s in stages},
            "unreadable_samples": {s.name: f"{s.unreadable}/{s.samples}" for s in stages},
            "driver_processes_started": {d.name: d.restarts for d in soak.drivers},
            "load_before": load_before, "load_after": os.getloadavg(), "work": str(work)}


def _delta_positions(path: Path) -> list[int]:
    import deltalake
    if not (path / "_delta_log").exists():
        return []
    return deltalake.DeltaTable(str(path)).to_pyarrow_table(columns=["position"]).column("position").to_pylist()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--minutes", type=float, default=30)
    p.add_argument("--seed", type=int, default=random.randrange(10**6))
    p.add_argument("--min-gap", type=float, default=20)
    p.add_argument("--max-gap", type=float, default=90)
    p.add_argument("--work", help="a directory for logs and data (default: a new temporary one)")
    p.add_argument("--out", help="write the report here as JSON")
    args = p.parse_args()
    report = run(args)
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text)
    clean = all(v["duplicates"] == 0 and v["lost"] == 0 for v in report["verdicts"])
    print("soak: every stage holds every position exactly once" if clean else "soak: FAILED (see verdicts)")
    raise SystemExit(0 if clean else 1)


if __name__ == "__main__":
    main()
