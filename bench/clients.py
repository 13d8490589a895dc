"""Plain confluent-kafka clients for the benchmarks, each run as its own process by ``bench/run.py``.

Own processes keep them off the driver's GIL and make the raw-client baseline a fair single
Python thread. Every command prints one JSON line with its figures on stdout.

    python bench/clients.py fill      --bootstrap B --topic T --records N --value-bytes 100 --partitions 4
    python bench/clients.py raw-copy  --bootstrap B --topic T --target T2 --records N
    python bench/clients.py count     --bootstrap B --topic T
    python bench/clients.py paced     --bootstrap B --topic T --rate 1000 --seconds 30
    python bench/clients.py latency   --bootstrap B --topics T,T2 --seconds 45 --expect N

Readers take the end of each partition from its high watermark when they start (as Spark's Kafka
source plans a micro-batch) and use ``assign()`` only: no consumer group, nothing to wait for.
"""

from __future__ import annotations

import argparse
import json
import signal
import struct
import time
import uuid

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

# The baseline's reading consumer: read_committed as sparkcat's sink input (Spark's Kafka source with
# kafka.isolation.level=read_committed), short fetch waits, never a group commit.
SOURCE_CONSUMER = {
    "enable.auto.commit": False,
    "enable.auto.offset.store": False,
    "enable.partition.eof": True,
    "auto.offset.reset": "earliest",
    "isolation.level": "read_committed",
    "fetch.wait.max.ms": 10,
    "fetch.queue.backoff.ms": 20,
}
STAMP = struct.Struct(">q")  # produce time in ns at the start of each latency-probe value


def emit(result: dict) -> None:
    print(json.dumps(result), flush=True)


# The raw baseline's producer: the settings the kafka sink's Python producer had before the copy moved to
# Spark's Kafka writer (lz4, linger 100 ms, 1 MB batches, idempotence, acks=all), kept so the figures compare.
RAW_PRODUCER = {
    "enable.idempotence": "true",
    "acks": "all",
    "linger.ms": "100",
    "batch.size": "1000000",
    "batch.num.messages": "100000",
    "queue.buffering.max.messages": "1000000",
    "queue.buffering.max.kbytes": "1048576",
    "message.timeout.ms": "120000",
    "compression.type": "lz4",
}


def copy_producer(bootstrap: str, overrides: dict[str, str] | None = None) -> Producer:
    """A producer with the raw baseline's settings (``RAW_PRODUCER`` < ``overrides``)."""
    return Producer({**RAW_PRODUCER, **(overrides or {}), "bootstrap.servers": bootstrap,
                     "delivery.report.only.error": True})


def ends_of(consumer: Consumer, topic: str, parts: list[int]) -> dict[int, int]:
    """The high watermark of each partition now (the offset after its last record)."""
    return {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in parts}


def done_at(msg, ends: dict[int, int], pending: set[int]) -> None:
    """Drop a partition from ``pending`` once ``msg`` reached its end (a record at end - 1, or its EOF event)."""
    if msg.offset() >= ends.get(msg.partition(), 0) - 1:
        pending.discard(msg.partition())


def partitions_of(client, topic: str) -> list[int]:
    md = client.list_topics(topic, timeout=30).topics[topic]
    if md.error is not None:
        raise RuntimeError(f"topic {topic}: {md.error}")
    return sorted(md.partitions)


def produce_all(producer: Producer, topic: str, value: bytes, n: int, parts: int, keyed: bool) -> None:
    produce = producer.produce
    for i in range(n):
        key = b"k%07d" % i if keyed else None
        while True:
            try:
                produce(topic, value, key, i % parts)
                break
            except BufferError:
                producer.poll(0.05)


def cmd_fill(a: argparse.Namespace) -> None:
    """``records`` records of ``value_bytes`` bytes (8-byte keys), round robin over the partitions."""
    producer = copy_producer(a.bootstrap, {"compression.type": a.compression} if a.compression else None)
    parts = len(partitions_of(producer, a.topic))
    value = (b"0123456789abcdef" * (a.value_bytes // 16 + 1))[:a.value_bytes]
    errors: list = []
    t0 = time.perf_counter()
    produce_all(producer, a.topic, value, a.records, parts, keyed=True)
    left = producer.flush(120)
    elapsed = time.perf_counter() - t0
    emit({"records": a.records, "seconds": elapsed, "records_per_s": a.records / elapsed, "undelivered": left,
          "errors": len(errors)})


def cmd_raw_copy(a: argparse.Namespace) -> None:
    """The baseline: one Python thread, assign + consume in batches + produce + flush, partitions kept."""
    consumer = Consumer({**SOURCE_CONSUMER, "bootstrap.servers": a.bootstrap, "group.id": f"raw-{uuid.uuid4().hex}"})
    producer = copy_producer(a.bootstrap)
    parts = partitions_of(consumer, a.topic)
    target_parts = len(partitions_of(producer, a.target))
    ends = ends_of(consumer, a.topic, parts)
    t0 = time.perf_counter()
    consumer.assign([TopicPartition(a.topic, p, 0) for p in parts])
    pending, copied = {p for p in parts if ends[p] > 0}, 0
    produce, target = producer.produce, a.target
    deadline = time.monotonic() + a.timeout
    while pending and copied < a.records:
        msgs = consumer.consume(a.batch, timeout=0.5)
        if not msgs and time.monotonic() > deadline:
            raise SystemExit(f"raw copy: nothing read for {a.timeout}s after {copied} records")
        for m in msgs:
            err = m.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    done_at(m, ends, pending)
                    continue
                raise RuntimeError(str(err))
            done_at(m, ends, pending)
            p = m.partition()
            while True:
                try:
                    produce(target, m.value(), m.key(), p if p < target_parts else -1, timestamp=m.timestamp()[1])
                    break
                except BufferError:
                    producer.poll(0.05)
            copied += 1
        producer.poll(0)
        deadline = time.monotonic() + a.timeout
    left = producer.flush(120)
    elapsed = time.perf_counter() - t0
    consumer.close()
    emit({"records": copied, "seconds": elapsed, "records_per_s": copied / elapsed, "undelivered": left})


def cmd_read(a: argparse.Namespace) -> None:
    """Consume only: read the given partitions (default all) to their end, as fast as one consumer can.

    Several of these started together (``--start-at``) measure how fast the broker serves the topic.
    """
    c = Consumer({**SOURCE_CONSUMER, "bootstrap.servers": a.bootstrap, "group.id": f"read-{uuid.uuid4().hex}"})
    parts = [int(p) for p in a.partitions.split(",")] if a.partitions else partitions_of(c, a.topic)
    ends = ends_of(c, a.topic, parts)
    time.sleep(max(0.0, a.start_at - time.time()))
    t0 = time.perf_counter()
    c.assign([TopicPartition(a.topic, p, 0) for p in parts])
    pending, n = {p for p in parts if ends[p] > 0}, 0
    while pending:
        for m in c.consume(10000, timeout=0.5):
            err = m.error()
            if err is None:
                n += 1
                done_at(m, ends, pending)
            elif err.code() == KafkaError._PARTITION_EOF:
                done_at(m, ends, pending)
            else:
                raise RuntimeError(str(err))
    elapsed = time.perf_counter() - t0
    c.close()
    emit({"records": n, "seconds": elapsed, "records_per_s": n / elapsed, "partitions": parts})


def count_records(bootstrap: str, topic: str, timeout_s: float = 120.0) -> dict[int, int]:
    """Records per partition, read to each partition's end-of-partition event."""
    c = Consumer({**SOURCE_CONSUMER, "bootstrap.servers": bootstrap, "group.id": f"count-{uuid.uuid4().hex}",
                  "isolation.level": "read_uncommitted"})
    try:
        parts = partitions_of(c, topic)
        c.assign([TopicPartition(topic, p, 0) for p in parts])
        pending, counts = set(parts), dict.fromkeys(parts, 0)
        deadline = time.monotonic() + timeout_s
        while pending and time.monotonic() < deadline:
            for m in c.consume(10000, timeout=0.5):
                err = m.error()
                if err is None:
                    counts[m.partition()] += 1
                elif err.code() == KafkaError._PARTITION_EOF:
                    pending.discard(m.partition())
                else:
                    raise RuntimeError(str(err))
        return counts
    finally:
        c.close()


def cmd_count(a: argparse.Namespace) -> None:
    counts = count_records(a.bootstrap, a.topic)
    emit({"records": sum(counts.values()), "per_partition": counts})


def cmd_paced(a: argparse.Namespace) -> None:
    """Produce ``rate`` records/s for ``seconds`` (in ticks of 10 ms); each value starts with its produce time."""
    producer = Producer({"bootstrap.servers": a.bootstrap, "linger.ms": 1, "enable.idempotence": True, "acks": "all"})
    parts = len(partitions_of(producer, a.topic))
    pad = b"p" * max(0, a.value_bytes - STAMP.size)
    tick = 0.01
    per_tick = a.rate * tick
    sent, owed = 0, 0.0
    start = time.perf_counter()
    end = start + a.seconds
    next_tick = start
    while True:
        now = time.perf_counter()
        if now >= end:
            break
        owed += per_tick
        while owed >= 1:
            producer.produce(a.topic, STAMP.pack(time.time_ns()) + pad, None, sent % parts)
            sent += 1
            owed -= 1
        producer.poll(0)
        next_tick += tick
        delay = next_tick - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
    left = producer.flush(60)
    emit({"records": sent, "seconds": time.perf_counter() - start, "undelivered": left})


def percentile(sorted_values: list[float], q: float) -> float | None:
    if not sorted_values:
        return None
    k = min(len(sorted_values) - 1, max(0, int(round(q * (len(sorted_values) - 1)))))
    return sorted_values[k]


def cmd_latency(a: argparse.Namespace) -> None:
    """Receive time minus the produce time in each value, per topic, until ``expect`` records per topic, SIGTERM
    or timeout. Records produced before the probe started (warm-up) are left out."""
    stopping: list[bool] = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    since_ns = time.time_ns()
    topics = [t for t in a.topics.split(",") if t]
    c = Consumer({**SOURCE_CONSUMER, "bootstrap.servers": a.bootstrap, "group.id": f"lat-{uuid.uuid4().hex}",
                  "isolation.level": "read_uncommitted", "fetch.wait.max.ms": 5, "enable.partition.eof": False})
    assignment = [TopicPartition(t, p, 0) for t in topics for p in partitions_of(c, t)]
    c.assign(assignment)
    lat: dict[str, list[float]] = {t: [] for t in topics}
    print(json.dumps({"ready": True}), flush=True)
    deadline = time.monotonic() + a.seconds
    while time.monotonic() < deadline and not stopping:
        msgs = c.consume(1000, timeout=0.05)
        now = time.time_ns()
        for m in msgs:
            if m.error() is not None:
                continue
            v = m.value()
            if v is None or len(v) < STAMP.size:
                continue
            sent = STAMP.unpack_from(v)[0]
            if sent >= since_ns:
                lat[m.topic()].append((now - sent) / 1e6)
        if a.expect and all(len(v) >= a.expect for v in lat.values()):
            break
    c.close()
    out = {}
    for t, values in lat.items():
        s = sorted(values)
        out[t] = {"records": len(s), "p50_ms": percentile(s, 0.50), "p99_ms": percentile(s, 0.99),
                  "max_ms": s[-1] if s else None, "mean_ms": sum(s) / len(s) if s else None}
    emit(out)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("fill", "raw-copy", "count", "paced", "latency", "read"):
        s = sub.add_parser(name)
        s.add_argument("--bootstrap", required=True)
        if name == "latency":
            s.add_argument("--topics", required=True)
        else:
            s.add_argument("--topic", required=True)
    sub.choices["fill"].add_argument("--records", type=int, required=True)
    sub.choices["fill"].add_argument("--value-bytes", type=int, default=100)
    sub.choices["fill"].add_argument("--compression", default=None)
    sub.choices["raw-copy"].add_argument("--target", required=True)
    sub.choices["raw-copy"].add_argument("--records", type=int, required=True)
    sub.choices["raw-copy"].add_argument("--batch", type=int, default=10000)
    sub.choices["raw-copy"].add_argument("--timeout", type=float, default=60.0)
    sub.choices["paced"].add_argument("--rate", type=float, default=1000)
    sub.choices["paced"].add_argument("--seconds", type=float, default=30)
    sub.choices["paced"].add_argument("--value-bytes", type=int, default=100)
    sub.choices["latency"].add_argument("--seconds", type=float, default=60)
    sub.choices["latency"].add_argument("--expect", type=int, default=0)
    sub.choices["read"].add_argument("--partitions", default="")
    sub.choices["read"].add_argument("--start-at", type=float, default=0.0)
    a = p.parse_args(argv)
    {"fill": cmd_fill, "raw-copy": cmd_raw_copy, "count": cmd_count, "paced": cmd_paced,
     "latency": cmd_latency, "read": cmd_read}[a.cmd](a)


if __name__ == "__main__":
    main()
