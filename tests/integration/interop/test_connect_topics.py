"""sparkcat and a real Kafka Connect worker on the same internal topics, each direction checked by the other runtime.

Connect creates its offsets topic with 25 partitions and its status topic with 5; sparkcat must find
Connect's records there and write its own where Connect's producer would, and the task configs it
commits must be ones Connect can run (``task.class``).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sparkcat.bootstrap import Driver
from sparkcat.config.worker import WorkerConfig
from tests.connect_worker import ConnectWorker
from tests.kafka_helpers import create_topic, read_topic, wait_until

pytestmark = pytest.mark.integration

FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
STRING = "org.apache.kafka.connect.storage.StringConverter"


def shared_topics(name: str) -> dict[str, str]:
    """Connect's worker properties naming the topics sparkcat's worker config below uses."""
    return {"config.storage.topic": f"{name}-configs", "offset.storage.topic": f"{name}-offsets",
            "status.storage.topic": f"{name}-status"}


def sparkcat_worker(bootstrap: str, tmp_path: Path, name: str) -> WorkerConfig:
    return WorkerConfig(state_dir=str(tmp_path / "state"), bootstrap_servers=bootstrap,
                        config_topic=f"{name}-configs", offset_topic=f"{name}-offsets",
                        status_topic=f"{name}-status", file_allowed_dirs=[str(tmp_path)])


def file_source(path: Path, topic: str) -> dict[str, str]:
    return {"connector.class": FILE_SOURCE, "tasks.max": "1", "file": str(path), "topic": topic,
            "value.converter": STRING, "key.converter": STRING}


def values(bootstrap: str, topic: str) -> list[str]:
    return [v.decode() for _, _, _, v in read_topic(bootstrap, topic)]


def write_lines(path: Path, lines: list[str]) -> None:
    with path.open("a") as f:
        f.write("".join(f"{line}\n" for line in lines))


def test_sparkcat_takes_over_what_connect_wrote(broker, spark, tmp_path, unique_name):
    """Connect runs a FileStreamSource and stops; sparkcat on Connect's topics continues from Connect's offset."""
    source, topic = tmp_path / "in.txt", f"{unique_name}-lines"
    create_topic(broker.bootstrap, topic)
    first = [f"line {i}" for i in range(300)]
    write_lines(source, first)
    with ConnectWorker(broker.bootstrap, unique_name, shared_topics(unique_name), tmp_path / "connect") as connect:
        connect.request("POST", "/connectors", {"name": "fs", "config": file_source(source, topic)})
        size = os.path.getsize(source)
        connect.wait_for(lambda: [o for o in connect.request("GET", "/connectors/fs/offsets")["offsets"]
                                  if o["offset"].get("position") == size], "offset at the end of the file")
        assert values(broker.bootstrap, topic) == first
    # Connect's layout, which sparkcat must read: offsets over 25 partitions, status over 5
    from confluent_kafka.admin import AdminClient
    meta = AdminClient({"bootstrap.servers": broker.bootstrap}).list_topics(timeout=10).topics
    assert (len(meta[f"{unique_name}-offsets"].partitions), len(meta[f"{unique_name}-status"].partitions)) == (25, 5)

    later = [f"later {i}" for i in range(100)]
    write_lines(source, later)
    with Driver(spark, sparkcat_worker(broker.bootstrap, tmp_path, unique_name), rest=False,
                watch_pipelines=False) as driver:
        herder = driver.herder
        assert herder.connectors() == ["fs"]
        wait_until(lambda: values(broker.bootstrap, topic) == first + later, timeout_s=120,
                   message="sparkcat to append exactly the lines after Connect's offset")
        wait_until(lambda: herder.connector_status("fs")["tasks"][0]["state"] == "RUNNING", timeout_s=30,
                   message="task RUNNING in sparkcat's status")
        assert [o for _, o in herder.connector_offsets("fs")] == [{"position": os.path.getsize(source)}]


def test_connect_takes_over_what_sparkcat_wrote(broker, spark, tmp_path, unique_name):
    """sparkcat runs a FileStreamSource on topics it creates; a Connect worker on them runs its task from sparkcat's offset."""
    source, topic = tmp_path / "in.txt", f"{unique_name}-lines"
    create_topic(broker.bootstrap, topic)
    first = [f"line {i}" for i in range(300)]
    write_lines(source, first)
    with Driver(spark, sparkcat_worker(broker.bootstrap, tmp_path, unique_name), rest=False,
                watch_pipelines=False) as driver:
        driver.herder.put_connector_config("fs", file_source(source, topic))
        size = os.path.getsize(source)
        wait_until(lambda: [o for _, o in driver.herder.connector_offsets("fs")] == [{"position": size}],
                   timeout_s=120, message="sparkcat's offset at the end of the file")
        assert values(broker.bootstrap, topic) == first

    later = [f"later {i}" for i in range(100)]
    write_lines(source, later)
    with ConnectWorker(broker.bootstrap, unique_name, shared_topics(unique_name), tmp_path / "connect") as connect:
        assert connect.request("GET", "/connectors") == ["fs"]
        tasks = connect.request("GET", "/connectors/fs/tasks")
        assert [t["config"]["task.class"] for t in tasks] == ["org.apache.kafka.connect.file.FileStreamSourceTask"]
        # Connect reads sparkcat's offset from the 25-partition offsets topic ...
        assert connect.request("GET", "/connectors/fs/offsets")["offsets"] == [
            {"partition": {"filename": str(source)}, "offset": {"position": size}}]
        # ... and its task appends exactly the lines after it
        connect.wait_for(lambda: values(broker.bootstrap, topic) == first + later, "Connect to append the new lines")
        status = connect.wait_for(lambda: (s := connect.request("GET", "/connectors/fs/status"))["tasks"]
                                  and s["tasks"][0]["state"] == "RUNNING" and s, "task RUNNING in Connect")
        assert status["tasks"][0]["worker_id"] == f"127.0.0.1:{connect.port}"


def test_a_file_sink_moves_connect_to_sparkcat_and_back_through_group_connect_name(broker, spark, tmp_path, unique_name):
    """Sink positions live in consumer group connect-NAME: each runtime continues where the other stopped."""
    from tests.kafka_helpers import produce

    topic, out = f"{unique_name}-in", tmp_path / "out.txt"
    create_topic(broker.bootstrap, topic, partitions=2)
    config = {"connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector", "tasks.max": "1",
              "file": str(out), "topics": topic, "value.converter": STRING, "key.converter": STRING}
    sent: list[str] = []

    def send(n: int) -> None:
        batch = [f"r{len(sent) + i}" for i in range(n)]
        produce(broker.bootstrap, topic, [v.encode() for v in batch])
        sent.extend(batch)

    def connect_offsets(connect: ConnectWorker) -> int:
        return sum(o["offset"]["kafka_offset"] for o in connect.request("GET", "/connectors/sink/offsets")["offsets"])

    send(100)
    with ConnectWorker(broker.bootstrap, unique_name, shared_topics(unique_name), tmp_path / "c1") as connect:
        connect.request("POST", "/connectors", {"name": "sink", "config": config})
        connect.wait_for(lambda: connect_offsets(connect) == 100, "Connect's sink to commit 100 records")
    assert sorted(out.read_text().splitlines()) == sorted(sent)

    send(50)
    with Driver(spark, sparkcat_worker(broker.bootstrap, tmp_path, unique_name), rest=False,
                watch_pipelines=False) as driver:
        wait_until(lambda: sorted(out.read_text().splitlines()) == sorted(sent), timeout_s=120,
                   message="sparkcat to write exactly the 50 records after Connect's group position")
        wait_until(lambda: sum(o["kafka_offset"] for _, o in driver.herder.connector_offsets("sink")) == 150,
                   timeout_s=30, message="sparkcat's positions")
        # KIP-558 active topics: Connect's record (5-partition status topic) read; reset; recorded again on use
        assert driver.herder.active_topics("sink") == [topic]
        driver.herder.reset_connector_active_topics("sink")
        assert driver.herder.active_topics("sink") == []
        send(10)
        wait_until(lambda: driver.herder.active_topics("sink") == [topic], timeout_s=60,
                   message="the topic recorded again by sparkcat")

    send(30)
    with ConnectWorker(broker.bootstrap, unique_name, shared_topics(unique_name), tmp_path / "c2") as connect:
        # Connect reads the positions sparkcat committed to connect-sink, and goes on from them
        connect.wait_for(lambda: connect_offsets(connect) == 190, "Connect's sink to reach 190 records")
        connect.wait_for(lambda: sorted(out.read_text().splitlines()) == sorted(sent), "the last 30 in the file")
        # Connect's reset tombstones sparkcat's record where Connect's producer puts that key
        connect.request("PUT", "/connectors/sink/topics/reset")
        connect.wait_for(lambda: connect.request("GET", "/connectors/sink/topics") == {"sink": {"topics": []}},
                         "Connect's topic reset")
    assert len(out.read_text().splitlines()) == 190  # no record twice
