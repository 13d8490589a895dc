#!/usr/bin/env python3
"""Kafka Connect's own Java connectors on sparkcat and on a real Connect 4.1.1 worker, side by side, same broker.

    bash -c 'source scripts/venv.sh rest,test,bench && sparkcat_need_jars kafka && sparkcat_need_jars connect \\
             && python bench/java_connectors.py --lines 1000000 --records 1000000'

Starts an Apache Kafka broker (``tests.broker.KafkaBroker``), then, one after the other, each on a fresh topic:

- ``file_*``: Apache's ``FileStreamSourceConnector`` (connect-file 4.1.1, ``tasks.max=1``, its default
  ``batch.size`` 2000, StringConverter) copying a file of ``--lines`` lines into a one-partition topic:
  ``raw`` a Python loop (read the file, confluent-kafka ``produce`` per line, one flush); ``pyspark`` the same
  pipeline hand-written as a Structured Streaming job (``readStream.text`` -> ``writeStream.format("kafka")``,
  ``availableNow``); ``connect`` a Connect worker in distributed mode (JVM options of connect-distributed.sh:
  ``-Xms256M -Xmx2G``); ``sparkcat`` the same Java connector from a plugin.path on an in-process driver
  (``local[2]``), at least once as Connect (``exactly.once.source.support=disabled``), and ``sparkcat_eos``
  with sparkcat's default, exactly once.
- ``mirror_*``: MirrorMaker 2's ``MirrorSourceConnector`` (connect-mirror 4.1.1, ``tasks.max=2``, bytes) copying
  ``--records`` records of 100 bytes from a 2-partition topic, on the Connect worker and on sparkcat.

Each worker first runs a warm-up FileStreamSource of 100 lines to completion and deletes it, so the figures are
those of a running worker (its first query, producer and plugin scan behind it), as a user adds a connector to a
worker that runs others. Each Connect/sparkcat figure is timed from the POST (``put_connector_config`` for the in-process driver) to the
first record in the target topic and to the last one; records/s is over the whole time and after the first
record; memory per connector is the RSS growth of the worker (Connect's JVM; sparkcat's Python and JVM) from
before the POST to the end. The load average is recorded before and after. Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
MIRROR_SOURCE = "org.apache.kafka.connect.mirror.MirrorSourceConnector"
STRINGS = "org.apache.kafka.connect.storage.StringConverter"
BYTES = "org.apache.kafka.connect.converters.ByteArrayConverter"
CONNECT_JVM = ("-Xms256M", "-Xmx2G")


def loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def topic_count(bootstrap: str, topic: str) -> int:
    """Records in ``topic`` now (the sum of its partitions' end offsets; the topics are fresh)."""
    from confluent_kafka import Consumer, TopicPartition
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-count"})
    try:
        meta = consumer.list_topics(topic, timeout=10).topics.get(topic)
        if meta is None or meta.error is not None:
            return 0
        return sum(consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in meta.partitions)
    finally:
        consumer.close()


def timed(bootstrap: str, topic: str, n: int, start: Callable[[], None], timeout_s: float = 900) -> dict[str, float]:
    """Call ``start`` and time it until ``topic`` holds one record, then ``n``."""
    began = time.monotonic()
    start()
    first = None
    while True:
        got = topic_count(bootstrap, topic)
        now = time.monotonic()
        if first is None and got > 0:
            first = (now, got)
        if got >= n:
            break
        if now - began > timeout_s:
            raise RuntimeError(f"{topic}: {got} of {n} records after {timeout_s}s")
        time.sleep(0.05)
    total = now - began
    out = {"first_record_s": round(first[0] - began, 3), "total_s": round(total, 3),
           "records_per_s": round(n / total)}
    if now > first[0]:
        out["records_per_s_after_first"] = round((n - first[1]) / (now - first[0]))
    return out


def rss_mb(pids: list[int]) -> float:
    import psutil
    total = 0
    for pid in pids:
        try:
            proc = psutil.Process(pid)
            total += proc.memory_info().rss + sum(c.memory_info().rss for c in proc.children(recursive=True))
        except psutil.Error:
            pass
    return round(total / 2**20, 1)


def write_file(path: Path, lines: int) -> None:
    with path.open("w", encoding="utf-8") as f:
        for start in range(0, lines, 100_000):
            f.write("".join(f"line {i:09d} of the benchmark's file, about eighty bytes in all: {'x' * 20}\n"
                            for i in range(start, min(lines, start + 100_000))))


def raw_loop(bootstrap: str, topic: str, path: Path) -> None:
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "batch.size": 1_000_000,
                         "queue.buffering.max.messages": 2_000_000, "enable.idempotence": True})
    with path.open("rb") as f:
        for line in f:
            while True:
                try:
                    producer.produce(topic, line.rstrip(b"\n"))
                    break
                except BufferError:
                    producer.poll(0.1)
    producer.flush()


def hand_written(spark: Any, bootstrap: str, topic: str, directory: Path, work: Path) -> None:
    query = (spark.readStream.text(str(directory)).selectExpr("value")
             .writeStream.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("topic", topic)
             .option("checkpointLocation", str(work / f"ck-{topic}")).trigger(availableNow=True).start())
    query.awaitTermination()


def fill(bootstrap: str, topic: str, records: int, partitions: int) -> None:
    from confluent_kafka import Producer
    from tests.kafka_helpers import create_topic
    create_topic(bootstrap, topic, partitions)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "batch.size": 1_000_000,
                         "queue.buffering.max.messages": 2_000_000})
    value = b"v" * 100
    for i in range(records):
        while True:
            try:
                producer.produce(topic, value, key=str(i).encode(), partition=i % partitions)
                break
            except BufferError:
                producer.poll(0.1)
    producer.flush()


def mirror_config(bootstrap: str, topic: str, alias: str) -> dict[str, str]:
    """MirrorSource copying ``topic`` into ``ALIAS.topic`` on the same broker (its default replication policy)."""
    return {"connector.class": MIRROR_SOURCE, "tasks.max": "2", "source.cluster.alias": alias,
            "target.cluster.alias": "dst", "source.cluster.bootstrap.servers": bootstrap,
            "target.cluster.bootstrap.servers": bootstrap, "topics": topic, "replication.factor": "1",
            "heartbeats.replication.enabled": "false", "sync.topic.acls.enabled": "false",
            "sync.topic.configs.enabled": "false", "emit.offset-syncs.enabled": "false",
            "refresh.topics.interval.seconds": "1", "key.converter": BYTES, "value.converter": BYTES,
            "header.converter": BYTES}


def warm_up(bootstrap: str, name: str, path: Path, create: Callable[[dict[str, str]], None],
            delete: Callable[[], None]) -> None:
    """Run a 100-line FileStreamSource to completion on a worker, then delete it."""
    from tests.kafka_helpers import create_topic
    topic = f"{name}-warm"
    create_topic(bootstrap, topic)
    timed(bootstrap, topic, 100, lambda: create({"connector.class": FILE_SOURCE, "file": str(path),
                                                  "topic": topic, "value.converter": STRINGS}))
    delete()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    from bench.measure import driver_memory
    from sparkcat.bootstrap import Driver
    from sparkcat.config.worker import WorkerConfig
    from tests.broker import KafkaBroker
    from tests.connect_worker import ConnectWorker
    from tests.java_plugins import connect_file_plugin, connect_mirror_plugin
    from tests.kafka_helpers import create_topic
    from tests.spark_fixture import make_spark

    work = Path(tempfile.mkdtemp(prefix="sparkcat-bench-java-"))
    data = work / "data"
    data.mkdir()
    source = data / "lines.txt"
    write_file(source, args.lines)
    warm = work / "warm.txt"
    write_file(warm, 100)
    plugins = connect_mirror_plugin(connect_file_plugin(work / "plugins"))
    results: dict[str, Any] = {"command": " ".join(["python3", "bench/java_connectors.py", *sys.argv[1:]]),
                               "lines": args.lines, "records": args.records, "load_before": loadavg()}
    started = time.monotonic()
    with KafkaBroker(work / "broker") as broker:
        b = broker.bootstrap
        name = f"b{uuid.uuid4().hex[:6]}"
        for t in ("raw", "pyspark", "connect", "sparkcat", "sparkcat_eos"):
            create_topic(b, f"{name}-file-{t}")
        fill(b, f"{name}-m", args.records, 2)

        results["file_raw"] = timed(b, f"{name}-file-raw", args.lines, lambda: raw_loop(b, f"{name}-file-raw", source))

        spark = make_spark("local[2]")
        results["file_pyspark"] = timed(b, f"{name}-file-pyspark", args.lines,
                                        lambda: hand_written(spark, b, f"{name}-file-pyspark", data, work))

        with ConnectWorker(b, f"{name}-connect", settings={"plugin.path": str(plugins)}, log_dir=work / "connect",
                           jvm_options=CONNECT_JVM) as connect:
            warm_up(b, f"{name}-connect", warm,
                    lambda c: connect.request("POST", "/connectors", {"name": "warm", "config": c}),
                    lambda: connect.request("DELETE", "/connectors/warm"))
            before = rss_mb([connect.pid])
            results["file_connect"] = timed(b, f"{name}-file-connect", args.lines, lambda: connect.request(
                "POST", "/connectors", {"name": "file", "config": {
                    "connector.class": FILE_SOURCE, "file": str(source), "topic": f"{name}-file-connect",
                    "value.converter": STRINGS}}))
            results["file_connect"]["memory_mb"] = round(rss_mb([connect.pid]) - before, 1)
            connect.request("DELETE", "/connectors/file")
            before = rss_mb([connect.pid])
            results["mirror_connect"] = timed(b, f"connect.{name}-m", args.records, lambda: connect.request(
                "POST", "/connectors", {"name": "mirror", "config": mirror_config(b, f"{name}-m", "connect")}))
            results["mirror_connect"]["memory_mb"] = round(rss_mb([connect.pid]) - before, 1)
            connect.request("DELETE", "/connectors/mirror")

        for eos, label in (("disabled", "sparkcat"), ("enabled", "sparkcat_eos")):
            worker = WorkerConfig(state_dir=str(work / f"state-{label}"), bootstrap_servers=b,
                                  group_id=f"{name}-{label}", config_topic=f"{name}-{label}-configs",
                                  offset_topic=f"{name}-{label}-offsets", status_topic=f"{name}-{label}-status",
                                  exactly_once_source_support=eos, plugin_path=[str(plugins)],
                                  plugin_discovery="service_load")
            driver = Driver(spark, worker, rest=False, watch_pipelines=False)
            driver.start()
            warm_up(b, f"{name}-{label}", warm, lambda c: driver.herder.put_connector_config("warm", c),
                    lambda: driver.herder.delete_connector("warm"))
            broker_pids = {p.pid for p in broker._procs}
            before = driver_memory(broker_pids)["total_rss_mb"]
            topic = f"{name}-file-{label}"
            results[f"file_{label}"] = timed(b, topic, args.lines, lambda: driver.herder.put_connector_config(
                "file", {"connector.class": FILE_SOURCE, "file": str(source), "topic": topic,
                         "value.converter": STRINGS}))
            after = driver_memory(broker_pids)["total_rss_mb"]
            results[f"file_{label}"]["memory_mb"] = round(after - before, 1)
            if label == "sparkcat":
                results["mirror_sparkcat"] = timed(b, f"sparkcat.{name}-m", args.records,
                                                   lambda: driver.herder.put_connector_config(
                                                       "mirror", mirror_config(b, f"{name}-m", "sparkcat")))
                results["mirror_sparkcat"]["memory_mb"] = round(driver_memory(broker_pids)["total_rss_mb"] - after, 1)
            driver.stop()
        spark.stop()
    results["elapsed_s"] = round(time.monotonic() - started)
    results["load_after"] = loadavg()
    text = json.dumps(results, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
