"""``smt``: a source connector to Kafka with a chain of three SMTs against the same connector without one.

Each repeat runs the ``increment`` connector (4 tasks of 25,000 records per micro-batch, JSON values, at least once so the
transactions' cost does not hide the transforms') twice back to back: plain, then with
InsertField (a static field), MaskField (``increment``) and RegexRouter (topic renamed). Both runs
write ``--smt-records`` records (1,000,000 by default); the figure is records/s over the steady
micro-batches (the first, which starts the Python workers, left out) and the ratio chain / plain
per repeat. The chain runs as Spark column expressions in the query's projection
(``sparkcat.transforms``).
"""

from __future__ import annotations

from bench.harness import Bench, log, wait_for
from bench.measure import parse_ts, stats

T = "org.apache.kafka.connect.transforms."
CHAIN = {"transforms": "insert, mask, route",
         "transforms.insert.type": T + "InsertField$Value", "transforms.insert.static.field": "origin",
         "transforms.insert.static.value": "sparkcat-bench",
         "transforms.mask.type": T + "MaskField$Value", "transforms.mask.fields": "increment",
         "transforms.route.type": T + "RegexRouter", "transforms.route.regex": "(.*)-src_(.*)",
         "transforms.route.replacement": "$1-dst_$2"}


def _run(bench: Bench, name: str, prefix: str, records: int, chain: bool) -> tuple[float, list[float]]:
    """records/s over the steady batches and their durations, for one connector writing ``records`` records."""
    for k in (1, 2, 3, 4):
        bench.create_topic(f"{prefix}-src_{k}", 1)
        bench.create_topic(f"{prefix}-dst_{k}", 1)
    config = {"connector.class": "increment", "increments": "1,2,3,4", "tasks.max": "4",
              "topic.prefix": f"{prefix}-src_", "records.per.poll": "1000000", "batch.max.records": "25000",
              "trigger.interval.ms": "0", "value.converter": "org.apache.kafka.connect.json.JsonConverter",
              "value.converter.schemas.enable": "false", **(CHAIN if chain else {})}
    bench.herder.put_connector_config(name, config)

    def rows() -> list[dict]:
        return [b for b in bench.progress(name) if b["records"] > 0]

    # Spark posts a batch's progress after its commit: wait for the records and for three reported batches
    wait_for(lambda: bench.committed_records(name) >= records and len(rows()) >= 3, 900, 0.2,
             f"{name}: {records} records")
    rows = rows()
    committed = bench.committed_records(name)
    bench.delete(name)
    # Records from the connector's committed batches: Spark's numInputRows counts the planned source's rows
    # (one per task and batch), not records. So the rate spans every batch, the first one's start included.
    start = parse_ts(rows[0]["timestamp"])
    end = parse_ts(rows[-1]["timestamp"]) + rows[-1]["durationMs"]["triggerExecution"] / 1000
    return committed / (end - start), [b["durationMs"]["triggerExecution"] for b in rows[1:] or rows]


def _projection_s(spark, records: int, chain: bool) -> float:
    """Seconds to run a batch of connector-source rows (with or without the chain) into Spark's noop sink."""
    import time

    from pyspark.sql import functions as F

    from sparkcat.transforms import Records, apply_chain, parse_chain
    ids = spark.range(records)
    df = ids.select(F.lit(0).alias("_task"), F.lit('{"increment":1}').alias("_partition"),
                    F.col("id").cast("string").alias("_offset"), F.lit("b-src_1").alias("topic"),
                    F.lit(None).cast("string").alias("key"),
                    F.struct(F.col("id").alias("position"), F.col("id").alias("value"),
                             F.lit(1).cast("long").alias("increment")).alias("value"),
                    F.lit(1700000000000).alias("timestamp_ms"),
                    F.lit(None).cast("array<struct<key:string,value:binary>>").alias("headers"))
    if chain:
        df = apply_chain(Records(df), parse_chain(CHAIN)).df
    started = time.monotonic()
    df.write.format("noop").mode("overwrite").save()
    return time.monotonic() - started


def _projection(bench: Bench, records: int, repeats: int) -> None:
    """The chain's own cost: the same rows through Spark with and without it, interleaved, no Kafka."""
    times: dict[bool, list[float]] = {False: [], True: []}
    _projection_s(bench.spark, records, True)  # warm-up: code generation, JIT
    for _ in range(repeats):
        for chain in (False, True):
            times[chain].append(_projection_s(bench.spark, records, chain))
    ratios = [c / p for p, c in zip(times[False], times[True])]
    bench.figures["smt_projection_plain_s"] = stats(times[False], "s", f"{records:,} source rows into Spark's noop "
                                                                       "sink, no transforms")
    bench.figures["smt_projection_chain_s"] = stats(times[True], "s", "the same rows with the three-SMT chain")
    bench.figures["smt_projection_ratio"] = stats(ratios, "x", "chain / plain time, per interleaved repeat")


def run(bench: Bench) -> None:
    repeats = 1 if bench.quick else 3
    records = 300_000 if bench.quick else int(getattr(bench.args, "smt_records", 0) or 1_000_000)
    worker = bench.driver.reconciler.worker
    rates: dict[str, list[float]] = {"plain": [], "chain": []}
    batch_ms: dict[str, list[float]] = {"plain": [], "chain": []}
    ratios = []
    try:
        worker.exactly_once_source_support = "disabled"
        for i in range(repeats):
            for mode in ("plain", "chain"):
                rate, durations = _run(bench, f"smt-{bench.run_id}-{mode}{i}", bench.topic(f"smt{mode}{i}"),
                                       records, mode == "chain")
                rates[mode].append(rate)
                batch_ms[mode] += durations
                log.info("smt %s %d: %.0f records/s over %d batches", mode, i, rate, len(durations))
            ratios.append(rates["chain"][-1] / rates["plain"][-1])
    finally:
        worker.exactly_once_source_support = "enabled"
    _projection(bench, 5 * records, 5 if not bench.quick else 2)
    note = f"increment, 4 tasks, JSON values, to Kafka at least once, {records:,} records per run, all batches"
    bench.figures["smt_plain_records_per_s"] = stats(rates["plain"], "records/s", note + ", no transforms")
    bench.figures["smt_chain_records_per_s"] = stats(rates["chain"], "records/s",
                                                     note + ", InsertField + MaskField + RegexRouter")
    bench.figures["smt_ratio"] = stats(ratios, "x", "chain / plain, per interleaved repeat (target >= 0.8)")
    bench.figures["smt_chain_batch_ms"] = stats(batch_ms["chain"], "ms", "per micro-batch with the chain")
    bench.figures["smt_plain_batch_ms"] = stats(batch_ms["plain"], "ms", "per micro-batch without")
