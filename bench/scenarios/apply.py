"""``apply``: put_connector_config -> first record in Kafka; pause request -> last record written."""

from __future__ import annotations

import time

from bench.harness import Bench, log, wait_for
from bench.measure import Watcher, stats


def run(bench: Bench) -> None:
    from sparkcat.model.config_state import TargetState

    repeats = 1 if bench.quick else 3
    put_lat, pause_lat, pause_status = [], [], []
    for i in range(repeats):
        name = f"apply-{bench.run_id}-{i}"
        prefix = bench.topic(f"apply{i}_")
        topic = f"{prefix}1"
        bench.create_topic(topic, 1)
        watcher = Watcher(bench.broker.bootstrap, topic).start()
        config = {"connector.class": "increment", "increments": "1", "topic.prefix": prefix,
                  "throughput": "200", "value.converter": "org.apache.kafka.connect.json.JsonConverter",
                  "value.converter.schemas.enable": "false"}
        try:
            t0 = time.monotonic()
            bench.herder.put_connector_config(name, config)
            first = wait_for(lambda: watcher.first, 120, 0.01, f"first record of {name}")
            put_lat.append(first - t0)
            time.sleep(3.0)
            t1 = time.monotonic()
            bench.herder.set_target_state(name, TargetState.PAUSED)
            wait_for(lambda: bench.connector_state(name) == "PAUSED", 120, 0.02, f"{name} PAUSED")
            pause_status.append(time.monotonic() - t1)
            time.sleep(3.0)  # anything still in flight arrives
            pause_lat.append(max(0.0, watcher.last - t1))
        finally:
            watcher.stop()
        bench.delete(name)
        log.info("apply %d: put->first record %.2fs, pause->last record %.2fs", i, put_lat[-1], pause_lat[-1])
    bench.figures["apply_latency_s"] = stats(put_lat, "s", "put_connector_config of a new connector -> its first "
                                             "record in Kafka (target < 10 s)")
    bench.figures["pause_latency_s"] = stats(pause_lat, "s", "pause request -> last record written (target < 10 s)")
    bench.figures["pause_status_s"] = stats(pause_status, "s", "pause request -> status PAUSED")
