"""``source``: the ``increment`` connector with 4 tasks writing to Kafka as fast as it can."""

from __future__ import annotations

import time

from bench.harness import Bench, log, wait_for
from bench.measure import parse_ts, stats


def run(bench: Bench) -> None:
    repeats = 1 if bench.quick else 2
    seconds = 8.0 if bench.quick else 20.0
    rates, batch_ms = [], []
    for i in range(repeats):
        name = f"src-{bench.run_id}-{i}"
        prefix = bench.topic(f"inc{i}_")
        for k in (1, 2, 3, 4):
            bench.create_topic(f"{prefix}{k}", 1)
        config = {"connector.class": "increment", "increments": "1,2,3,4", "tasks.max": "4",
                  "topic.prefix": prefix, "records.per.poll": "1000000", "batch.max.records": "100000",
                  "trigger.interval.ms": "0", "value.converter": "org.apache.kafka.connect.json.JsonConverter",
                  "value.converter.schemas.enable": "false"}
        bench.herder.put_connector_config(name, config)
        wait_for(lambda: bench.committed_records(name) > 0, 300, 0.1, f"{name} first batch")
        time.sleep(seconds)
        rows = [b for b in bench.progress(name) if b["records"] > 0]
        bench.delete(name)
        steady = rows[1:] if len(rows) > 2 else rows  # the first batch pays for Python workers and producers
        start = parse_ts(steady[0]["timestamp"])
        end = parse_ts(steady[-1]["timestamp"]) + steady[-1]["durationMs"]["triggerExecution"] / 1000
        records = sum(b["records"] for b in steady)
        rates.append(records / (end - start))
        batch_ms += [b["durationMs"]["triggerExecution"] for b in steady]
        log.info("source %d: %.0f records/s over %d batches", i, rates[-1], len(steady))
    bench.figures["source_records_per_s"] = stats(rates, "records/s",
                                                  "increment, 4 tasks, JSON values, to Kafka, steady state")
    bench.figures["source_batch_ms"] = stats(batch_ms, "ms", "per micro-batch (4 x 100,000 records)")
