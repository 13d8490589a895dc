"""A sparkcat driver in a process of its own, to SIGKILL with everything it started.

``start_driver_process`` runs ``tests.eos_driver`` in a new session; ``kill_session`` SIGKILLs every
process of that session: the driver's Python, its Spark JVM, and pyspark's Python daemon and workers,
which move to a process group of their own (``os.setpgid``) but stay in the session, so ``killpg``
would miss them.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

from tests.kafka_helpers import wait_until
from tests.spark_fixture import REPO


def start_driver_process(worker: dict, connectors: dict[str, dict], log: Path, env: dict[str, str],
                         module: str = "tests.eos_driver") -> subprocess.Popen:
    """Start ``module`` (default ``tests.eos_driver``) with a worker config (WorkerConfig fields) and connectors."""
    spec = log.with_suffix(".json")
    spec.write_text(json.dumps({"worker": worker, "connectors": connectors}))
    return subprocess.Popen([sys.executable, "-m", module, str(spec)], cwd=REPO,
                            start_new_session=True, stdout=subprocess.DEVNULL, stderr=open(log, "wb"),
                            env={**os.environ, **env})


def session_pids(sid: int) -> list[int]:
    out = subprocess.run(["ps", "-s", str(sid), "-o", "pid="], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def signal_session(child: subprocess.Popen, sig: int) -> None:
    """Send ``sig`` to every process of the child's session (SIGSTOP freezes the whole driver, as a long GC
    pause or a stalled VM would; SIGCONT resumes it)."""
    for pid in session_pids(child.pid):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def kill_session(child: subprocess.Popen) -> None:
    """SIGKILL every process in the child's session at once, then check that none is left."""
    for pid in session_pids(child.pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    child.wait(30)
    deadline = time.monotonic() + 10
    while session_pids(child.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert session_pids(child.pid) == [], "processes of the killed driver's session are still alive"


def kill_while(child: subprocess.Popen, log: Path, moving: Callable[[], bool], rng: random.Random,
               timeout_s: float = 300, max_delay_s: float = 1.5) -> float:
    """SIGKILL the child's session at a random moment while ``moving()`` says its data is flowing.

    No hook in the product says where a batch is: the kill lands wherever the driver happens to be,
    ``0..max_delay_s`` after the data was last seen to move. Returns the delay chosen (for the message).
    """
    try:
        wait_until(lambda: moving() or child.poll() is not None, timeout_s=timeout_s,
                   message="the driver's data to move")
        assert child.poll() is None, log.read_text()[-3000:]
        delay = rng.uniform(0, max_delay_s)
        time.sleep(delay)
        return delay
    finally:
        kill_session(child)


def kill_rounds(fields: dict, connectors: dict[str, dict], log_dir: Path, rounds: int, progress: Callable[[], int],
                rng: random.Random, timeout_s: float = 240) -> list[tuple[int, float]]:
    """Start a driver process on the same worker ``rounds`` times, each SIGKILLed at a random moment once
    ``progress()`` passed its value at that round's start; ``(progress at the start, delay)`` of each round,
    for the failure message."""
    kills = []
    for round_ in range(rounds):
        log_path = log_dir / f"driver-{round_}.log"
        before = progress()
        child = start_driver_process(fields, connectors, log_path, {})
        delay = kill_while(child, log_path, lambda before=before: progress() > before, rng, timeout_s=timeout_s)
        kills.append((before, round(delay, 2)))
    return kills


def end_sessions(children: list[subprocess.Popen]) -> None:
    """A test's clean-up: resume (if frozen) and SIGKILL the session of every child still running."""
    for child in children:
        if child.poll() is None:
            signal_session(child, signal.SIGCONT)
            kill_session(child)


def seeded_random() -> tuple[random.Random, int]:
    """A generator for random kill moments and its seed, for the failure message (rerun with ``random.Random(seed)``)."""
    seed = random.randrange(10**6)
    return random.Random(seed), seed
