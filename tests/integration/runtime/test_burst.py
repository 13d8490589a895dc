"""Many connectors changed at once on a real Spark session: their queries stop together, gracefully.

Deleting connectors one request after another must not cost one whole micro-batch
per connector: each query's stop waits for its batch in flight, but they all wait
at the same time, and the herder keeps taking requests meanwhile. Each stop still
lets its batch finish and be committed, so a connector created again under the
same name continues its output exactly (no gap, no duplicate).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from sparkcat.bootstrap import Driver
from sparkcat.config.worker import WorkerConfig
from tests.kafka_helpers import wait_until

pytestmark = pytest.mark.integration

BURST = 4


def positions(path: Path) -> list[int]:
    lines = path.read_text().splitlines() if path.exists() else []
    return [json.loads(line)["position"] for line in lines]


def config(out: Path) -> dict[str, str]:
    return {"connector.class": "increment", "increments": "1", "records.per.poll": "5",
            "trigger.interval.ms": "200", "sink.connector.class": "file-sink", "sink.file": str(out)}


def log_lines(caplog: pytest.LogCaptureFixture, text: str) -> list[int]:
    """Indexes of the runtime's log lines containing ``text``."""
    return [i for i, r in enumerate(caplog.records) if r.name.startswith("sparkcat.runtime.") and text in r.getMessage()]


def test_connectors_deleted_in_a_burst_stop_together_and_continue_exactly_when_created_again(
        spark, tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="sparkcat.runtime")
    driver = Driver(spark, WorkerConfig(state_dir=str(tmp_path / "state"), file_allowed_dirs=[str(tmp_path)]),
                    rest=False, watch_pipelines=False)
    driver.start()
    herder, reconciler = driver.herder, driver.reconciler
    names = [f"burst-{i}" for i in range(BURST)]
    outs = {n: tmp_path / f"{n}.jsonl" for n in names}
    try:
        for name in names:
            herder.put_connector_config(name, config(outs[name]))
        wait_until(lambda: all(len(positions(outs[n])) >= 10 for n in names), timeout_s=120,
                   message="every connector to write")

        # Each query gets a batch in flight that lasts until we let it go: its gate is held, as by a
        # long batch. Before, the first deletion kept the herder waiting for that batch, and the
        # next request waited for the herder (60 s, then TimeoutError).
        gates = [reconciler.lifecycles[n].query.gate for n in names]
        assert all(gate.acquire(timeout=60) for gate in gates)
        first = len(caplog.records)
        try:
            for name in names:
                herder.delete_connector(name)
            wait_until(lambda: len([i for i in log_lines(caplog, "stopping its query") if i >= first]) == BURST,
                       timeout_s=60, message="every stop to begin")
            stopping = [reconciler.lifecycles[n].query for n in names]
            assert all(q.is_active() for q in stopping), "a query stopped in the middle of its batch"
        finally:
            for gate in gates:
                gate.release()
        wait_until(lambda: not any(n in reconciler.lifecycles for n in names), timeout_s=120,
                   message="every deletion to finish")

        began = [i for i in log_lines(caplog, "stopping its query") if i >= first]
        ended = [i for i in log_lines(caplog, "query stopped after") if i >= first]
        assert len(began) == len(ended) == BURST
        assert max(began) < min(ended), "the stops did not overlap: one waited for another"
        active = {q.name for q in spark.streams.active}
        for name in names:
            assert name not in active and driver.stores.status.get(name) is None
            assert not Path(reconciler.checkpoint_dir(name)).exists()
        written = {n: len(positions(outs[n])) for n in names}

        for name in names:  # same names: they continue from the offsets their last committed batch stored
            herder.put_connector_config(name, config(outs[name]))
        wait_until(lambda: all(len(positions(outs[n])) >= written[n] + 10 for n in names), timeout_s=120,
                   message="every connector to write again")
    finally:
        driver.stop()
    for name in names:
        seen = positions(outs[name])
        assert seen == list(range(1, len(seen) + 1)), f"gap or duplicate in {name}'s output"
